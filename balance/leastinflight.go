package balance

import "sync/atomic"

// LeastInFlight picks the usable candidate with the fewest statements in
// flight.
//
// When several usable candidates share the minimum, a rotating counter
// chooses among them (the (c mod m)-th of the m tied candidates), so equal
// load spreads evenly instead of always landing on the first of them. The
// counter is touched only on a tie.
//
// The zero value is ready to use. A LeastInFlight is safe for concurrent
// use and Pick does not allocate.
type LeastInFlight struct {
	next atomic.Uint64
}

// NewLeastInFlight returns a least-in-flight policy.
func NewLeastInFlight() *LeastInFlight { return &LeastInFlight{} }

// Pick implements Policy.
func (l *LeastInFlight) Pick(cands []Candidate) int {
	best, ties := -1, 0
	var low int64
	for i := range cands {
		c := &cands[i]
		switch {
		case !c.Usable:
		case best < 0 || c.InFlight < low:
			best, ties, low = i, 1, c.InFlight
		case c.InFlight == low:
			ties++
		}
	}
	if ties <= 1 {
		return best
	}
	k := int((l.next.Add(1) - 1) % uint64(ties))
	for i := best; i < len(cands); i++ {
		if c := &cands[i]; c.Usable && c.InFlight == low {
			if k == 0 {
				return i
			}
			k--
		}
	}
	return best // unreachable: there are ties candidates at low from best on
}

// String returns "least_in_flight", the name ByName accepts.
func (*LeastInFlight) String() string { return "least_in_flight" }
