package lsm

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// syncer fsyncs the WAL every interval in Durability Periodic, where Apply commits with
// pebble.NoSync. It is the lsm engine's equivalent of Cassandra's periodic commit log sync.
type syncer struct {
	db       *DB
	interval time.Duration
	done     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
	syncs    atomic.Int64 // completed syncs, for tests
}

func startSyncer(db *DB, interval time.Duration) *syncer {
	s := &syncer{db: db, interval: interval, done: make(chan struct{})}
	s.wg.Add(1)
	go s.loop()
	return s
}

func (s *syncer) loop() {
	defer s.wg.Done()
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			if err := s.db.syncWAL(); err != nil {
				s.db.opts.Logger.Error("lsm: periodic WAL sync failed",
					slog.String("dir", s.db.dir), slog.Any("err", err))
				continue
			}
			s.syncs.Add(1)
		}
	}
}

// stop ends the loop and waits for it. It is safe on a nil syncer and more than once.
func (s *syncer) stop() {
	if s == nil {
		return
	}
	s.once.Do(func() { close(s.done) })
	s.wg.Wait()
}

// syncWAL makes every write committed so far durable. LogData with pebble.Sync commits an
// empty WAL record through the same pipeline as a synced batch and returns only after the
// WAL writer's fsync that covers it (commit.go prepare: syncWAL waits on the batch's
// commit WaitGroup until the LogWriter's flushLoop has synced). The WAL is one
// append-only file per memtable and rotation syncs the old file, so that fsync covers
// every earlier NoSync write too. CockroachDB syncs its WAL the same way.
func (db *DB) syncWAL() error {
	if err := db.enter("sync"); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	return wrapErr("sync", db.pdb.LogData(nil, pebble.Sync))
}
