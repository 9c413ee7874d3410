package balance

import "math/rand/v2"

// Latency picks by the power of two choices over a latency score.
//
// For each pick it draws two distinct usable candidates at random and keeps
// the one with the lower score
//
//	score = Latency × (InFlight + 1)
//
// so a fast node is preferred, but not to the point of piling every read on
// it: its queue counts against it. Sampling two instead of scanning all
// keeps the choice cheap and avoids herding on one "best" node between
// updates of the latency figures. With one usable candidate, that one is
// returned.
//
// A Latency of 0 (not measured yet) counts as the best latency in the pair:
// it takes the latency of the other candidate, and on an equal score the
// unmeasured candidate wins. A new node therefore gets explored whenever it
// is drawn and its in-flight count is not above the other's, yet a new node
// that stalls (its in-flight count growing, no latency ever recorded)
// cannot swallow every read. When neither latency is known, the lower
// in-flight count wins. A negative InFlight counts as 0.
//
// The zero value is ready to use. A Latency is safe for concurrent use and
// Pick does not allocate.
type Latency struct{}

// NewLatency returns a power-of-two-choices latency policy.
func NewLatency() *Latency { return &Latency{} }

// Pick implements Policy.
func (*Latency) Pick(cands []Candidate) int {
	k := countUsable(cands)
	switch k {
	case 0:
		return -1
	case 1:
		return nthUsable(cands, 0)
	}
	x := rand.IntN(k)
	y := rand.IntN(k - 1)
	if y >= x {
		y++
	}
	a, b := nthUsable(cands, x), nthUsable(cands, y)
	if preferSecond(&cands[a], &cands[b]) {
		return b
	}
	return a
}

// String returns "latency", the name ByName accepts.
func (*Latency) String() string { return "latency" }

// preferSecond reports whether b scores strictly better than a, or equal
// with b unmeasured and a measured. Otherwise a (drawn at random) wins.
func preferSecond(a, b *Candidate) bool {
	la, lb := float64(a.Latency), float64(b.Latency)
	aUnknown, bUnknown := la <= 0, lb <= 0
	switch {
	case aUnknown && bUnknown:
		la, lb = 1, 1
	case aUnknown:
		la = lb
	case bUnknown:
		lb = la
	}
	sa := la * (float64(max(a.InFlight, 0)) + 1)
	sb := lb * (float64(max(b.InFlight, 0)) + 1)
	if sa != sb {
		return sb < sa
	}
	return bUnknown && !aUnknown
}
