package monitor

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rwshard/rwshard/health"
)

// aggregator folds repeats of an event per window and delivers events to
// the observer from its own goroutine.
type aggregator struct {
	window time.Duration
	now    func() time.Time
	out    chan health.Event

	mu      sync.Mutex
	open    map[aggKey]*aggEntry
	dropped int
	closed  bool

	counts [health.NumEventKinds]atomic.Uint64 // every event emitted, repeats included
}

type aggKey struct {
	kind health.EventKind
	node string
	code uint16
}

type aggEntry struct {
	start   time.Time
	repeats int
	last    health.Event
}

func newAggregator(window time.Duration, now func() time.Time) *aggregator {
	return &aggregator{window: window, now: now, out: make(chan health.Event, 256), open: map[aggKey]*aggEntry{}}
}

// emit records an event: delivered now if it is the first of its key in
// the window, counted otherwise.
func (a *aggregator) emit(e health.Event) {
	if e.Time.IsZero() {
		e.Time = a.now()
	}
	e.Count = 1
	if int(e.Kind) < len(a.counts) {
		a.counts[e.Kind].Add(1)
	}
	k := aggKey{e.Kind, e.Node, e.Code}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ent, ok := a.open[k]; ok && e.Time.Sub(ent.start) < a.window {
		ent.repeats++
		ent.last = e
		return
	}
	if ent, ok := a.open[k]; ok && ent.repeats > 0 {
		a.sendLocked(summary(ent))
	}
	a.open[k] = &aggEntry{start: e.Time, last: e}
	a.sendLocked(e)
}

// flush delivers the summaries of windows that have ended.
func (a *aggregator) flush() {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, ent := range a.open {
		if now.Sub(ent.start) < a.window {
			continue
		}
		if ent.repeats > 0 {
			a.sendLocked(summary(ent))
		}
		delete(a.open, k)
	}
}

func summary(ent *aggEntry) health.Event {
	e := ent.last
	e.Count = ent.repeats
	times := "times"
	if ent.repeats == 1 {
		times = "time"
	}
	e.Detail = fmt.Sprintf("repeated %d more %s since %s", ent.repeats, times, ent.start.Format(time.RFC3339))
	return e
}

// sendLocked queues an event; if the observer is so slow that the queue is
// full, the event is dropped and counted rather than blocking a statement.
func (a *aggregator) sendLocked(e health.Event) {
	if a.closed {
		return
	}
	select {
	case a.out <- e:
	default:
		a.dropped++
	}
}

// close ends delivery after the queued events.
func (a *aggregator) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		a.closed = true
		close(a.out)
	}
}

// deliver runs the observer until out is closed.
func (a *aggregator) deliver(o health.Observer) {
	for e := range a.out {
		if o != nil {
			o.Observe(e)
		}
	}
}
