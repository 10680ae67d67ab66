// Package elastic slows background work (a membership change's streams; later, repair)
// when the CPU it shares with the foreground is saturated, and lets it back up to its
// configured limit when the CPU has room: CockroachDB's elastic CPU admission, reduced
// to one factor. The signal is the Go scheduler's latency (the time a runnable goroutine
// waits for a thread to run it, runtime/metrics "/sched/latencies:seconds"): it rises
// when this process has more runnable work than its threads can run, and can rise when
// the machine's other processes keep those threads from a core (a goroutine queued
// behind a thread that is not running waits too). It does not see a goroutine that is
// running on a thread the kernel has preempted.
//
// Controller is the deterministic core: additive increase, multiplicative decrease of a
// factor between Config.Floor and 1, from one latency observation per tick. Sampler is
// the driver's half: it reads the runtime's histogram and returns a quantile of the
// latencies since its last call.
package elastic

import (
	"math"
	"time"
)

// Config shapes a Controller. Zero fields take the defaults their comments give.
type Config struct {
	// Target is the scheduler latency the controller holds the observed quantile under.
	// Default 1 ms (CockroachDB's elastic CPU target for the p99).
	Target time.Duration
	// Floor is the smallest factor: background work never falls below this share of its
	// limit, so that it finishes under any foreground load. Default 0.25.
	Floor float64
	// Decrease multiplies the factor on an observation over Target. Default 0.7.
	Decrease float64
	// Increase is added to the factor on an observation at or under Target. Default 0.05:
	// from the floor back to the limit in 15 ticks.
	Increase float64
}

func (c Config) withDefaults() Config {
	if c.Target <= 0 {
		c.Target = time.Millisecond
	}
	if c.Floor <= 0 || c.Floor > 1 {
		c.Floor = 0.25
	}
	if c.Decrease <= 0 || c.Decrease >= 1 {
		c.Decrease = 0.7
	}
	if c.Increase <= 0 {
		c.Increase = 0.05
	}
	return c
}

// Controller holds the factor by which background work's limit is multiplied. Not safe
// for concurrent use: one driver ticks it.
type Controller struct {
	cfg    Config
	factor float64
}

// New returns a controller at factor 1.
func New(cfg Config) *Controller { return &Controller{cfg: cfg.withDefaults(), factor: 1} }

// Observe takes the scheduler latency quantile of the last tick and returns the new
// factor. An observation of 0 or less (no goroutine was scheduled in the tick: an idle
// process) counts as under Target.
func (c *Controller) Observe(latency time.Duration) float64 {
	if latency > c.cfg.Target {
		c.factor = math.Max(c.cfg.Floor, c.factor*c.cfg.Decrease)
	} else {
		c.factor = math.Min(1, c.factor+c.cfg.Increase)
	}
	return c.factor
}

// Factor returns the current factor.
func (c *Controller) Factor() float64 { return c.factor }

// Reset puts the factor back at 1.
func (c *Controller) Reset() { c.factor = 1 }

// Config returns the controller's configuration with its defaults filled.
func (c *Controller) Config() Config { return c.cfg }

// Apply returns limit scaled by factor, at least 1 byte per second; 0 (unlimited) stays
// 0: an unlimited stream has no rate to scale.
func Apply(limit int64, factor float64) int64 {
	if limit <= 0 {
		return 0
	}
	return max(1, int64(float64(limit)*factor))
}
