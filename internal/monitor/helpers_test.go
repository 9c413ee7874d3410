package monitor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rwshard/rwshard/health"
)

// eventually is the bound of every require.Eventually in this package:
// generous, since -race and a loaded CI machine slow the loops down; the
// tests wait for a condition, they do not time it.
const (
	eventually = 5 * time.Second
	tick       = time.Millisecond
)

// fakeClock is a settable Options.Now.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	reads int
}

func newFakeClock() *fakeClock { return &fakeClock{t: t0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.t
}

// waitLoops waits until the n probe loops of a started monitor have read
// the clock for the time of their last probe, which they do just after
// Start returns: two reads per loop (the first probe's send time, then
// that). Only then does moving the clock on let a Kick through.
func (c *fakeClock) waitLoops(t testing.TB, n int) {
	t.Helper()
	deadline := time.Now().Add(eventually)
	for {
		c.mu.Lock()
		reads := c.reads
		c.mu.Unlock()
		if reads >= 2*n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the probe loops read the clock %d times, want %d", reads, 2*n)
		}
		time.Sleep(tick)
	}
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fakeCluster is a ProbeFunc over a table of readings, one per node, that
// the test changes under its mutex. Node 0 starts as a writable primary,
// the others as healthy replicas, all at GTID position 0-1-1.
type fakeCluster struct {
	mu         sync.Mutex
	readings   []Reading
	errs       []error
	calls      []int
	noDeadline int // probes called without a deadline on ctx
	timeout    time.Duration
}

func newFakeCluster(t testing.TB, n int) *fakeCluster {
	f := &fakeCluster{readings: make([]Reading, n), errs: make([]error, n), calls: make([]int, n)}
	pos := mustGTID(t, "0-1-1")
	for i := range n {
		f.readings[i] = Reading{Position: pos}
		if i > 0 {
			f.readings[i] = Reading{ReadOnly: true, Replica: true, IORunning: true, SQLRunning: true, Position: pos}
		}
	}
	return f
}

func (f *fakeCluster) probe(ctx context.Context, i int) (Reading, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[i]++
	if d, ok := ctx.Deadline(); !ok {
		f.noDeadline++
	} else {
		f.timeout = max(f.timeout, time.Until(d))
	}
	return f.readings[i], f.errs[i]
}

// set changes node i's reading.
func (f *fakeCluster) set(i int, change func(r *Reading)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.readings[i])
}

// fail makes node i's probes fail with err (nil: succeed again).
func (f *fakeCluster) fail(i int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[i] = err
}

func (f *fakeCluster) callCount(i int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[i]
}

func (f *fakeCluster) totalCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}

// recorder is an Observer that keeps what it is given.
type recorder struct {
	mu     sync.Mutex
	events []health.Event
}

func (r *recorder) Observe(e health.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) all() []health.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]health.Event(nil), r.events...)
}

func (r *recorder) count(k health.EventKind, node string) int {
	return len(filter(r.all(), k, node))
}

// filter keeps the events of kind k on node.
func filter(events []health.Event, k health.EventKind, node string) []health.Event {
	var out []health.Event
	for _, e := range events {
		if e.Kind == k && e.Node == node {
			out = append(out, e)
		}
	}
	return out
}

// queued drains the events waiting for delivery on a monitor that was not
// started (tests that drive probeOnce themselves).
func queued(m *Monitor) []health.Event {
	var out []health.Event
	for {
		select {
		case e := <-m.agg.out:
			out = append(out, e)
		default:
			return out
		}
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
