package move

import (
	"fmt"
	"math/rand/v2"

	"github.com/kuradb/kura/internal/ring"
)

// Token allocation methods (--token-allocation).
const (
	// RandomTokens draws each token at random, as Cassandra did before 3.0.
	RandomTokens = "random"
	// BalancedTokens places tokens, one at a time and then refined, where they best even
	// out the replicated load (ring.BalancedJoinTokens).
	BalancedTokens = "balanced"
)

// Tokens chooses the numTokens tokens of a node joining r (nil: the first node) by method,
// drawing from rng.
func Tokens(method string, r *ring.Ring, node ring.Node, numTokens int, strategy ring.Strategy, rf int, rng *rand.Rand) ([]ring.Token, error) {
	switch method {
	case RandomTokens:
		return ring.RandomTokens(rng, numTokens, nil), nil
	case BalancedTokens:
		// ring.BalancedJoinTokens with one joiner is ring.BalancedTokens refined, with ties
		// broken at lower replication factors: one joiner of 16 tokens on 3 nodes of RF 3
		// ends at max/min replicated ownership 1.05-1.09 instead of up to 1.40.
		return ring.BalancedJoinTokens(r, []ring.Node{node}, numTokens, strategy, rf, rng)[0], nil
	}
	return nil, fmt.Errorf("move: unknown token allocation %q (want %s or %s)", method, RandomTokens, BalancedTokens)
}
