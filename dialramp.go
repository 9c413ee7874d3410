package rwshard

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	"github.com/rwshard/rwshard/health"
)

// Reconnect storms: when a node comes back, or another node becomes the
// primary, every process of a fleet finds its pool of that node empty and
// dials all its connections at once, on a server that is just starting
// or taking over. A pool whose node the monitor took out, whose dials
// failed, or that serves a new primary is therefore armed: its dials from
// then on go under a token bucket in slow start, dialStart dials a second
// at first, doubling every dialDouble, until dialMax, when the bucket is
// dropped. The doubling starts at the first dial that succeeds after the
// pool was armed and stops again at any dial that fails: a node that
// stays down is dialed at dialStart, and one that returns is ramped from
// its first new connection.
// Each wait for a token is stretched by a random half, and the first
// token of a slow start comes at a random fraction of its first fifth of
// a second, so that processes which saw the same event do not dial in
// step. Retries of statements are bounded apart, by the connector's
// retry budget (Config.RetryBudget).
const (
	dialStart  = 5.0 // dials per second when a slow start begins
	dialDouble = 250 * time.Millisecond
	dialMax    = 1000.0 // dials per second at which the bucket is dropped
)

// dialRamp is a pool's token bucket for dials; p.mu guards it.
type dialRamp struct {
	off    bool      // no slow start (tests that measure without it)
	armed  bool      // dials go under the bucket
	from   time.Time // the doubling began; zero: not yet, dialStart
	tokens float64
	last   time.Time
}

// slowStart arms the pool's slow start.
func (p *connPool) slowStart() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ramp.arm(time.Now())
}

// arm puts the dials under the bucket at dialStart, unless a slow start
// runs already (the primary's return, seen again as primary-found); p.mu
// is held.
func (r *dialRamp) arm(now time.Time) {
	if r.off || r.armed {
		return
	}
	r.last, r.tokens = now, rand.Float64() // the first dial at a random point of its first fifth of a second
	r.armed, r.from = true, time.Time{}
}

// dialTurn waits for the pool's turn to dial under the slow start, if
// one runs: an error only when ctx ends first.
func (p *connPool) dialTurn(ctx context.Context) error {
	for {
		p.mu.Lock()
		r := &p.ramp
		if !r.armed {
			p.mu.Unlock()
			return nil
		}
		now := time.Now()
		rate := dialStart
		if !r.from.IsZero() {
			rate *= math.Exp2(float64(now.Sub(r.from)) / float64(dialDouble))
		}
		if rate >= dialMax {
			r.armed = false
			p.mu.Unlock()
			return nil
		}
		r.tokens = min(max(1, rate/4), r.tokens+rate*now.Sub(r.last).Seconds())
		r.last = now
		if r.tokens >= 1 {
			r.tokens--
			p.mu.Unlock()
			return nil
		}
		wait := time.Duration((1 - r.tokens) / rate * (1 + rand.Float64()/2) * float64(time.Second))
		p.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// dialFailed arms the slow start, or stops its doubling, after a dial
// that failed to reach the server (not one it refused: access denied, or
// full, see connbudget.go).
func (p *connPool) dialFailed(ctx context.Context, err error) {
	if serverErrno(err) != 0 || ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	p.ramp.arm(time.Now())
	p.ramp.from = time.Time{}
	p.mu.Unlock()
}

// dialed starts the doubling at the first dial that succeeds after the
// pool was armed.
func (p *connPool) dialed() {
	p.mu.Lock()
	if r := &p.ramp; r.armed && r.from.IsZero() {
		r.from = time.Now()
	}
	p.mu.Unlock()
}

// rampObserver passes the monitor's events on to the user's observer, and
// starts a slow start of the new primary's pool when the primary changes.
type rampObserver struct {
	cl   *cluster
	next health.Observer
}

func (o rampObserver) Observe(e health.Event) {
	if (e.Kind == health.SwitchoverFollowed || e.Kind == health.PrimaryFound) && e.Count <= 1 { // not a window's summary
		if n := o.cl.byName[e.Node]; n != nil && n.conns != nil {
			n.conns.slowStart()
		}
	}
	if o.next != nil {
		o.next.Observe(e)
	}
}
