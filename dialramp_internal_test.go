package rwshard

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// An armed pool dials slowly at first, then ever faster, and drops the
// bucket at dialMax; unarmed, or with the ramp off, dials are free.
func TestDialRamp(t *testing.T) {
	turns := func(p *connPool, d time.Duration) int {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		n := 0
		for p.dialTurn(ctx) == nil && n < 100000 {
			n++
		}
		return n
	}
	p := newConnPool(nil, 0, 0, 0, 0)
	assert.Equal(t, 100000, turns(p, time.Second), "not armed: free")

	p.slowStart()
	// Armed, before any dial succeeds: 5 a second.
	down := turns(p, 600*time.Millisecond)
	assert.GreaterOrEqual(t, down, 1, "some dials while the node is down")
	assert.LessOrEqual(t, down, 4, "few dials while the node is down")
	time.Sleep(3 * time.Second)
	assert.LessOrEqual(t, turns(p, 200*time.Millisecond), 3, "no doubling before a dial succeeds")
	p.dialed()
	// 5 a second doubling every 250 ms: about 5·0.25/ln 2·(2²−1) ≈ 5.4
	// dials in the first 500 ms, plus the bucket's.
	first := turns(p, 500*time.Millisecond)
	assert.GreaterOrEqual(t, first, 2, "some dials in the first 500 ms")
	assert.LessOrEqual(t, first, 10, "few dials in the first 500 ms")
	assert.True(t, p.ramp.armed)
	// The rest of the ramp: dialMax is reached 250 ms·log2(200) ≈ 1.9 s in.
	assert.Eventually(t, func() bool { turns(p, 50*time.Millisecond); return !p.ramp.armed }, 5*time.Second, time.Millisecond)
	assert.Equal(t, 100000, turns(p, time.Second), "the ramp is over: free")

	off := newConnPool(nil, 0, 0, 0, 0)
	off.ramp.off = true
	off.slowStart()
	assert.Equal(t, 100000, turns(off, time.Second), "ramp off")
}

// A dial that fails to reach the server stops the doubling: back to
// dialStart until a dial succeeds again. A pool already ramping is not
// set back by another event for the same return.
func TestDialRampFailure(t *testing.T) {
	p := newConnPool(nil, 0, 0, 0, 0)
	p.slowStart()
	p.dialed()
	time.Sleep(time.Second) // 80 dials a second by now
	from := p.ramp.from
	p.slowStart() // primary-found for the same return
	assert.Equal(t, from, p.ramp.from, "an event reset a running ramp")
	p.dialFailed(context.Background(), errors.New("connection refused"))
	assert.True(t, p.ramp.armed && p.ramp.from.IsZero(), "a failed dial stops the doubling")
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	n := 0
	for p.dialTurn(ctx) == nil {
		n++
	}
	assert.LessOrEqual(t, n, 4, "back to 5 dials a second")
}
