package balance

import (
	"math"
	"sync/atomic"
	"time"
)

// ewmaAlpha is the weight of a new observation in EWMA.
const ewmaAlpha = 0.2

// EWMA is an exponentially weighted moving average of durations, for the
// driver to keep Candidate.Latency per node: Observe the duration of each
// statement the node ran, and copy Value into the candidate at pick time.
//
// Each observation moves the average a fifth of the way toward it
// (alpha = 0.2): an observation's weight halves after about three more,
// and the last ten or so observations carry about 90% of the value. The
// decay is per observation, not per unit of time, so a node that takes no
// traffic keeps its last figure. The first observation sets the value.
//
// Value is 0 until the first observation, which Latency reads as "not
// known yet"; observations below 1ns count as 1ns so that a measured node
// never reads as unknown. Reset forgets the history, e.g. when a node
// comes back after an outage.
//
// The zero value is ready to use. An EWMA is safe for concurrent use and
// lock-free (a compare-and-swap loop on one word); it must not be copied
// after first use.
type EWMA struct {
	bits atomic.Uint64 // math.Float64bits of the average in ns; 0 = no observation
}

// Observe adds one observation.
func (e *EWMA) Observe(d time.Duration) {
	x := max(float64(d), 1)
	for {
		old := e.bits.Load()
		next := x
		if old != 0 {
			v := math.Float64frombits(old)
			next = v + ewmaAlpha*(x-v)
		}
		if e.bits.CompareAndSwap(old, math.Float64bits(next)) {
			return
		}
	}
}

// Value returns the current average, or 0 if nothing was observed since
// creation or the last Reset.
func (e *EWMA) Value() time.Duration {
	v := math.Float64frombits(e.bits.Load())
	if v >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(v)
}

// Reset forgets every observation: Value returns 0 until the next Observe.
func (e *EWMA) Reset() { e.bits.Store(0) }
