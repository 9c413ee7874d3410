package router

import "github.com/rwshard/rwshard/hint"

// Target is the kind of node a statement goes to.
type Target uint8

const (
	// ToPrimary is the zero value: when in doubt, the primary.
	ToPrimary Target = iota
	// ToReplica lets the balancer pick a replica.
	ToReplica
	// ToNode sends the statement to the node named in Decision.Node.
	ToNode
	// ToSession runs the statement on the logical connection's own backend
	// connection: its transaction or its pinned session.
	ToSession
)

// Reason says why a statement went where it went. Reasons are what
// Explain, route logs and metrics show.
type Reason uint8

const (
	ReasonUnknown          Reason = iota // unclassifiable statement: primary
	ReasonWrite                          // DML, DDL, SET, transaction control, …
	ReasonLockingRead                    // SELECT … FOR UPDATE / FOR SHARE / LOCK IN SHARE MODE
	ReasonSessionRead                    // LAST_INSERT_ID(), FOUND_ROWS(), lock functions, …
	ReasonInTransaction                  // inside a transaction: its connection
	ReasonSessionPinned                  // session state was changed: its connection
	ReasonHintPrimary                    // hint.Primary or /* rwshard:primary */
	ReasonHintNode                       // hint.Node or /* rwshard:node=… */
	ReasonReplica                        // plain read, balanced over replicas
	ReasonReadYourWrites                 // read after a write in the session: primary
	ReasonNoHealthyReplica               // no replica qualified: fell back to the primary
	ReasonMaxLag                         // healthy replicas, none within the hint's lag bound: primary
	ReasonStarting                       // replicas not probed yet (the connector just opened): primary
	ReasonStoredFunction                 // a read calling a stored function that may write: primary
	ReasonPrimaryAway                    // a read for the primary while it is away: the most advanced replica
	ReasonTempTable                      // names a temporary table: the connection that has it
	// NumReasons is the number of reasons, for arrays of counters.
	NumReasons
)

var reasonNames = [NumReasons]string{
	ReasonUnknown:          "unknown",
	ReasonWrite:            "write",
	ReasonLockingRead:      "locking-read",
	ReasonSessionRead:      "session-read",
	ReasonInTransaction:    "in-transaction",
	ReasonSessionPinned:    "session-pinned",
	ReasonHintPrimary:      "hint-primary",
	ReasonHintNode:         "hint-node",
	ReasonReplica:          "replica",
	ReasonReadYourWrites:   "read-your-writes",
	ReasonNoHealthyReplica: "no-healthy-replica",
	ReasonMaxLag:           "max-lag",
	ReasonStarting:         "starting",
	ReasonStoredFunction:   "stored-function",
	ReasonPrimaryAway:      "primary-away",
	ReasonTempTable:        "temporary-table",
}

// String returns the reason's name, e.g. "locking-read".
func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// Reasons lists every reason, for metrics that want all series up front.
func Reasons() []Reason {
	out := make([]Reason, NumReasons)
	for i := range out {
		out[i] = Reason(i)
	}
	return out
}

// State is what the router needs to know about the logical connection.
type State struct {
	// InTx: a transaction (BeginTx or text BEGIN) is open.
	InTx bool
	// Pinned: session state was changed; the connection is pinned.
	Pinned bool
}

// Decision is where one statement goes and why.
type Decision struct {
	Target Target
	Node   string // for ToNode
	Reason Reason
	// Pin: the statement changes session state or opens a transaction; it
	// must run on a dedicated primary connection that stays with the
	// logical connection.
	Pin bool
}

// Decide routes one classified statement. It is pure: no I/O, no clock.
//
// Order of precedence: an open transaction or pinned session keeps every
// statement (hints cannot leave it); a statement that changes session
// state pins to the primary; hint primary; hint node; then the statement's
// kind: only a plain Read may go to a replica.
func Decide(c Class, h hint.Hint, s State) Decision {
	switch {
	case s.InTx:
		return Decision{Target: ToSession, Reason: ReasonInTransaction}
	case s.Pinned:
		return Decision{Target: ToSession, Reason: ReasonSessionPinned}
	case c.Effect&(Pin|TxBegin|AutocommitOff) != 0:
		return Decision{Target: ToPrimary, Reason: kindReason(c.Kind), Pin: true}
	case h.Route == hint.PrimaryOnly:
		return Decision{Target: ToPrimary, Reason: ReasonHintPrimary}
	case h.Route == hint.NodeOnly:
		return Decision{Target: ToNode, Node: h.Node, Reason: ReasonHintNode}
	case c.Kind == Read:
		return Decision{Target: ToReplica, Reason: ReasonReplica}
	default:
		return Decision{Target: ToPrimary, Reason: kindReason(c.Kind)}
	}
}

func kindReason(k Kind) Reason {
	switch k {
	case Write:
		return ReasonWrite
	case LockingRead:
		return ReasonLockingRead
	case SessionRead:
		return ReasonSessionRead
	case Read:
		return ReasonReplica
	default:
		return ReasonUnknown
	}
}
