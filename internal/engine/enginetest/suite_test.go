package enginetest

import (
	"os"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/engine"
)

// flawsEnv tells a re-executed crash child which log engine flaws to build in, since Main
// takes a single Factory.
const flawsEnv = "KURA_ENGINETEST_TEST_FLAWS"

func modelFactory() Factory {
	return Factory{Name: "model", Open: func(_ string, o engine.Options) (engine.Engine, error) { return NewModel(o), nil }}
}

func logFactory(flaws logFlaws) Factory {
	return Factory{Name: "log", Persistent: true, CrashSafe: true,
		Open: func(dir string, o engine.Options) (engine.Engine, error) { return openLogEngine(dir, o, flaws) }}
}

func flawsFromEnv() logFlaws {
	s := os.Getenv(flawsEnv)
	return logFlaws{
		noChecksum:     strings.Contains(s, "no-checksum"),
		ackBeforeWrite: strings.Contains(s, "ack-before-write"),
		forgetOnClose:  strings.Contains(s, "forget-on-close"),
	}
}

func TestMain(m *testing.M) { Main(m, logFactory(flawsFromEnv())) }

func TestModelPassesConformance(t *testing.T) { RunConformance(t, modelFactory()) }

func TestLogEnginePassesConformance(t *testing.T) { RunConformance(t, logFactory(logFlaws{})) }

func TestModelAndLogEngineAgreeInMetamorphic(t *testing.T) {
	RunMetamorphic(t, modelFactory(), logFactory(logFlaws{}))
}

func TestLogEngineSurvivesCrash(t *testing.T) { RunCrash(t, logFactory(logFlaws{})) }

func TestLogEngineDetectsCorruption(t *testing.T) { RunCorruption(t, logFactory(logFlaws{})) }

func TestCrashAndCorruptionSkipVolatileEngines(t *testing.T) {
	for name, run := range map[string]func(*testing.T, Factory){"crash": RunCrash, "corruption": RunCorruption} {
		var sub *testing.T
		t.Run(name, func(t *testing.T) {
			sub = t
			run(t, modelFactory())
		})
		if !sub.Skipped() {
			t.Errorf("%s on the model was not skipped", name)
		}
	}
}

func BenchmarkModel(b *testing.B) { RunBenchmarks(b, modelFactory()) }

func BenchmarkLogEngine(b *testing.B) { RunBenchmarks(b, logFactory(logFlaws{})) }
