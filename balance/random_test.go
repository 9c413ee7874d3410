package balance_test

import (
	"testing"

	"github.com/rwshard/rwshard/balance"
)

// TestRandomUniform: 90,000 picks over 3 usable candidates of 4. The
// standard deviation of a share is sqrt(p(1-p)/n) ≈ 0.16 pp, so ±2 pp is
// over 12 standard deviations: a failure means a bias, not bad luck.
func TestRandomUniform(t *testing.T) {
	const n = 90000
	cands := allUsable("a", "b", "c", "d")
	cands[2].Usable = false
	got := counts(t, balance.NewRandom(), cands, n)
	requireShares(t, got, n, []float64{100. / 3, 100. / 3, 0, 100. / 3}, 2)
}
