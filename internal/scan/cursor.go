package scan

import "github.com/kuradb/kura/internal/ring"

// signBit flips a token's sign: token order becomes unsigned order.
const signBit = 1 << 63

// Cursor returns the cursor that resumes a scan at token t: t's rank among tokens.
// Cursor(ring.MinToken) is 0, the start.
func Cursor(t ring.Token) uint64 { return uint64(t) ^ signBit }

// From returns the token a cursor resumes at (Cursor's inverse). Every uint64 is a
// cursor.
func From(cursor uint64) ring.Token { return ring.Token(cursor ^ signBit) }

// After returns the cursor of the page that follows one holding every key whose token is
// at most through: 0, the end of the scan, when through is MaxToken.
func After(through ring.Token) uint64 {
	if through == ring.MaxToken {
		return 0
	}
	return Cursor(through + 1)
}

// tokenBound returns the first engine key (ring.EngineKey) of a token above t: the
// exclusive upper bound of t's keys, nil past MaxToken.
func tokenBound(t ring.Token) []byte {
	if t == ring.MaxToken {
		return nil
	}
	return ring.AppendTokenPrefix(nil, t+1)
}
