package monitor

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Budget limits retries to a share of recent requests, so that an outage
// cannot multiply the load on the nodes that are left (the retry budget of
// Finagle and gRPC). Every request deposits Ratio of a token; a retry
// withdraws a whole one; the balance is capped at Max tokens, and at least
// MinPerSecond retries per second are allowed so that a quiet service can
// still retry.
//
// Request, on every statement, is one atomic operation; Retry, on the rare
// path, takes a lock for the time-based floor.
type Budget struct {
	Ratio        float64
	MinPerSecond float64
	Max          float64

	micro   atomic.Int64 // tokens in millionths: deposits add exactly
	mu      sync.Mutex   // guards last
	last    time.Time
	retries atomic.Uint64
	refused atomic.Uint64
}

const unit = 1_000_000 // one token, in millionths

func millionths(x float64) int64 { return int64(math.Round(x * unit)) }

// NewBudget returns a budget of ratio (e.g. 0.1: one retry per ten
// requests) with a floor of minPerSecond retries per second. It starts
// full, as gRPC's retry throttling does: a process that has just started
// has retried nothing, and a node lost in its first second must not fail
// the reads another node could serve.
func NewBudget(ratio, minPerSecond float64) *Budget {
	b := &Budget{Ratio: ratio, MinPerSecond: minPerSecond, Max: 10 + 100*ratio}
	b.micro.Store(millionths(b.Max))
	return b
}

// add deposits d millionths, up to Max.
func (b *Budget) add(d int64) {
	limit := millionths(b.Max)
	for {
		cur := b.micro.Load()
		next := min(cur+d, limit)
		if next <= cur || b.micro.CompareAndSwap(cur, next) {
			return
		}
	}
}

// Request records a request. A full budget, the steady state, costs one
// atomic load and no write: Request runs on every statement.
func (b *Budget) Request() {
	if float64(b.micro.Load()) < b.Max*unit {
		b.earn()
	}
}

// earn is Request's deposit, out of line so that Request inlines.
func (b *Budget) earn() { b.add(millionths(b.Ratio)) }

// Requests records n requests at once, as n calls of Request would: for a
// caller that counts its requests and adds them later.
func (b *Budget) Requests(n int) {
	if n > 0 && float64(b.micro.Load()) < b.Max*unit {
		b.add(int64(n) * millionths(b.Ratio))
	}
}

// Retry reports whether a retry may be made now, and spends it if so.
func (b *Budget) Retry(now time.Time) bool {
	b.mu.Lock()
	if !b.last.IsZero() {
		b.add(millionths(now.Sub(b.last).Seconds() * b.MinPerSecond))
	}
	b.last = now
	b.mu.Unlock()
	for {
		cur := b.micro.Load()
		if cur < unit {
			b.refused.Add(1)
			return false
		}
		if b.micro.CompareAndSwap(cur, cur-unit) {
			b.retries.Add(1)
			return true
		}
	}
}

// Counts returns how many retries were made and refused.
func (b *Budget) Counts() (retries, refused uint64) {
	return b.retries.Load(), b.refused.Load()
}
