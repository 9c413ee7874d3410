package rwshard

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard/internal/route"
	"github.com/rwshard/rwshard/router"
)

// outcome is what became of one attempt to run a statement on a backend
// connection. judge is the one place that decides it: retries, replay,
// read-your-writes, metrics, tracing and the error the caller gets all
// read its answer.
type outcome uint8

const (
	ranOK       outcome = iota
	notSent             // nothing reached the server: no connection, or the driver proved it (driver.ErrBadConn)
	refused             // the server refused it before running it: read-only, access denied, unknown database
	serverError         // the server ran it, or tried to, and returned an error
	broke               // it was sent and the connection broke before the answer: it may have run
	canceled            // the caller's context ended
)

var outcomeNames = [...]string{"ok", "not-sent", "refused", "server-error", "broke", "canceled"}

func (o outcome) String() string { return outcomeNames[o] }

// judge classifies the error of one attempt made with the caller's ctx.
// A nil error is ranOK, at the cost of one comparison.
func judge(ctx context.Context, err error) outcome {
	if err == nil {
		return ranOK
	}
	return judgeErr(ctx, err)
}

// judgeErr is judge for a failed attempt.
func judgeErr(ctx context.Context, err error) outcome {
	if errors.Is(err, errConnect) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, ErrBrokenConnection) ||
		errors.Is(err, errPoolClosed) {
		return notSent
	}
	if ctx.Err() != nil {
		return canceled
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		if refusedNumber(me.Number) {
			return refused
		}
		return serverError
	}
	var ne net.Error
	if errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, errInterrupted) || errors.As(err, &ne) {
		return broke
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The driver's own context (a probe's, a connect timeout's), not
		// the caller's: the connection is gone with it.
		return broke
	}
	return serverError
}

// refusedNumber reports the server errors that refuse a statement before
// it runs: a read-only server (1290, 1836), a node not yet ready
// (1047, a Galera node outside the primary component), and the answers
// at connect that waiting would not change (access denied, unknown
// database or variable, authentication method).
func refusedNumber(n uint16) bool {
	switch n {
	case 1290, 1836, 1047,
		1044, 1045, 1698, 1049, 1193, 1231, 1251, 1275:
		return true
	}
	return false
}

// readOnlyRejection reports a statement the server refused because it is
// read-only (1836 ER_READ_ONLY_MODE; 1290 ER_OPTION_PREVENTS_STATEMENT
// naming --read-only or --super-read-only, not another option such as
// --secure-file-priv): it did not run.
func readOnlyRejection(err error) bool {
	if err == nil {
		return false
	}
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	return me.Number == 1836 || me.Number == 1290 && strings.Contains(me.Message, "read-only")
}

// serverErrno is the number of the MySQL server error in err's chain, 0
// if there is none. A nil error costs nothing (errors.As's target would
// escape: one allocation per successful statement).
func serverErrno(err error) uint16 {
	if err == nil {
		return 0
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// isBadConn reports a driver error that proves the statement was not sent.
func isBadConn(err error) bool { return errors.Is(err, driver.ErrBadConn) }

// isWrite: statements that may change data or server state. Unknown
// counts as a write.
func isWrite(k route.Kind) bool { return k == route.Write || k == route.Unknown }

// changesData reports a statement that may change data, and so whose
// outcome matters when its connection breaks under it and whose success
// read-your-writes records: a write, but not a SET of session or user
// variables only (PrimaryState, ReplayState, UserVars), a temporary
// table's creation or removal, nor the start of a transaction, which
// commit nothing.
func changesData(cls *route.Class) bool {
	return isWrite(cls.Kind) && cls.Effect&(route.PrimaryState|route.ReplayState|route.UserVars) == 0 &&
		cls.Effect != route.TxBegin && cls.Effect != route.TempTable
}

// mayHaveRun reports an attempt that may have changed data although it
// failed: sent, and then its connection broke or its caller gave up.
func (o outcome) mayHaveRun() bool { return o == broke || o == canceled }

// connectionFailed reports an attempt whose node or network failed rather
// than the statement: health counts it against the node.
func (o outcome) connectionFailed() bool { return o == notSent || o == broke }

// Errors. A RouteError names the node, the route's reason and the
// statement once; its Err is the cause, without another RouteError in
// between (bare strips one), so that each fact is said once.

// errInterrupted: health took the node out of rotation while the
// statement ran there, and rwshard closed its connection (see
// cluster.interrupt).
var errInterrupted = errors.New("interrupted: the node went out of rotation")

// errNotCaughtUp: a causal read's replica did not apply the session's GTID
// in time; the read goes to the primary.
var errNotCaughtUp = errors.New("replica did not reach the session's GTID in time")

// bare is err as the cause of one of rwshard's errors: without the
// RouteError around it, if it has one, and never driver.ErrBadConn, which
// would have database/sql run the statement again (rwshard already did
// what could be done): its text is kept, not its identity.
func bare(err error) error {
	var re *RouteError
	if errors.As(err, &re) && re.Err != nil {
		err = re.Err
	}
	if errors.Is(err, driver.ErrBadConn) {
		return errors.New(err.Error())
	}
	return err
}

// routeErr is the error of statement q, routed for reason, on node
// (which may be nil), caused by err.
func routeErr(n *node, reason router.Reason, q string, err error) *RouteError {
	e := &RouteError{Reason: reason.String(), Statement: quote(q), Err: bare(err)}
	if n != nil {
		e.Node = n.name
	}
	return e
}

// outcomeUnknown is the error of a statement that may have changed data
// and whose connection broke after it was sent.
func outcomeUnknown(n *node, reason router.Reason, q string, err error) *RouteError {
	return routeErr(n, reason, q, fmt.Errorf("%w: %w", ErrOutcomeUnknown, bare(err)))
}

// connectErr wraps a failure to open a connection to a node: nothing was
// sent.
func connectErr(err error) error { return fmt.Errorf("%w: %w", errConnect, err) }
