package move

import (
	"fmt"
	"math/rand/v2"

	"github.com/kuradb/kura/internal/ring"
)

// JoinTokens chooses, by method, the numTokens tokens of each of several nodes joining r
// together (nil: a new cluster), drawing from rng; the result is in joiners' order. With
// BalancedTokens the joiners are placed against one another (ring.BalancedJoinTokens),
// which Tokens, one joiner against the ring as it stands, cannot do; with RandomTokens
// each draws tokens no one holds.
func JoinTokens(method string, r *ring.Ring, joiners []ring.Node, numTokens int, strategy ring.Strategy, rf int, rng *rand.Rand) ([][]ring.Token, error) {
	switch method {
	case RandomTokens:
		taken := map[ring.Token]bool{}
		if r != nil {
			for i := range r.RangeCount() {
				taken[r.RangeEnd(i)] = true
			}
		}
		out := make([][]ring.Token, len(joiners))
		for k := range joiners {
			out[k] = ring.RandomTokens(rng, numTokens, taken)
			for _, t := range out[k] {
				taken[t] = true
			}
		}
		return out, nil
	case BalancedTokens:
		return ring.BalancedJoinTokens(r, joiners, numTokens, strategy, rf, rng), nil
	}
	return nil, fmt.Errorf("move: unknown token allocation %q (want %s or %s)", method, RandomTokens, BalancedTokens)
}
