package balance

import "time"

// Compile-time checks that the built-in policies satisfy the interfaces.
var (
	_ Policy = PolicyFunc(nil)
	_ Policy = (*RoundRobin)(nil)
	_ Policy = (*Random)(nil)
	_ Policy = (*Weighted)(nil)
	_ Policy = (*LeastInFlight)(nil)
	_ Policy = (*Latency)(nil)
	_ Binder = (*Weighted)(nil)
)

// Candidate is one node a read could go to, as the router sees it at the
// moment of the pick. The router builds a fresh slice of candidates for each
// pick, in a stable order (the configuration order of the read candidates).
type Candidate struct {
	// Name is the node name, e.g. "replica1", or "primary" when the
	// primary takes reads.
	Name string
	// Usable is false when the node is down, fenced for lag, or excluded by
	// the consistency rules. A policy never picks an unusable candidate.
	Usable bool
	// InFlight is the number of statements currently running on the node.
	InFlight int64
	// Latency is the EWMA of recent statement latency on the node (see
	// EWMA); 0 means not known yet.
	Latency time.Duration
}

// Policy picks one candidate for a read.
//
// Pick returns the index into cands of a Usable candidate, or -1 if it
// picks none (always -1 when no candidate is usable). Returning the index
// of an unusable candidate, or an index out of range, is a bug in the
// policy.
//
// Implementations must be safe for concurrent use, must not modify or
// retain cands (the router reuses the slice), and should not allocate:
// Pick runs on every routed read.
type Policy interface {
	Pick(cands []Candidate) int
}

// PolicyFunc adapts a function to Policy. The function must follow the
// Policy contract.
type PolicyFunc func(cands []Candidate) int

// Pick calls f(cands).
func (f PolicyFunc) Pick(cands []Candidate) int { return f(cands) }

// Binder is implemented by policies that need the set of node names before
// use, such as Weighted. The driver calls Bind once, at configuration time,
// with the names of all read candidates in the order it will pass them to
// Pick; an error from Bind is a configuration error and the driver refuses
// to open.
type Binder interface {
	Bind(names []string) error
}

// countUsable returns the number of usable candidates.
func countUsable(cands []Candidate) int {
	n := 0
	for i := range cands {
		if cands[i].Usable {
			n++
		}
	}
	return n
}

// nthUsable returns the index of the k-th (0-based) usable candidate, or -1
// if there are not that many.
func nthUsable(cands []Candidate, k int) int {
	for i := range cands {
		if cands[i].Usable {
			if k == 0 {
				return i
			}
			k--
		}
	}
	return -1
}
