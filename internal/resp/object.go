package resp

import (
	"github.com/kuradb/kura/internal/row"
)

// OBJECT ENCODING and MEMORY USAGE describe a key for tools and client libraries that ask.
// kura stores every key as a row (see doc.go), so both answer in Redis's terms from the
// value: ENCODING names what Redis would use for it, USAGE gives the row's encoded size.

// Redis's thresholds for its compact encodings (hash-max-listpack-entries and
// hash-max-listpack-value, and the longest embedded string).
const (
	listpackMaxEntries = 128
	listpackMaxValue   = 64
	embstrMaxLen       = 44
)

var objectSubs = []subcommand{
	{"encoding", 3, objectEncoding},
	{"help", 2, func(_ *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
		return appendHelp(dst,
			"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"ENCODING <key>",
			"    Return the kind of internal representation Redis would use to store the value",
			"    associated with a <key>.",
			"HELP",
			"    Prints this help.")
	}},
}

// OBJECT subcommand ...
func cmdObject(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return dispatchSub(h, dst, args, s, "object", objectSubs)
}

// OBJECT ENCODING key: int, embstr or raw for a string, listpack or hashtable for a hash,
// by Redis's rules for the value as it is now; nil for a missing key.
func objectEncoding(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	dst, ok := h.checkReadKey(dst, args[2])
	if !ok {
		return dst
	}
	r, err := h.read(s, args[2])
	if err != nil {
		return h.appendStoreErr(dst, err)
	}
	now := h.now()
	switch kindOf(&r, now) {
	case kindString:
		v, _ := stringValue(&r, now)
		return appendBulkString(dst, stringEncoding(v))
	case kindHash:
		return appendBulkString(dst, hashEncoding(visibleFields(&r, now)))
	}
	return s.proto.appendNull(dst)
}

func stringEncoding(v []byte) string {
	if _, isInt := parseInt(v); isInt {
		return "int"
	}
	if len(v) <= embstrMaxLen {
		return "embstr"
	}
	return "raw"
}

func hashEncoding(fields []row.Cell) string {
	if len(fields) > listpackMaxEntries {
		return "hashtable"
	}
	for _, c := range fields {
		if len(c.Name)-1 > listpackMaxValue || len(c.Value) > listpackMaxValue {
			return "hashtable"
		}
	}
	return "listpack"
}

var memorySubs = []subcommand{
	{"usage", -3, memoryUsage},
	{"help", 2, func(_ *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
		return appendHelp(dst,
			"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"USAGE <key> [SAMPLES <count>]",
			"    Return the bytes the row of <key> takes in kura's encoding (the key, every",
			"    value and their timestamps). SAMPLES is accepted and ignored.",
			"HELP",
			"    Prints this help.")
	}},
}

// MEMORY subcommand ...
func cmdMemory(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return dispatchSub(h, dst, args, s, "memory", memorySubs)
}

// MEMORY USAGE key [SAMPLES count]: the size of the key plus its row's encoding as stored
// (row.EncodedSize: values, column names, timestamps, tombstones not yet purged), or nil
// for a missing key. Redis counts its own allocations instead; the figures differ.
func memoryUsage(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	for j := 3; j < len(args); j += 2 {
		if !equalFold(args[j], "samples") || j+1 >= len(args) {
			return appendSyntaxErr(dst)
		}
		n, ok := parseInt(args[j+1])
		if !ok {
			return appendNotInt(dst)
		}
		if n < 0 {
			return appendSyntaxErr(dst)
		}
	}
	dst, ok := h.checkReadKey(dst, args[2])
	if !ok {
		return dst
	}
	raw, err := h.readRaw(s, args[2])
	if err != nil {
		return h.appendStoreErr(dst, err)
	}
	now := h.now()
	if folded := fold(raw, now); kindOf(&folded, now) == kindNone {
		return s.proto.appendNull(dst)
	}
	return appendInt(dst, int64(len(args[2])+row.EncodedSize(&raw)))
}
