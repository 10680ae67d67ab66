package memory

import (
	"path/filepath"
	"time"

	"github.com/kuradb/kura/internal/engine"
)

// Options configure the memory engine. The zero value keeps nothing on disk.
type Options struct {
	// Options are the settings shared by every engine. Only Clock and GracePeriod apply:
	// Durability and SyncInterval are ignored, because nothing is durable between
	// snapshots whatever they say.
	engine.Options

	// SnapshotPath is the file the tree is saved to and loaded from. Empty (the default)
	// means nothing is ever written to disk and every Open starts empty. A relative path is
	// taken relative to Open's dir.
	SnapshotPath string
	// SnapshotInterval is how often a snapshot is written in the background while the
	// engine is open; 0 (the default) means only on Flush and Close. Ignored without
	// SnapshotPath.
	SnapshotInterval time.Duration
}

func (o Options) withDefaults(dir string) Options {
	o.Options = o.Options.WithDefaults()
	if o.SnapshotPath != "" && !filepath.IsAbs(o.SnapshotPath) {
		o.SnapshotPath = filepath.Join(dir, o.SnapshotPath)
	}
	if o.SnapshotInterval < 0 {
		o.SnapshotInterval = 0
	}
	return o
}
