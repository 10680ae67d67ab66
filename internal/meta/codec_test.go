package meta

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/move"
	"github.com/kuradb/kura/internal/ring"
)

// sampleEntries has one entry of every kind, with every field set.
func sampleEntries() []Entry {
	tr := move.Transfer{Range: move.Range{Start: -5, End: 1 << 62}, Source: "n1", Destination: "n4", Bytes: 1 << 33, Leaving: true}
	return []Entry{
		Bootstrap{Strategy: "rack-aware", RF: 3, Members: []Member{
			{ID: "n1", Host: "h1", Rack: "r1", Role: ring.WriteOptimized, Addr: "10.0.0.1:7000", Tokens: []ring.Token{ring.MinToken, 0, ring.MaxToken}},
			{ID: "n2", Host: "h2", Rack: "r2", Role: ring.InMemory, Addr: "10.0.0.2:7000", Tokens: []ring.Token{-1}},
		}},
		Register{ID: "n4", Host: "h4", Rack: "r1", Role: ring.ReadOptimized, Addr: "10.0.0.4:7000"},
		StartChange{ID: 7, Epoch: 12, Joins: []Join{{ID: "n4", Tokens: []ring.Token{3, -9}}}, Leaves: []ring.NodeID{"n2"},
			Removes: []ring.NodeID{"n3"}, Replaces: []Replacement{{Old: "n5", New: "n6"}}, Transfers: []move.Transfer{tr, tr},
			Down: []ring.NodeID{"n3", "n5"}, Level: coord.Quorum},
		StartChange{ID: 8, Epoch: 13, Removes: []ring.NodeID{"n3"}, Handoffs: []move.Handoff{{Token: -7, To: "n1"}, {Token: ring.MaxToken, To: "n2"}},
			Transfers: []move.Transfer{tr}, Down: []ring.NodeID{"n3"}, Level: coord.One},
		RangesMoved{Change: 7, Ranges: []move.Range{{Start: 1, End: 2}, {Start: ring.MaxToken, End: ring.MinToken}}},
		FinishChange{Change: 1<<64 - 1},
		CancelChange{Change: 7, Transfers: []move.Transfer{tr}, Down: []ring.NodeID{"n1"}},
		SetVoters{Voters: []ring.NodeID{"n1", "n2", "n4"}},
		TransfersDone{Change: 7, Transfers: []int{0, 3, 1<<20 - 1}},
		SetACL{Base: 4, Users: []byte("user default on nopass ~* +@all\x00")},
	}
}

func TestEntriesDecodeToWhatWasEncoded(t *testing.T) {
	for _, e := range sampleEntries() {
		roundTrip(t, e)
	}
}

// TestDecodeRefusesDamagedEntries cuts and corrupts every sample entry: each truncation
// and each unknown version or kind is an error wrapping ErrCorrupt, never a panic.
func TestDecodeRefusesDamagedEntries(t *testing.T) {
	for _, e := range sampleEntries() {
		b := Encode(e)
		for n := range len(b) {
			if _, err := Decode(b[:n]); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%T cut to %d of %d bytes: %v, want ErrCorrupt", e, n, len(b), err)
			}
		}
		if _, err := Decode(append(bytes.Clone(b), 0)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%T with a trailing byte: %v", e, err)
		}
		for _, bad := range [][]byte{{EntryVersion + 1, b[1]}, {0, b[1]}, {EntryVersion, 0}, {EntryVersion, 99}} {
			if _, err := Decode(append(bad, b[2:]...)); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%T as % x: %v", e, bad, err)
			}
		}
	}
}

// FuzzDecodeEntry: Decode never panics, and what it accepts encodes to an entry that
// decodes to the same thing.
func FuzzDecodeEntry(f *testing.F) {
	for _, e := range sampleEntries() {
		f.Add(Encode(e))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := Decode(Encode(e))
		if err != nil || fmt.Sprintf("%+v", again) != fmt.Sprintf("%+v", e) {
			t.Fatalf("%+v re-decoded as %+v (%v)", e, again, err)
		}
	})
}

