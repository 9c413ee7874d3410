package monitor

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// retries spends retries at one instant (no refill) until refused.
func retries(b *Budget, now time.Time) int {
	n := 0
	for b.Retry(now) {
		n++
		if n > 1000 {
			panic("budget never refuses")
		}
	}
	return n
}

// emptyBudget is NewBudget with its starting allowance spent, for tests
// that count what deposits and the floor pay for.
func emptyBudget(ratio, minPerSecond float64) *Budget {
	b := NewBudget(ratio, minPerSecond)
	b.micro.Store(0)
	return b
}

func TestNewBudget(t *testing.T) {
	b := NewBudget(0.1, 2)
	assert.Equal(t, 0.1, b.Ratio)
	assert.Equal(t, 2.0, b.MinPerSecond)
	assert.Equal(t, 20.0, b.Max, "Max is 10 + 100×ratio")
	assert.Equal(t, 20, retries(b, t0), "starts full: Max tokens before any request")
	r, refused := b.Counts()
	assert.Equal(t, uint64(20), r)
	assert.Equal(t, uint64(1), refused)
}

func TestBudgetNoFloorNoRequestsNoRetry(t *testing.T) {
	b := emptyBudget(0.1, 0)
	assert.False(t, b.Retry(t0))
	assert.False(t, b.Retry(t0.Add(time.Hour)), "no floor: time alone refills nothing")
	r, refused := b.Counts()
	assert.Equal(t, uint64(0), r)
	assert.Equal(t, uint64(2), refused)
}

// With a ratio that is exact in binary the arithmetic is exact: every
// request adds 1/4 token.
func TestBudgetRatioExact(t *testing.T) {
	b := emptyBudget(0.25, 0)
	for range 3 {
		b.Request()
	}
	assert.False(t, b.Retry(t0), "3 requests × 0.25 < 1 token")
	b.Request()
	assert.True(t, b.Retry(t0), "4 requests × 0.25 = 1 token")
	assert.False(t, b.Retry(t0))
	for range 40 {
		b.Request()
	}
	assert.Equal(t, 10, retries(b, t0), "40 × 0.25")
	r, refused := b.Counts()
	assert.Equal(t, uint64(11), r)
	assert.Equal(t, uint64(3), refused)
}

// BUG: NewBudget's doc says ratio 0.1 is "one retry per ten requests", but
// Request adds 0.1 in floating point: ten deposits sum to
// 0.9999999999999999 and a hundred to 9.99999999999998, so Retry's
// `tokens < 1` refuses the retry they paid for (0 after 10 requests, 9
// after 100).
func TestBudgetRatioOneInTen(t *testing.T) {
	b := emptyBudget(0.1, 0)
	for range 10 {
		b.Request()
	}
	assert.Equal(t, 1, retries(b, t0), "10 requests at ratio 0.1 pay for 1 retry")

	b = emptyBudget(0.1, 0)
	for range 100 {
		b.Request()
	}
	assert.Equal(t, 10, retries(b, t0), "100 requests at ratio 0.1 pay for 10 retries")
}

func TestBudgetMaxCap(t *testing.T) {
	b := emptyBudget(0.1, 0) // Max = 20
	for range 1000 {
		b.Request()
	}
	assert.Equal(t, 20, retries(b, t0), "1000 requests × 0.1 = 100 tokens, capped at Max = 20")

	b = emptyBudget(0.5, 0) // Max = 60
	for range 1000 {
		b.Request()
	}
	assert.Equal(t, 60, retries(b, t0))

	b.Max = 3 // the fields are the configuration
	for range 100 {
		b.Request()
	}
	assert.Equal(t, 3, retries(b, t0))
}

func TestBudgetFloorRefills(t *testing.T) {
	b := emptyBudget(0, 2) // only the floor: 2 retries per second
	assert.False(t, b.Retry(t0), "spent, and no time has passed")

	assert.False(t, b.Retry(t0.Add(250*time.Millisecond)), "0.5 token after 250ms")
	assert.True(t, b.Retry(t0.Add(500*time.Millisecond)), "1 token after 500ms")
	assert.False(t, b.Retry(t0.Add(500*time.Millisecond)))

	// After a long quiet spell the floor is capped at Max (10 with ratio 0).
	assert.Equal(t, 10, retries(b, t0.Add(time.Hour)))

	r, refused := b.Counts()
	assert.Equal(t, uint64(1+10), r)
	assert.Equal(t, uint64(1+1+1+1), refused)
}

func TestBudgetFloorAndRatioAdd(t *testing.T) {
	b := emptyBudget(0.25, 1)
	for range 8 {
		b.Request() // +2
	}
	assert.Equal(t, 2, retries(b, t0))
	assert.Equal(t, 2, retries(b, t0.Add(2*time.Second)), "+1 per second")
}

func TestBudgetConcurrent(t *testing.T) {
	const workers, each = 8, 500

	// Deposits first, then spends, concurrently: exact outcome.
	b := emptyBudget(0.5, 0) // Max 60
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				b.Request()
			}
		})
	}
	wg.Wait()
	for range workers {
		wg.Go(func() {
			for range each / 10 {
				b.Retry(t0)
			}
		})
	}
	wg.Wait()
	r, refused := b.Counts()
	assert.Equal(t, uint64(60), r, "capped at Max")
	assert.Equal(t, uint64(workers*each/10-60), refused)

	// Interleaved: every call is counted once, and retries never exceed
	// what the requests paid for (no floor, exact ratio).
	b = emptyBudget(0.25, 0)
	for range workers {
		wg.Go(func() {
			for j := range each {
				b.Request()
				if j%2 == 0 {
					b.Retry(time.Now())
				}
			}
		})
	}
	wg.Wait()
	r, refused = b.Counts()
	require.Equal(t, uint64(workers*each/2), r+refused)
	assert.LessOrEqual(t, r, uint64(workers*each/4))
	assert.Positive(t, r)
}

// Requests(n) deposits what n calls of Request would, capped alike.
func TestBudgetRequests(t *testing.T) {
	for _, n := range []int{0, 1, 7, 40, 1000} {
		one, many := emptyBudget(0.25, 0), emptyBudget(0.25, 0)
		for range n {
			one.Request()
		}
		many.Requests(n)
		assert.Equal(t, retries(one, t0), retries(many, t0), "%d requests", n)
	}
	b := emptyBudget(0.25, 0)
	b.Requests(-3)
	assert.False(t, b.Retry(t0), "a negative count deposits nothing")
}
