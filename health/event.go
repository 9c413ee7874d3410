package health

import (
	"fmt"
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
	LongHold                                // a logical connection held a backend connection (transaction, open rows) longer than Config.HoldWarn, or HoldLimit ended it

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
	SessionPinned: "session-pinned", LongHold: "long-hold",
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