// sampleState is a state with a change in flight, one range moved.
func sampleState(t testing.TB) *State {
	env := &metaEnv{s: &State{}}
	for _, e := range []Entry{
		Bootstrap{Strategy: "simple", RF: 2, Members: []Member{
			{ID: "n1", Host: "h1", Rack: "r1", Tokens: []ring.Token{-100}},
			{ID: "n2", Host: "h2", Rack: "r2", Tokens: []ring.Token{100}},
		}},
		Register{ID: "n3", Host: "h3", Rack: "r1"},
		SetVoters{Voters: []ring.NodeID{"n1"}},
	} {
		if err := env.s.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	sc := StartChange{ID: 1, Epoch: 1, Joins: []Join{{ID: "n3", Tokens: []ring.Token{0}}}, Level: coord.One}
	sc.Transfers = planStart(env.s, sc)
	if err := env.s.Apply(sc); err != nil {
		t.Fatal(err)
	}
	if err := env.s.Apply(TransfersDone{Change: 1, Transfers: []int{0}}); err != nil {
		t.Fatal(err)
	}
	if err := env.s.Apply(RangesMoved{Change: 1, Ranges: []move.Range{env.s.Change.Ranges[0].Range}}); err != nil {
		t.Fatal(err)
	}
	return env.s
}

func TestStateDecodesToWhatWasEncoded(t *testing.T) {
	s := sampleState(t)
	b := EncodeState(s)
	got, err := DecodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if describe(got) != describe(s) || !bytes.Equal(EncodeState(got), b) {
		t.Fatalf("decoded\n%s\nencoded\n%s", describe(got), describe(s))
	}
	for n := range len(b) {
		if _, err := DecodeState(b[:n]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("cut to %d of %d bytes: %v, want ErrCorrupt", n, len(b), err)
		}
	}
}

// A state saved by a build before done transfers were recorded (version 1: no Done list
// after the transfers) decodes, with no transfer done.
func TestStateReadsVersion1(t *testing.T) {
	s := sampleState(t)
	clear(s.Change.Done)
	v2 := EncodeState(s)
	if v2[len(v2)-1] != 0 {
		t.Fatalf("a state with no done transfers should end with an empty list, ends with %d", v2[len(v2)-1])
	}
	v1 := append([]byte{1}, v2[1:len(v2)-1]...)
	got, err := DecodeState(v1)
	if err != nil {
		t.Fatal(err)
	}
	if describe(got) != describe(s) || len(got.Change.Done) != len(s.Change.Transfers) {
		t.Fatalf("version 1 decoded as\n%s\nwant\n%s", describe(got), describe(s))
	}
	if !bytes.Equal(EncodeState(got), v2) {
		t.Fatal("a version 1 state re-encodes differently from the same state in version 2")
	}
}

// A State is written in version 2 until users are recorded, so that a node of an older
// build can take it as a snapshot; with users it is version 3 and keeps them. A SetACL
// in an entry below version 3 is corrupt (no such build wrote one).
func TestUsersAreVersion3OfStateAndEntries(t *testing.T) {
	s := sampleState(t)
	if b := EncodeState(s); b[0] != 2 {
		t.Fatalf("a state without users encoded as version %d, want 2", b[0])
	}
	if err := s.Apply(SetACL{Base: 0, Users: []byte("u1")}); err != nil {
		t.Fatal(err)
	}
	b := EncodeState(s)
	got, err := DecodeState(b)
	if err != nil || b[0] != 3 || got.ACLVersion != 1 || string(got.ACL) != "u1" || describe(got) != describe(s) {
		t.Fatalf("version %d decoded as %+v, %v", b[0], got, err)
	}
	e := Encode(SetACL{Base: 1, Users: []byte("u2")})
	e[0] = 2
	if _, err := Decode(e); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a version 2 SetACL: %v", err)
	}
}

// SetACL is a compare-and-set on the users' version: a change made from users that have
// changed since is refused and changes nothing, so that no change is lost.
func TestSetACLRefusesAChangeMadeFromOldUsers(t *testing.T) {
	s := sampleState(t)
	epoch := s.Epoch
	if err := s.Apply(SetACL{Base: 0, Users: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(SetACL{Base: 0, Users: []byte("b")}); !errors.Is(err, ErrACLChanged) {
		t.Fatalf("a second change from version 0: %v", err)
	}
	if err := s.Apply(SetACL{Base: 1, Users: nil}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty users: %v", err)
	}
	if err := s.Apply(SetACL{Base: 1, Users: []byte("c")}); err != nil {
		t.Fatal(err)
	}
	if string(s.ACL) != "c" || s.ACLVersion != 2 || s.Epoch != epoch {
		t.Fatalf("users %q version %d epoch %d (was %d)", s.ACL, s.ACLVersion, s.Epoch, epoch)
	}
}

// FuzzDecodeState: DecodeState never panics, and what it accepts encodes to the same.
func FuzzDecodeState(f *testing.F) {
	f.Add(EncodeState(sampleState(f)))
	f.Add(EncodeState(&State{}))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeState(b)
		if err != nil {
			return
		}
		again, err := DecodeState(EncodeState(s))
		if err != nil || describe(again) != describe(s) {
			t.Fatalf("%s re-decoded as %s (%v)", describe(s), describe(again), err)
		}
	})
}

// TestEntriesWithoutHandoffsStayVersionOne: a node of an older build reads only version 1
// entries, so every entry but a StartChange that hands tokens off is written as version 1,
// byte for byte as that build wrote it (the v1 bytes here are the pre-handoff encoding of
// the same fields); a version 2 StartChange decodes with its handoffs.
func TestEntriesWithoutHandoffsStayVersionOne(t *testing.T) {
	for _, e := range sampleEntries() {
		b := Encode(e)
		sc, isStart := e.(StartChange)
		want := byte(1)
		if isStart && len(sc.Handoffs) > 0 {
			want = 2
		}
		if _, ok := e.(SetACL); ok {
			want = 3
		}
		if b[0] != want {
			t.Errorf("%T encoded as version %d, want %d", e, b[0], want)
		}
		if isStart && len(sc.Handoffs) > 0 {
			// The same change without its handoffs is the version 1 entry, plus the list.
			v1 := Encode(StartChange{ID: sc.ID, Epoch: sc.Epoch, Joins: sc.Joins, Leaves: sc.Leaves, Removes: sc.Removes,
				Replaces: sc.Replaces, Transfers: sc.Transfers, Down: sc.Down, Level: sc.Level})
			if v1[0] != 1 || !bytes.Equal(v1[1:], b[1:len(v1)]) {
				t.Errorf("a version 2 StartChange does not extend its version 1 bytes")
			}
		}
	}
	// A version 1 StartChange from an older build, written out by hand: kind 3, ID 1,
	// epoch 2, no joins, leaves, removes, replaces or transfers, no down, level 2.
	old := []byte{1, byte(kindStartChange), 1, 2, 0, 0, 0, 0, 0, 0, 2}
	e, err := Decode(old)
	if err != nil {
		t.Fatal(err)
	}
	if sc := e.(StartChange); sc.ID != 1 || sc.Epoch != 2 || sc.Level != 2 || sc.Handoffs != nil {
		t.Fatalf("decoded %+v", sc)
	}
}
