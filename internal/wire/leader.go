package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/kuradb/kura/internal/row"
)

// MethodLeader asks a key's leader to run Redis commands on it (LeaderRequest ->
// LeaderResponse): the read-modify-write commands and transactions that run serialized
// per key (see package resp, Leader). A node that predates it answers with an unknown
// method error, which the coordinator reports to its client.
const MethodLeader uint16 = 4

// LeaderVersion is the format of LeaderRequest and LeaderResponse, which carry their own
// version byte (the other messages' Version is not theirs).
const LeaderVersion byte = 1

// Bounds of one LeaderRequest: the commands of one transaction and their arguments.
const (
	MaxLeaderCmds    = 1 << 16
	MaxLeaderArgs    = 1 << 20
	MaxLeaderArgSize = 512 << 20
	maxLevelSize     = 16
	maxWatchDigest   = 64
)

// LeaderRequest carries resp.LeaderRequest between nodes.
type LeaderRequest struct {
	Key   []byte
	Level string
	Proto byte
	Multi bool
	// WatchOnly asks for the key's watch digest instead of running commands.
	WatchOnly bool
	// Watched is the digest WATCH saw; nil when the client did not watch the key.
	Watched []byte
	Cmds    [][][]byte
}

// LeaderResponse is the RESP reply the commands produced, as the client will get it.
type LeaderResponse struct {
	Reply []byte
}

const (
	leaderMulti   byte = 1 << 0
	leaderWatch   byte = 1 << 1
	leaderWatched byte = 1 << 2
)

// AppendLeaderRequest appends m's encoding to dst.
func AppendLeaderRequest(dst []byte, m *LeaderRequest) []byte {
	dst = append(dst, LeaderVersion)
	dst = appendBytes(dst, m.Key)
	dst = appendBytes(dst, []byte(m.Level))
	var flags byte
	if m.Multi {
		flags |= leaderMulti
	}
	if m.WatchOnly {
		flags |= leaderWatch
	}
	if m.Watched != nil {
		flags |= leaderWatched
	}
	dst = append(dst, m.Proto, flags)
	if m.Watched != nil {
		dst = appendBytes(dst, m.Watched)
	}
	dst = binary.AppendUvarint(dst, uint64(len(m.Cmds)))
	for _, args := range m.Cmds {
		dst = binary.AppendUvarint(dst, uint64(len(args)))
		for _, a := range args {
			dst = appendBytes(dst, a)
		}
	}
	return dst
}

// DecodeLeaderRequest parses a LeaderRequest; its byte slices alias b. Commands without
// arguments are corrupt.
func DecodeLeaderRequest(b []byte) (LeaderRequest, error) {
	d, err := newLeaderDecoder(b)
	if err != nil {
		return LeaderRequest{}, err
	}
	var m LeaderRequest
	if m.Key, err = d.bytes(row.MaxKeySize); err != nil {
		return LeaderRequest{}, err
	}
	level, err := d.bytes(maxLevelSize)
	if err != nil {
		return LeaderRequest{}, err
	}
	m.Level = string(level)
	if m.Proto, err = d.byte(); err != nil {
		return LeaderRequest{}, err
	}
	flags, err := d.byte()
	if err != nil {
		return LeaderRequest{}, err
	}
	if flags&^(leaderMulti|leaderWatch|leaderWatched) != 0 {
		return LeaderRequest{}, fmt.Errorf("%w: leader flags %#x", ErrCorrupt, flags)
	}
	m.Multi, m.WatchOnly = flags&leaderMulti != 0, flags&leaderWatch != 0
	if flags&leaderWatched != 0 {
		if m.Watched, err = d.bytes(maxWatchDigest); err != nil {
			return LeaderRequest{}, err
		}
	}
	n, err := d.count(MaxLeaderCmds)
	if err != nil {
		return LeaderRequest{}, err
	}
	if n > len(d.buf) {
		return LeaderRequest{}, fmt.Errorf("%w: %d commands in %d bytes", ErrCorrupt, n, len(d.buf))
	}
	m.Cmds = make([][][]byte, n)
	for i := range m.Cmds {
		argc, err := d.count(MaxLeaderArgs)
		if err != nil {
			return LeaderRequest{}, err
		}
		if argc == 0 || argc > len(d.buf) {
			return LeaderRequest{}, fmt.Errorf("%w: command of %d arguments in %d bytes", ErrCorrupt, argc, len(d.buf))
		}
		args := make([][]byte, argc)
		for j := range args {
			if args[j], err = d.bytes(MaxLeaderArgSize); err != nil {
				return LeaderRequest{}, err
			}
		}
		m.Cmds[i] = args
	}
	return m, d.end()
}

// AppendLeaderResponse appends m's encoding to dst.
func AppendLeaderResponse(dst []byte, m *LeaderResponse) []byte {
	return append(append(dst, LeaderVersion), m.Reply...)
}

// DecodeLeaderResponse parses a LeaderResponse; Reply aliases b.
func DecodeLeaderResponse(b []byte) (LeaderResponse, error) {
	d, err := newLeaderDecoder(b)
	if err != nil {
		return LeaderResponse{}, err
	}
	return LeaderResponse{Reply: d.buf}, nil
}

func newLeaderDecoder(b []byte) (*decoder, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrCorrupt)
	}
	if b[0] != LeaderVersion {
		return nil, fmt.Errorf("%w %d of a leader message (this node speaks %d)", ErrVersion, b[0], LeaderVersion)
	}
	return &decoder{buf: b[1:]}, nil
}
