package balance

import "sync/atomic"

// RoundRobin takes the usable candidates in turn.
//
// A shared atomic counter numbers the picks; pick number c goes to the
// (c mod k)-th usable candidate, k being the number of usable candidates at
// that moment. Unusable candidates therefore take no turns: with two usable
// candidates out of three, each gets exactly half of the picks. (Starting at
// c mod n and walking forward to the next usable candidate would instead
// give the candidate after a skipped one a double share.)
//
// The zero value is ready to use. A RoundRobin is safe for concurrent use;
// Pick takes one atomic add and does not allocate.
type RoundRobin struct {
	next atomic.Uint64
}

// NewRoundRobin returns a round-robin policy.
func NewRoundRobin() *RoundRobin { return &RoundRobin{} }

// Pick implements Policy.
func (r *RoundRobin) Pick(cands []Candidate) int {
	k := countUsable(cands)
	if k == 0 {
		return -1
	}
	c := r.next.Add(1) - 1
	return nthUsable(cands, int(c%uint64(k)))
}

// String returns "round_robin", the name ByName accepts.
func (*RoundRobin) String() string { return "round_robin" }
