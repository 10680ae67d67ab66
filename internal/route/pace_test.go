package route

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestPaceTranscripts drives one Pace through testdata/pace.txt in virtual time:
//
//	pace target=<duration> [increase=N] [max-in-flight=N]   a new pace
//	send n=<count> at=<time>       offer n writes, sending each only while Ready
//	answered [n=<count>] at=<time> took=<duration> [failed]
//	congested at=<time>            a sign of congestion from elsewhere
//
// Times are since the transcript's start; each command prints the pace's state.
func TestPaceTranscripts(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	var p *Pace
	state := func(at time.Duration) string {
		room := p.Room(start.Add(at)) // first: the pace starts on first use
		return fmt.Sprintf("rate %.1f/s, in flight %d, room %d\n", p.Rate(), p.InFlight(), room)
	}
	datadriven.RunTest(t, "testdata/pace.txt", func(t *testing.T, td *datadriven.TestData) string {
		arg := func(key string) string {
			for _, a := range td.CmdArgs {
				if a.Key == key && len(a.Vals) > 0 {
					return a.Vals[0]
				}
			}
			return ""
		}
		dur := func(key string) time.Duration {
			d, err := time.ParseDuration(arg(key))
			if err != nil {
				td.Fatalf(t, "%s: %v", key, err)
			}
			return d
		}
		count := func(key string, def int) int {
			if arg(key) == "" {
				return def
			}
			n, err := strconv.Atoi(arg(key))
			if err != nil {
				td.Fatalf(t, "%s: %v", key, err)
			}
			return n
		}
		switch td.Cmd {
		case "pace":
			p = &Pace{Target: dur("target"), MaxInFlight: count("max-in-flight", 0)}
			if v := arg("increase"); v != "" {
				var err error
				if p.Increase, err = strconv.ParseFloat(v, 64); err != nil {
					td.Fatalf(t, "increase: %v", err)
				}
			}
			return state(0)
		case "send":
			at, sent := dur("at"), 0
			for range count("n", 1) {
				if !p.Ready(start.Add(at)) {
					break
				}
				p.Sent(1, start.Add(at))
				sent++
			}
			return fmt.Sprintf("sent %d\n%s", sent, state(at))
		case "answered":
			at := dur("at")
			for range count("n", 1) {
				p.Answered(dur("took"), td.HasArg("failed"), start.Add(at))
			}
			return state(at)
		case "congested":
			at := dur("at")
			p.Congested(start.Add(at))
			return state(at)
		}
		td.Fatalf(t, "unknown command %q", td.Cmd)
		return ""
	})
}
