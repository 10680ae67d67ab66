package clean

import "math/rand"

func seededV1(seed int64) int {
	r := rand.New(rand.NewSource(seed))
	return r.Intn(3)
}
