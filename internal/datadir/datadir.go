// Package datadir is a node's data directory: it creates and locks it, and keeps in
// NODE.json who the node is (its ID, for the directory's life) and what the directory
// holds (the engine, and the directories outside it that hold the engine's rows), so that
// a node never opens one engine's files with another engine nor loses rows kept
// elsewhere.
package datadir

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

// Errors Open returns when a data directory cannot be used.
var (
	// ErrUnusable means the data directory cannot be created, read or written.
	ErrUnusable = errors.New("datadir: data directory unusable")
	// ErrEngineMismatch means the data directory holds another engine's data.
	ErrEngineMismatch = errors.New("datadir: data directory holds another engine's data")
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
	Tiers *Tiers `json:"tiers,omitempty"`
}

// Tiers are the directories outside the data directory that hold the engine's rows:
// a tiered engine's (FastDir, SlowDir) or an lsm engine's second directory, as absolute
// paths. An empty SlowDir is the engine's directory inside the data directory.
type Tiers struct {
	FastDir         string `json:"fast_dir,omitempty"`
	SlowDir         string `json:"slow_dir,omitempty"`
	SecondDir       string `json:"lsm_second_dir,omitempty"`
	SecondDirPolicy string `json:"lsm_second_dir_policy,omitempty"`
}

// TiersOf returns the absolute form of the directories cfg configures outside the data
// directory, nil when there are none.
func TiersOf(cfg config.Config) (*Tiers, error) {
	if cfg.FastDir == "" && cfg.LSMSecondDir == "" {
		return nil, nil
	}
	t := &Tiers{SecondDirPolicy: cfg.LSMSecondDirPolicy}
	for _, p := range []struct {
		dst *string
		src string
	}{{&t.FastDir, cfg.FastDir}, {&t.SlowDir, cfg.SlowDir}, {&t.SecondDir, cfg.LSMSecondDir}} {
		if p.src == "" {
			continue
		}
		abs, err := filepath.Abs(p.src)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnusable, err)
		}
		*p.dst = abs
	}
	return t, nil
}

// String renders the directories as the flags that name them.
func (t *Tiers) String() string {
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

// Dir is a locked data directory. Layout:
//
//	<dir>/LOCK        held (flock) while a node runs; a second node gets ErrLocked
//	<dir>/NODE.json   format version, node ID and engine name
//	<dir>/<engine>/   the engine's own files
type Dir struct {
	path string
	lock *engine.DirLock
	id   string // the node's ID, from NODE.json
}

// Open creates (if needed), locks and checks dir for a node running engineName, split over
// tiers if not nil; now is when a new directory is created.
func Open(dir, engineName string, tiers *Tiers, now time.Time) (*Dir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnusable, dir, err)
	}
	if err := probeWritable(dir); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnusable, dir, err)
	}
	lock, err := engine.LockDir(dir, "LOCK")
	if err != nil {
		return nil, err
	}
	d := &Dir{path: dir, lock: lock}
	if err := d.checkMeta(engineName, tiers, now); err != nil {
		lock.Unlock()
		return nil, err
	}
	return d, nil
}

func (d *Dir) checkMeta(engineName string, tiers *Tiers, now time.Time) error {
	path := filepath.Join(d.path, metaFile)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		d.id = newNodeID()
		return WriteFileAtomic(path, mustJSON(dirMeta{Format: 1, ID: d.id, Engine: engineName, Created: now.UTC(), Tiers: tiers}))
	case err != nil:
		return fmt.Errorf("%w: %w", ErrUnusable, err)
	}
	var m dirMeta
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("%w: %s is damaged: %w", ErrUnusable, path, err)
	}
	if m.Format != 1 {
		return fmt.Errorf("%w: %s has format %d; this kura reads format 1", ErrUnusable, path, m.Format)
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
		if err := WriteFileAtomic(path, mustJSON(m)); err != nil {
			return err
		}
	}
	d.id = m.ID
	return nil
}

// ID is the node's ID, generated when the directory was created.
func (d *Dir) ID() string { return d.id }

// Path is the directory.
func (d *Dir) Path() string { return d.path }

// EngineDir is where an engine called name keeps its files.
func (d *Dir) EngineDir(name string) string { return filepath.Join(d.path, name) }

// Close unlocks the directory.
func (d *Dir) Close() error { return d.lock.Unlock() }

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

// WriteFileAtomic replaces path with data, durably (engine.WriteFileAtomic).
func WriteFileAtomic(path string, data []byte) error {
	if err := engine.WriteFileAtomic(path, data); err != nil {
		return fmt.Errorf("%w: write %s: %w", ErrUnusable, path, err)
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

// HintsDir returns where the hint store of the node whose data directory is dataDir
// lives: configured (--hints-dir), or hints/ in the data directory when configured is
// empty. A node that kept hints in its data directory and is then given another
// directory refuses to start rather than leave them behind: they are writes some replica
// has not had.
func HintsDir(dataDir, configured string) (string, error) {
	def := filepath.Join(dataDir, "hints")
	if configured == "" || filepath.Clean(configured) == def {
		return def, nil
	}
	if entries, err := os.ReadDir(def); err == nil && len(entries) > 0 {
		return "", fmt.Errorf("datadir: --hints-dir is %s, but %s holds a hint store: move it there (with the node stopped) or remove it", configured, def)
	}
	return configured, nil
}
