package lsm

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kuradb/kura/internal/lowprio"
)

// pebbleLogger sends pebble's log lines to slog. Pebble's default logger writes to the
// standard library's log (stderr), which is noise in tests and bypasses the node's logging.
type pebbleLogger struct{ l *slog.Logger }

var _ pebble.Logger = pebbleLogger{}

func (p pebbleLogger) log(level slog.Level, format string, args []any) {
	if p.l.Enabled(context.Background(), level) {
		p.l.Log(context.Background(), level, fmt.Sprintf(format, args...), "component", "pebble")
	}
}

// Infof logs at slog.LevelInfo.
func (p pebbleLogger) Infof(format string, args ...any) { p.log(slog.LevelInfo, format, args) }

// Errorf logs at slog.LevelError.
func (p pebbleLogger) Errorf(format string, args ...any) { p.log(slog.LevelError, format, args) }

// Fatalf logs at slog.LevelError and panics. Pebble calls it for failures it cannot
// recover from, such as a failed WAL write or fsync, and carries on as if it had succeeded
// when Fatalf returns (db.go applyInternal); returning would acknowledge a lost write.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "component", "pebble", "fatal", true)
	panic("lsm: pebble fatal error: " + msg)
}

// eventListener reports pebble events an operator should see. Unset hooks are filled by
// pebble with no-ops, except DataCorruption, whose default calls Fatalf: corruption found in
// a background job is logged here and reads of the damaged data return engine.ErrCorrupt.
func eventListener(l *slog.Logger, lowPriorityFlushes bool) *pebble.EventListener {
	attr := slog.String("component", "pebble")
	el := &pebble.EventListener{
		BackgroundError: func(err error) {
			l.Error("pebble background error", attr, slog.Any("err", err))
		},
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			l.Error("pebble data corruption", attr, slog.String("info", info.String()))
		},
		DiskSlow: func(info pebble.DiskSlowInfo) {
			l.Warn("pebble disk slow", attr, slog.String("info", info.String()))
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			l.Warn("pebble write stall", attr, slog.String("reason", info.Reason))
		},
		WriteStallEnd: func() { l.Info("pebble write stall ended", attr) },
	}
	if lowPriorityFlushes {
		// Pebble runs each flush on a goroutine of its own (DB.flush), which calls
		// FlushBegin before its work: its thread is lowered, and ends with it.
		el.FlushBegin = func(pebble.FlushInfo) { lowprio.LowerThisThread() }
	}
	return el
}
