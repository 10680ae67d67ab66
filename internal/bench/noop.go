package bench

import (
	"context"
	"time"
)

// NoopTarget is an in-process target whose operations do nothing but wait Delay. It
// measures the benchmark client itself: what `kura bench` can drive when the server costs
// nothing, to compare with what it measures against a real server.
type NoopTarget struct {
	Delay time.Duration // per operation; 0 returns at once
}

// Name implements Target.
func (t NoopTarget) Name() string { return "noop" }

// Open implements Target.
func (t NoopTarget) Open(context.Context, int, int) (Client, error) { return noopClient(t), nil }

type noopClient NoopTarget

func (c noopClient) wait(ctx context.Context) error {
	if c.Delay > 0 {
		t := time.NewTimer(c.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (c noopClient) Read(ctx context.Context, _ string, _ []string) (bool, error) {
	return true, c.wait(ctx)
}

func (c noopClient) Scan(ctx context.Context, _ string, _ int, _ []string) error {
	return c.wait(ctx)
}

func (c noopClient) Update(ctx context.Context, _ string, _ []Field) error { return c.wait(ctx) }
func (c noopClient) Insert(ctx context.Context, _ string, _ []Field) error { return c.wait(ctx) }
func (c noopClient) Ping(ctx context.Context) error                        { return c.wait(ctx) }
func (c noopClient) Close() error                                          { return nil }
