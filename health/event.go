package health

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// EventKind names what happened.
type EventKind uint8

const (
	NodeDown           EventKind = iota + 1 // probes or traffic failed: out of rotation
	NodeUp                                  // probes succeed again: back in rotation
	Fenced                                  // replica over the lag limit, or replication stopped
	Unfenced                                // replica within the lag limit again
	PrimaryLost                             // no writable primary: writes pause, then fail
	PrimaryFound                            // a writable primary is known again
	SwitchoverFollowed                      // another node became the writable primary
	SplitBrain                              // more than one writable node: writes refused
	FallbackToPrimary                       // no replica qualified: a read went to the primary
	ReadRetried                             // a read failed on one node and was retried on another
	LongTransaction                         // a transaction is older than Config.TxWarnAge
	TxIdleTimeout                           // an idle transaction was rolled back (Config.TxIdleTimeout)
	TxReplayed                              // a transaction whose connection was lost was replayed (Config.TxReplay)
	ReplayRefused                           // a transaction could not be replayed: it failed
	ReadWithoutPrimary                      // the primary was away: a read went to the most advanced replica without its scope's last write known there
	SessionPinned                           // a logical connection went back to database/sql's pool pinned to the primary (rwshard.resetSession=false)

	// NumEventKinds bounds the kinds, for arrays of counters.
	NumEventKinds
)

// EventKinds lists every kind.
func EventKinds() []EventKind {
	out := make([]EventKind, 0, NumEventKinds-1)
	for k := NodeDown; k < NumEventKinds; k++ {
		out = append(out, k)
	}
	return out
}

var kindNames = map[EventKind]string{
	NodeDown: "node-down", NodeUp: "node-up", Fenced: "fenced", Unfenced: "unfenced",
	PrimaryLost: "primary-lost", PrimaryFound: "primary-found", SwitchoverFollowed: "switchover-followed",
	SplitBrain: "split-brain", FallbackToPrimary: "fallback-to-primary", ReadRetried: "read-retried",
	LongTransaction: "long-transaction", TxIdleTimeout: "tx-idle-timeout",
	TxReplayed: "tx-replayed", ReplayRefused: "replay-refused", ReadWithoutPrimary: "read-without-primary",
	SessionPinned: "session-pinned",
}

func (k EventKind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event is one thing an operator may want to know. Repeats of the same
// kind, node and error code within the aggregation window are delivered
// once more at the end of the window with Count set to the number of
// repeats, not once per request.
type Event struct {
	Kind   EventKind
	Node   string
	Time   time.Time
	Err    error  // cause, if any
	Code   uint16 // MySQL error number of the cause, if any
	Detail string
	// Count is 1 for a first occurrence, and the number of repeats folded
	// into this event for a summary delivered at the end of a window.
	Count int
}

func (e Event) String() string {
	s := e.Kind.String()
	if e.Node != "" {
		s += " " + e.Node
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if e.Count > 1 {
		s += fmt.Sprintf(" (×%d)", e.Count)
	}
	return s
}

// Observer receives events. It is called from one goroutine, in order;
// a slow observer delays later events, never statements.
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

func (f ObserverFunc) Observe(e Event) { f(e) }

// aggregator folds repeats of an event per window and delivers events to
// the observer from its own goroutine.
type aggregator struct {
	window time.Duration
	now    func() time.Time
	out    chan Event

	mu      sync.Mutex
	open    map[aggKey]*aggEntry
	dropped int
	closed  bool

	counts [NumEventKinds]atomic.Uint64 // every event emitted, repeats included
}

type aggKey struct {
	kind EventKind
	node string
	code uint16
}

type aggEntry struct {
	start   time.Time
	repeats int
	last    Event
}

func newAggregator(window time.Duration, now func() time.Time) *aggregator {
	return &aggregator{window: window, now: now, out: make(chan Event, 256), open: map[aggKey]*aggEntry{}}
}

// emit records an event: delivered now if it is the first of its key in
// the window, counted otherwise.
func (a *aggregator) emit(e Event) {
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

func summary(ent *aggEntry) Event {
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
func (a *aggregator) sendLocked(e Event) {
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
func (a *aggregator) deliver(o Observer) {
	for e := range a.out {
		if o != nil {
			o.Observe(e)
		}
	}
}
