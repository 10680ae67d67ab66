package ring

import "fmt"

// Role is what a node's engine is good at. Placement spreads each replica set over the
// roles (Diverse) and the coordinator sends each request to the replicas whose role suits
// it; every engine declares its own (engine.Engine.Role). Its numeric value is part of the
// gossip and saved-view formats: never renumber.
type Role uint8

// The three engine roles of the paper (../shared/seeds/000, section 3).
const (
	RoleUnknown Role = iota
	// WriteOptimized engines make writes sequential I/O at the cost of reads (an LSM).
	WriteOptimized
	// ReadOptimized engines keep one version of a row so reads touch one place (a B+tree).
	ReadOptimized
	// InMemory engines keep everything in RAM: fast at both, volatile.
	InMemory
)

// String returns the role's name as used in configs, gossip and admin output.
func (r Role) String() string {
	switch r {
	case WriteOptimized:
		return "write-optimized"
	case ReadOptimized:
		return "read-optimized"
	case InMemory:
		return "in-memory"
	}
	return fmt.Sprintf("unknown-role(%d)", uint8(r))
}
