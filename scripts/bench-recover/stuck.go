package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"

	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/ring"
)

// stuckCmd describes the change in flight of a node's saved metadata (a copy of
// DATA/meta/meta.state, metalog's file: a version byte, the log index as a uvarint, the
// encoded state) when a recovery does not finish: every transfer not done, its range's old
// and new replica sets, and the replicas a kura node merges it from when its planned
// source is not the leaving replica or is down (internal/node: those of the old set that
// stay in the new one, every old one when none stays), marking the members removed or
// leaving, which never answer.
func stuckCmd(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: bench-recover stuck META_STATE")
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	_, n := binary.Uvarint(b[min(1, len(b)):])
	if len(b) < 2 || n <= 0 {
		return fmt.Errorf("%s: not a saved metadata state", args[0])
	}
	st, err := meta.DecodeState(b[1+n:])
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	c := st.Change
	if c == nil {
		fmt.Printf("epoch %d: no change in flight\n", st.Epoch)
		return nil
	}
	gone := map[ring.NodeID]bool{}
	for _, id := range c.Removes {
		gone[id] = true
	}
	name := func(ids []ring.NodeID) []string {
		var out []string
		for _, id := range ids {
			s := string(id)[:min(8, len(id))]
			if gone[id] {
				s += " (removed)"
			}
			out = append(out, s)
		}
		return out
	}
	fmt.Printf("epoch %d, change %d (removes %v): %d ranges, %d transfers\n", st.Epoch, c.ID, name(c.Removes), len(c.Ranges), len(c.Transfers))
	for i, tr := range c.Transfers {
		if i < len(c.Done) && c.Done[i] {
			continue
		}
		r := c.RangeOf(tr.Range)
		fmt.Printf("transfer %d not done: %s %s -> %s, %d bytes, leaving source %v\n", i, tr.Range, name([]ring.NodeID{tr.Source}),
			name([]ring.NodeID{tr.Destination}), tr.Bytes, tr.Leaving)
		if r < 0 {
			fmt.Println("  in no range of the change")
			continue
		}
		rs := c.Ranges[r]
		var stays, merge []ring.NodeID
		for _, id := range rs.Old {
			if id != tr.Destination && slices.Contains(rs.New, id) {
				stays = append(stays, id)
			}
		}
		merge = stays
		if len(stays) == 0 {
			for _, id := range rs.Old {
				if id != tr.Destination {
					merge = append(merge, id)
				}
			}
		}
		fmt.Printf("  range %s: old %v, new %v; of the old set %d stay; merged from %v\n", rs.Range, name(rs.Old), name(rs.New), len(stays), name(merge))
	}
	return nil
}
