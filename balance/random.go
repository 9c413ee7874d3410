package balance

import "math/rand/v2"

// Random picks a usable candidate uniformly at random.
//
// It counts the usable candidates, draws k from the top-level functions of
// math/rand/v2 (per-thread generator state: no lock, no allocation) and
// returns the k-th usable one.
//
// The zero value is ready to use. A Random is safe for concurrent use.
type Random struct{}

// NewRandom returns a uniform random policy.
func NewRandom() *Random { return &Random{} }

// Pick implements Policy.
func (*Random) Pick(cands []Candidate) int {
	k := countUsable(cands)
	if k == 0 {
		return -1
	}
	return nthUsable(cands, rand.IntN(k))
}

// String returns "random", the name ByName accepts.
func (*Random) String() string { return "random" }
