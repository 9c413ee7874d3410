package route

import (
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/router"
)

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
	Reason router.Reason
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
		return Decision{Target: ToSession, Reason: router.ReasonInTransaction}
	case s.Pinned:
		return Decision{Target: ToSession, Reason: router.ReasonSessionPinned}
	case c.Effect&(Pin|TxBegin|AutocommitOff) != 0:
		return Decision{Target: ToPrimary, Reason: kindReason(c.Kind), Pin: true}
	case h.Route == hint.PrimaryOnly:
		return Decision{Target: ToPrimary, Reason: router.ReasonHintPrimary}
	case h.Route == hint.NodeOnly:
		return Decision{Target: ToNode, Node: h.Node, Reason: router.ReasonHintNode}
	case c.Kind == Read:
		return Decision{Target: ToReplica, Reason: router.ReasonReplica}
	default:
		return Decision{Target: ToPrimary, Reason: kindReason(c.Kind)}
	}
}

func kindReason(k Kind) router.Reason {
	switch k {
	case Write:
		return router.ReasonWrite
	case LockingRead:
		return router.ReasonLockingRead
	case SessionRead:
		return router.ReasonSessionRead
	case Read:
		return router.ReasonReplica
	default:
		return router.ReasonUnknown
	}
}
