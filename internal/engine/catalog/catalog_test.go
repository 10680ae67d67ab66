package catalog_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/catalog"
	"github.com/kuradb/kura/internal/engine/enginetest"
	"github.com/kuradb/kura/internal/ring"
)

func factory(name string) enginetest.Factory {
	return enginetest.Factory{
		Name:       name,
		Persistent: name != "memory",
		CrashSafe:  name != "memory",
		Open: func(dir string, o engine.Options) (engine.Engine, error) {
			return catalog.Open(name, dir, catalog.Options{Options: o})
		},
	}
}

// tieredLSM is the lsm engine split over two directories, as --fast-dir makes it.
func tieredLSM() enginetest.Factory {
	return enginetest.Factory{Name: "lsm-tiered", Persistent: true, CrashSafe: true,
		Open: func(dir string, o engine.Options) (engine.Engine, error) {
			return catalog.Open("lsm", filepath.Join(dir, "slow"), catalog.Options{Options: o,
				Tiers: &catalog.Tiers{FastDir: filepath.Join(dir, "fast")}})
		}}
}

// TestEnginesAgreeWithEachOtherAndTheModel runs one generated operation sequence on all
// three engines (and the tiered lsm) and on the reference model at once: every observable
// result must match.
func TestEnginesAgreeWithEachOtherAndTheModel(t *testing.T) {
	fs := []enginetest.Factory{tieredLSM()}
	for _, name := range catalog.Names {
		fs = append(fs, factory(name))
	}
	enginetest.RunMetamorphic(t, fs...)
}

// memorySnapshot is the memory engine saving a snapshot at Close, so that what
// DeleteRange did is checked after Close and Open too.
func memorySnapshot() enginetest.Factory {
	return enginetest.Factory{Name: "memory-snapshot", Persistent: true,
		Open: func(dir string, o engine.Options) (engine.Engine, error) {
			return catalog.Open("memory", dir, catalog.Options{Options: o, MemorySnapshot: true})
		}}
}

// TestEveryEngineDeletesRanges runs engine.RangeDeleter's checks (bounds, later writes,
// snapshots, errors, row counts, concurrent writes; after Flush and Close+Open) on every
// engine the catalog opens, the tiered lsm and the memory engine with its snapshot
// included.
func TestEveryEngineDeletesRanges(t *testing.T) {
	fs := []enginetest.Factory{tieredLSM(), memorySnapshot()}
	for _, name := range catalog.Names {
		fs = append(fs, factory(name))
	}
	for _, f := range fs {
		t.Run(f.Name, func(t *testing.T) { enginetest.RunDeleteRange(t, f) })
	}
}

func TestOpenedEngineHasTheCatalogsNameAndRole(t *testing.T) {
	for _, name := range catalog.Names {
		e, err := catalog.Open(name, t.TempDir(), catalog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() != name || e.Role() != catalog.Role(name) {
			t.Errorf("%s: opened %s with role %v, catalog says %v", name, e.Name(), e.Role(), catalog.Role(name))
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestUnknownEngineIsInvalid(t *testing.T) {
	if _, err := catalog.Open("rocks", t.TempDir(), catalog.Options{}); !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
	if catalog.Role("rocks") != ring.RoleUnknown {
		t.Fatal("unknown engine has a role")
	}
}

func TestTieredLSMRefusesAWALDirectory(t *testing.T) {
	dir := t.TempDir()
	_, err := catalog.Open("lsm", filepath.Join(dir, "slow"), catalog.Options{LSMWALDir: filepath.Join(dir, "wal"),
		Tiers: &catalog.Tiers{FastDir: filepath.Join(dir, "fast")}})
	if !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("tiered lsm with a WAL directory: %v, want ErrInvalid", err)
	}
}
