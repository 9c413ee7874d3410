package health

import (
	"sync"
	"time"
)

// Budget limits retries to a share of recent requests, so that an outage
// cannot multiply the load on the nodes that are left (the retry budget of
// Finagle and gRPC). Every request deposits Ratio of a token; a retry
// withdraws a whole one; the balance is capped at Max tokens, and at least
// MinPerSecond retries per second are allowed so that a quiet service can
// still retry.
type Budget struct {
	Ratio        float64
	MinPerSecond float64
	Max          float64

	mu      sync.Mutex
	tokens  float64
	last    time.Time
	retries uint64
	refused uint64
}

// NewBudget returns a budget of ratio (e.g. 0.1: one retry per ten
// requests) with a floor of minPerSecond retries per second.
func NewBudget(ratio, minPerSecond float64) *Budget {
	return &Budget{Ratio: ratio, MinPerSecond: minPerSecond, Max: 10 + 100*ratio, tokens: minPerSecond}
}

// Request records a request.
func (b *Budget) Request() {
	b.mu.Lock()
	b.tokens = min(b.tokens+b.Ratio, b.Max)
	b.mu.Unlock()
}

// Retry reports whether a retry may be made now, and spends it if so.
func (b *Budget) Retry(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.last.IsZero() {
		b.tokens = min(b.tokens+now.Sub(b.last).Seconds()*b.MinPerSecond, b.Max)
	}
	b.last = now
	// Deposits of Ratio accumulate rounding error (ten deposits of 0.1
	// sum to 0.9999999999999999): a whole token is 1 within 1e-9.
	if b.tokens < 1-1e-9 {
		b.refused++
		return false
	}
	b.tokens--
	b.retries++
	return true
}

// Counts returns how many retries were made and refused.
func (b *Budget) Counts() (retries, refused uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.retries, b.refused
}
