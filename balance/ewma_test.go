package balance_test

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/rwshard/rwshard/balance"
	"github.com/stretchr/testify/require"
)

func TestEWMA(t *testing.T) {
	var e balance.EWMA
	require.Zero(t, e.Value(), "unknown before the first observation")

	e.Observe(100 * time.Microsecond)
	require.Equal(t, 100*time.Microsecond, e.Value(), "first observation sets the value")

	e.Observe(200 * time.Microsecond) // alpha = 0.2: 100 + 0.2×(200−100)
	require.Equal(t, 120*time.Microsecond, e.Value())

	e.Observe(20 * time.Microsecond) // 120 + 0.2×(20−120)
	require.Equal(t, 100*time.Microsecond, e.Value())

	// It converges: 30 observations of 10 ms leave under 0.2% of the gap.
	for range 30 {
		e.Observe(10 * time.Millisecond)
	}
	require.InEpsilon(t, float64(10*time.Millisecond), float64(e.Value()), 0.002)

	e.Reset()
	require.Zero(t, e.Value())
}

func TestEWMAEdges(t *testing.T) {
	var e balance.EWMA
	e.Observe(0)
	require.Equal(t, time.Duration(1), e.Value(), "a measured node never reads as unknown")
	e.Reset()
	e.Observe(-time.Second)
	require.Equal(t, time.Duration(1), e.Value())
	e.Reset()
	e.Observe(math.MaxInt64)
	require.Equal(t, time.Duration(math.MaxInt64), e.Value())
}

func TestEWMAConcurrent(t *testing.T) {
	var e balance.EWMA
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10000 {
				e.Observe(5 * time.Millisecond)
				if v := e.Value(); v != 5*time.Millisecond {
					t.Errorf("Value = %v during concurrent Observe(5ms)", v)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 5*time.Millisecond, e.Value())
}

func TestEWMAAllocs(t *testing.T) {
	var e balance.EWMA
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		e.Observe(time.Millisecond)
		_ = e.Value()
	}))
}
