package node

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/config"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/lsm"
)

// Errors a node returns at start when its data directory cannot be used.
var (
	// ErrDataDir means the data directory cannot be created, read or written.
	ErrDataDir = errors.New("node: data directory unusable")
	// ErrEngineMismatch means the data directory holds another engine's data.
	ErrEngineMismatch = errors.New("node: data directory holds another engine's data")
)

// metaFile records what a data directory holds, so that a node never opens one engine's
// files with another engine, and who the node is: its ID is generated when the directory
// is created and kept for the directory's life, so a restarted node is the same cluster
// member (a new directory is a new node).
const metaFile = "NODE.json"

type dirMeta struct {
	Format  int       `json:"format"`
	ID      string    `json:"id"`
	Engine  string    `json:"engine"`
	Created time.Time `json:"created"`
	// Tiers, for a tiered engine, are its directories: its rows live there too, so a
	// node must not open the data directory without them.
	Tiers *dirTiers `json:"tiers,omitempty"`
}

// dirTiers are the directories outside the data directory that hold the engine's rows:
// a tiered engine's (FastDir, SlowDir) or an lsm engine's second directory, as absolute
// paths. An empty SlowDir is the engine's directory inside the data directory.
type dirTiers struct {
	FastDir         string `json:"fast_dir,omitempty"`
	SlowDir         string `json:"slow_dir,omitempty"`
	SecondDir       string `json:"lsm_second_dir,omitempty"`
	SecondDirPolicy string `json:"lsm_second_dir_policy,omitempty"`
}

// newDirTiers returns the absolute form of the configured directories, nil when there are
// none.
func newDirTiers(cfg config.Config) (*dirTiers, error) {
	if cfg.FastDir == "" && cfg.LSMSecondDir == "" {
		return nil, nil
	}
	t := &dirTiers{SecondDirPolicy: cfg.LSMSecondDirPolicy}
	for _, p := range []struct {
		dst *string
		src string
	}{{&t.FastDir, cfg.FastDir}, {&t.SlowDir, cfg.SlowDir}, {&t.SecondDir, cfg.LSMSecondDir}} {
		if p.src == "" {
			continue
		}
		abs, err := filepath.Abs(p.src)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrDataDir, err)
		}
		*p.dst = abs
	}
	return t, nil
}

// String renders the directories as the flags that name them.
func (t *dirTiers) String() string {
	if t == nil {
		return "no directory outside it"
	}
	var parts []string
	for _, f := range []struct{ flag, v string }{{"--fast-dir", t.FastDir}, {"--slow-dir", t.SlowDir},
		{"--lsm-second-dir", t.SecondDir}, {"--lsm-second-dir-policy", t.SecondDirPolicy}} {
		if f.v != "" {
			parts = append(parts, f.flag+" "+f.v)
		}
	}
	return strings.Join(parts, " ")
}

// newNodeID returns a random 128-bit node ID in hex.
func newNodeID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux (Go 1.24+: it panics instead)
	return hex.EncodeToString(b[:])
}

// dataDir is a locked data directory. Layout:
//
//	<dir>/LOCK        held (flock) while a node runs; a second node gets ErrLocked
//	<dir>/NODE.json   format version, node ID and engine name
//	<dir>/<engine>/   the engine's own files
type dataDir struct {
	path string
	lock *engine.DirLock
	id   string // the node's ID, from NODE.json
}

// openDataDir creates (if needed), locks and checks dir for a node running engineName,
// split over tiers if not nil.
func openDataDir(dir, engineName string, tiers *dirTiers, now time.Time) (*dataDir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDataDir, dir, err)
	}
	if err := probeWritable(dir); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDataDir, dir, err)
	}
	lock, err := engine.LockDir(dir, "LOCK")
	if err != nil {
		return nil, err
	}
	d := &dataDir{path: dir, lock: lock}
	if err := d.checkMeta(engineName, tiers, now); err != nil {
		lock.Unlock()
		return nil, err
	}
	return d, nil
}

func (d *dataDir) checkMeta(engineName string, tiers *dirTiers, now time.Time) error {
	path := filepath.Join(d.path, metaFile)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		d.id = newNodeID()
		return writeFileAtomic(path, mustJSON(dirMeta{Format: 1, ID: d.id, Engine: engineName, Created: now.UTC(), Tiers: tiers}))
	case err != nil:
		return fmt.Errorf("%w: %w", ErrDataDir, err)
	}
	var m dirMeta
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("%w: %s is damaged: %w", ErrDataDir, path, err)
	}
	if m.Format != 1 {
		return fmt.Errorf("%w: %s has format %d; this kura reads format 1", ErrDataDir, path, m.Format)
	}
	if m.Engine != engineName {
		return fmt.Errorf("%w: %s holds %s data, not %s; start with --engine %s or use another --data-dir",
			ErrEngineMismatch, d.path, m.Engine, engineName, m.Engine)
	}
	rewrite := false
	switch {
	case m.Tiers == nil && tiers != nil && tiers.SlowDir == "" && tiers.SecondDir == "":
		// A plain engine becomes the slow tier where it is: every row starts there.
		m.Tiers, rewrite = tiers, true
	case m.Tiers == nil && tiers != nil && tiers.FastDir == "" && tiers.SlowDir == "" &&
		tiers.SecondDirPolicy == string(lsm.FreeSpace):
		// A plain lsm store gains a second directory (a second device added to the node):
		// its tables stay where they are, and the free-space rule places each new one.
		// Once it has, rows live in both, so the pair is recorded and required from now on.
		m.Tiers, rewrite = tiers, true
	case (m.Tiers == nil) != (tiers == nil) || (tiers != nil && *m.Tiers != *tiers):
		return fmt.Errorf("%w: %s was written with %s, not %s; its rows live in those directories, so start with the same ones",
			ErrEngineMismatch, d.path, m.Tiers, tiers)
	}
	if m.ID == "" { // written before nodes had IDs: give this one its ID now, once
		m.ID, rewrite = newNodeID(), true
	}
	if rewrite {
		if err := writeFileAtomic(path, mustJSON(m)); err != nil {
			return err
		}
	}
	d.id = m.ID
	return nil
}

// engineDir is where the engine keeps its files.
func (d *dataDir) engineDir(name string) string { return filepath.Join(d.path, name) }

func (d *dataDir) close() error { return d.lock.Unlock() }

// probeWritable fails early, with the OS's reason, when dir cannot take a new file, rather
// than letting an engine fail later with a less clear message.
func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

func writeFileAtomic(path string, data []byte) error {
	if err := engine.WriteFileAtomic(path, data); err != nil {
		return fmt.Errorf("%w: write %s: %w", ErrDataDir, path, err)
	}
	return nil
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err) // only called with plain structs
	}
	return append(b, '\n')
}
