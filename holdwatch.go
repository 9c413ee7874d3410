package rwshard

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rwshard/rwshard/health"
)

// Long holders (Config.HoldWarn, HoldLimit): a logical connection that
// holds a backend connection in a transaction, or with a result set not
// yet closed, keeps a server connection from every other user of the
// pool. Each such hold is registered while it lasts; one goroutine per
// connector looks at them a few times per bound, reports those past
// HoldWarn (an event naming the statement that began the hold and its
// caller, and a gauge while they last) and ends those past HoldLimit.
// Off, none of it exists and nothing is captured.

// holdBounds are the upper bounds of the hold-time histogram's buckets; a
// last, unbounded bucket follows.
var holdBounds = [...]time.Duration{
	100 * time.Millisecond, 500 * time.Millisecond, time.Second, 5 * time.Second, 10 * time.Second,
	30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour,
}

// HoldBounds returns the upper bounds of Stats.HoldTimes' buckets
// (Prometheus' "le"), 0.1 s to 1 h; a last, unbounded bucket follows.
// The slice is the caller's.
func HoldBounds() []time.Duration { return slices.Clone(holdBounds[:]) }

// holdWatch watches a connector's holds; nil when both bounds are 0.
type holdWatch struct {
	warn, limit time.Duration
	emit        func(health.Event)

	mu    sync.Mutex
	holds map[*holdRec]struct{}

	long    atomic.Int64 // holds past warn now
	buckets [len(holdBounds) + 1]atomic.Uint64
	sum     atomic.Int64 // nanoseconds
	stop    chan struct{}
	done    chan struct{}
}

// holdRec is one hold. Its fields but the flags are set before it is
// registered and not changed after.
type holdRec struct {
	w     *holdWatch
	start time.Time
	what  string // "a transaction" or "a result set"
	stmt  string // the statement that began it, quoted
	node  string
	pcs   [32]uintptr // its caller's stack (runtime.Callers), database/sql's and rwshard's frames first
	npc   int
	bc    *backendConn // to close at the limit; nil: none known
	guard *txGuard     // a transaction's: the limit expires it there
	// warned, limited: reported past warn, ended at the limit (h.mu).
	warned, limited bool
	cut             atomic.Bool // the limit closed its connection
}

func newHoldWatch(warn, limit time.Duration, emit func(health.Event)) *holdWatch {
	if warn <= 0 && limit <= 0 {
		return nil
	}
	h := &holdWatch{warn: warn, limit: limit, emit: emit, holds: map[*holdRec]struct{}{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go h.run()
	return h
}

// begin registers a hold begun now by stmt on node's connection bc.
func (h *holdWatch) begin(what, stmt, node string, bc *backendConn, g *txGuard) *holdRec {
	r := &holdRec{w: h, start: time.Now(), what: what, stmt: quote(stmt), node: node, bc: bc, guard: g}
	r.npc = runtime.Callers(2, r.pcs[:])
	h.mu.Lock()
	h.holds[r] = struct{}{}
	h.mu.Unlock()
	return r
}

// finish ends a hold: its time goes to the histogram.
func (r *holdRec) finish() {
	h := r.w
	d := time.Since(r.start)
	h.mu.Lock()
	delete(h.holds, r)
	warned := r.warned
	h.mu.Unlock()
	if warned {
		h.long.Add(-1)
	}
	h.buckets[bucketIn(holdBounds[:], d)].Add(1)
	h.sum.Add(int64(d))
}

// run looks at the holds a few times per bound until close.
func (h *holdWatch) run() {
	defer close(h.done)
	every := h.warn
	if h.limit > 0 && (every <= 0 || h.limit < every) {
		every = h.limit
	}
	t := time.NewTicker(min(max(every/4, 10*time.Millisecond), time.Second))
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case now := <-t.C:
			h.scan(now)
		}
	}
}

// scan reports the holds past warn and ends those past the limit.
func (h *holdWatch) scan(now time.Time) {
	var events []health.Event
	h.mu.Lock()
	for r := range h.holds {
		age := now.Sub(r.start)
		if h.warn > 0 && age >= h.warn && !r.warned {
			r.warned = true
			h.long.Add(1)
			events = append(events, health.Event{Kind: health.LongHold, Node: r.node,
				Detail: fmt.Sprintf("%s held a connection for %v (rwshard.holdWarn %v), begun by %q%s",
					r.what, age.Round(time.Millisecond), h.warn, r.stmt, r.caller())})
		}
		if h.limit > 0 && age >= h.limit && !r.limited && r.end() {
			r.limited = true
			events = append(events, health.Event{Kind: health.LongHold, Node: r.node, Err: ErrHoldLimit,
				Detail: fmt.Sprintf("%s held a connection for %v: closed at rwshard.holdLimit %v, begun by %q%s",
					r.what, age.Round(time.Millisecond), h.limit, r.stmt, r.caller())})
		}
	}
	h.mu.Unlock()
	for _, e := range events {
		h.emit(e)
	}
}

// end closes the hold's connection at the limit; false while a statement
// of its transaction runs (it is not cut: the next look tries again).
func (r *holdRec) end() bool {
	if r.guard != nil && !r.guard.state.CompareAndSwap(guardIdle, guardLimited) {
		return false // running a statement, or over: the next look sees
	}
	r.cut.Store(true)
	if r.bc != nil {
		r.bc.interrupt()
	}
	return true
}

// caller is " at file:line" of the first frame outside database/sql and
// rwshard, or "" when there is none.
func (r *holdRec) caller() string {
	frames := runtime.CallersFrames(r.pcs[:r.npc])
	for {
		f, more := frames.Next()
		if f.Function != "" && !internalFrame(f.Function) {
			return fmt.Sprintf(" at %s:%d", f.File, f.Line)
		}
		if !more {
			return ""
		}
	}
}

// internalFrame reports a function of the runtime, database/sql or
// rwshard's own packages (not its tests' or its users').
func internalFrame(fn string) bool {
	for _, p := range []string{"runtime.", "database/sql.", "github.com/rwshard/rwshard.", "github.com/rwshard/rwshard/shard.",
		"github.com/rwshard/rwshard/internal/"} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// close stops the watch.
func (h *holdWatch) close() {
	if h == nil {
		return
	}
	close(h.stop)
	<-h.done
}

// snapshot is the histogram of hold times.
func (h *holdWatch) snapshot() Histogram { return snapshotOf(h.buckets[:], &h.sum) }

// add sums o into s (the clusters of a sharded connector).
func (s *Histogram) add(o Histogram) {
	if s.Counts == nil {
		s.Counts = make([]uint64, len(o.Counts))
	}
	for i, v := range o.Counts {
		s.Counts[i] += v
	}
	s.Sum += o.Sum
	s.Count += o.Count
}
