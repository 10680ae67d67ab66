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
	// BalancedTokens splits, one token at a time, the range whose split best evens out
	// the replicated load (ring.BalancedTokens).
	BalancedTokens = "balanced"
)

// Tokens chooses the numTokens tokens of a node joining r (nil: the first node) by method,
// drawing from rng.
func Tokens(method string, r *ring.Ring, node ring.Node, numTokens int, strategy ring.Strategy, rf int, rng *rand.Rand) ([]ring.Token, error) {
	switch method {
	case RandomTokens:
		return ring.RandomTokens(rng, numTokens, nil), nil
	case BalancedTokens:
		return ring.BalancedTokens(r, node, numTokens, strategy, rf, rng), nil
	}
	return nil, fmt.Errorf("move: unknown token allocation %q (want %s or %s)", method, RandomTokens, BalancedTokens)
}
