package rwshard

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/router"
)

// Dispatch of statements that do not run on the logical connection's own
// session: reads to replicas (health, lag and consistency rules, one retry
// elsewhere), writes to the primary (paused while it is away, followed
// through a switchover).

// outcome is what running a statement on a backend connection produced.
type outcome struct {
	rows driver.Rows
	st   driver.Stmt // one-off statement to close after rows
	res  driver.Result
}

// work runs a statement on a backend connection and leaves what it
// produced where its maker reads it (an outcome the closure captured): the
// layers between them pass no result back up. (They returned an outcome by
// value once, four interfaces copied at every layer, which cost more than
// the routing between them; a pointer to it passed through the call of a
// func value would escape to the heap, one allocation per statement.)
type work func(driver.Conn) error

// onNode runs do on a backend connection of n, retrying on fresh
// connections while the driver proves the statement was not sent. On
// success the connection stays checked out and is returned. A failure to
// connect wraps errConnect: nothing was sent.
func onNode(ctx context.Context, n *node, d router.Decision, q string, vars *sessionVars, do work) (*backend, error) {
	for attempt := 0; ; attempt++ {
		b, err := n.acquire(ctx)
		if err != nil {
			if refused(err) {
				return nil, err // the server answered: its error, as go-sql-driver returns it
			}
			return nil, &RouteError{Node: n.name, Reason: d.Reason.String(), Statement: quote(q),
				Err: fmt.Errorf("%w: %w", errConnect, err)}
		}
		start := monotonic()
		if vars != nil { // nil: rwshard's own statement, whatever the settings
			err = b.applyVars(ctx, vars)
		}
		if err == nil {
			err = do(b.dc)
		}
		if err == nil {
			n.observe(start)
			n.h.Success()
			if !n.reached.Load() { // a store would take the cache line from every other core
				n.reached.Store(true)
			}
			return b, nil
		}
		bad := isBadConn(err)
		interrupted := false
		if b.bc != nil {
			interrupted = b.bc.interrupted.Load()
		}
		b.release(bad)
		if interrupted {
			return nil, &RouteError{Node: n.name, Reason: d.Reason.String(), Statement: quote(q),
				Err: fmt.Errorf("%w: %w", errInterrupted, err)}
		}
		if !bad {
			return nil, err // the server's own error, unwrapped
		}
		if attempt == maxBadConnRetries {
			return nil, &RouteError{Node: n.name, Reason: d.Reason.String(), Statement: quote(q), Err: ErrBrokenConnection}
		}
	}
}

// onNode runs a statement of the caller's on n (see onNode), recording
// that it reached n and any error n's server returned.
func (c *conn) onNode(ctx context.Context, n *node, d router.Decision, q string, do work) (*backend, error) {
	c.reached(n)
	b, err := onNode(ctx, n, d, q, &c.vars, do)
	if err != nil {
		n.meters.serverError(err)
	}
	return b, err
}

// errInterrupted: health took the node out of rotation while the
// statement ran there, and rwshard closed its connection (see
// cluster.interrupt).
var errInterrupted = errors.New("interrupted: the node went out of rotation")

// notSent reports an error that proves the statement never reached the
// server: no connection could be made.
func notSent(err error) bool { return errors.Is(err, errConnect) }

// refused reports a server that answered and refused: a wrong password,
// an unknown database or system variable in the DSN, access denied. The
// caller gets that error at once; waiting would not change the answer.
func refused(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case 1044, 1045, 1698, // access denied: database, user, plugin
		1049,       // unknown database
		1193, 1231, // unknown system variable, a value it cannot take
		1251, 1275: // authentication method
		return true
	}
	return false
}

// connectCause is the cause of an errConnect error, unwrapped.
func connectCause(err error) error {
	var re *RouteError
	if errors.As(err, &re) {
		if m, ok := re.Err.(interface{ Unwrap() []error }); ok {
			if errs := m.Unwrap(); len(errs) == 2 && errs[0] == errConnect {
				return errs[1]
			}
		}
	}
	return err
}

// everReached reports a node that answered once, a probe or a statement.
// A primary that never did is not away but misconfigured or unreachable
// from the start: statements for it fail at once with the cause, as
// go-sql-driver's do, instead of waiting WritePause for it to come back.
func (n *node) everReached() bool { return n.reached.Load() || n.h.Probed() }

// connectionClass reports an error that says the node or the network
// failed, rather than the statement; false when the caller's context ended.
func connectionClass(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var ne net.Error
	return notSent(err) || errors.Is(err, ErrBrokenConnection) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.As(err, &ne)
}

// sentAndBroke reports a connection that broke after the statement was
// sent (go-sql-driver's ErrInvalidConn, EOF, a network error, an
// interrupted socket), as opposed to driver.ErrBadConn or a connect
// failure, which prove it was not sent; false when the caller's context
// ended.
func sentAndBroke(ctx context.Context, err error) bool {
	return connectionClass(ctx, err) && !isBadConn(err) && !notSent(err) && !errors.Is(err, ErrBrokenConnection)
}

// outcomeUnknown is the error of a write whose connection broke after it
// was sent.
func outcomeUnknown(node string, d router.Decision, q string, err error) error {
	var re *RouteError
	if errors.As(err, &re) {
		err = re.Err // one node, reason and statement in the message
	}
	return &RouteError{Node: node, Reason: d.Reason.String(), Statement: quote(q), Err: fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)}
}

// readOnlyRejection reports a write the server refused because it is
// read-only (1290 ER_OPTION_PREVENTS_STATEMENT, 1836 ER_READ_ONLY_MODE):
// it did not run.
func readOnlyRejection(err error) bool {
	n := serverErrno(err)
	return n == 1290 || n == 1836
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

// isWrite: statements that may change data. Unknown counts as a write.
func isWrite(k router.Kind) bool { return k == router.Write || k == router.Unknown }

// changesData reports a statement whose success read-your-writes must
// record: a write, but not a SET of session variables only (PrimaryState,
// ReplayState), which commits nothing.
func changesData(cls *router.Class) bool {
	return isWrite(cls.Kind) && cls.Effect&(router.PrimaryState|router.ReplayState) == 0
}

// filter builds the read rules for one statement.
func (c *conn) filter(ctx context.Context, h hint.Hint) readFilter {
	cfg := c.cl.cfg
	f := readFilter{maxLag: h.MaxLag, window: cfg.SessionWindow, probing: c.cl.probing, pool: c.cl.poolOf(h.Pool)}
	if h.Route == hint.ReplicaOK || cfg.Consistency == ConsistencyEventual {
		return f
	}
	s := c.scope(ctx)
	name := c.cl.partOf(s)
	causal := cfg.Consistency == ConsistencyCausal
	if s == &c.cl.global && causal {
		c.collect(ctx)
	}
	var unknown bool
	f.since, f.gtid, unknown = s.rule(name)
	if causal && unknown && c.cl.position(ctx, s, name) {
		// A write's GTID could not be read: the primary's position,
		// read now, covers it.
		f.since, f.gtid, unknown = s.rule(name)
	}
	if !causal {
		f.gtid = health.GTIDSet{}
	}
	if !f.since.IsZero() {
		f.now = time.Now()
	}
	return f
}

// dispatch runs a statement that is not bound to the session: on a
// replica for a read, on the primary otherwise. It returns the checked-out
// backend; the caller releases or keeps it.
// The final reason (a read may fall back to the primary) is left in d.
func (c *conn) dispatch(ctx context.Context, r *routed, q string, do work) (*backend, error) {
	d := &r.d
	switch d.Target {
	case router.ToNode:
		n, err := c.cl.namedNode(r.cls, *d, q)
		if err != nil {
			return nil, err
		}
		if !c.cl.isPrimary(n) {
			return c.onNode(ctx, n, *d, q, do)
		}
	case router.ToReplica:
		return c.dispatchRead(ctx, d, r.h, q, do)
	}
	return c.dispatchPrimary(ctx, r.cls, *d, q, do)
}

// errNotCaughtUp: a causal read's replica did not apply the session's GTID
// in time; the read goes to the primary.
var errNotCaughtUp = errors.New("replica did not reach the session's GTID in time")

// dispatchRead picks a replica under the health and consistency rules and
// runs the read there. If it fails with a connection-class error before
// returning rows it is retried once on another node, within the retry
// budget. With no qualifying replica it falls back to the primary
// (counted, reported) or fails, as configured.
func (c *conn) dispatchRead(ctx context.Context, d *router.Decision, h hint.Hint, q string, do work) (*backend, error) {
	f := c.filter(ctx, h)
	n, wait, err := c.pickForRead(&f, d, q)
	if err != nil {
		return nil, err
	}
	b, err := c.onNode(ctx, n, *d, q, c.withWait(ctx, n, wait, do))
	if err == nil {
		return b, nil
	}
	switch {
	case errors.Is(err, errNotCaughtUp):
		d.Reason = router.ReasonReadYourWrites
		return c.dispatchPrimary(ctx, router.Class{Kind: router.Read}, *d, q, do)
	case readOnlyRejection(err) && !c.cl.isPrimary(n):
		// The read writes (a stored function): the replica refused it, so
		// it did not run. It runs on the primary, now and from now on.
		c.cl.rememberPrimaryOnly(q)
		d.Reason = router.ReasonStoredFunction
		return c.dispatchPrimary(ctx, router.Class{Kind: router.Write}, *d, q, do)
	case !connectionClass(ctx, err):
		return nil, err
	}
	c.cl.mon.Failure(n.index, err)
	n.errors.Add(1)
	// A read rwshard itself interrupted is retried whatever the budget:
	// the node is out, and the read had no answer yet.
	if !errors.Is(err, errInterrupted) && !c.cl.budget.Retry(time.Now()) {
		return nil, err
	}
	c.cl.mon.Emit(health.Event{Kind: health.ReadRetried, Node: n.name, Err: err})
	n.retries.Add(1)
	c.retried = true
	f.exclude = n
	if n, wait, err = c.pickForRead(&f, d, q); err != nil {
		return nil, err
	}
	return c.onNode(ctx, n, *d, q, c.withWait(ctx, n, wait, do))
}

// pickForRead chooses the node for a read. For a causal read with no
// replica known to have the session's GTID, it may pick a healthy replica
// and return the GTID to wait for there (CausalWaitOnReplica).
func (c *conn) pickForRead(f *readFilter, d *router.Decision, q string) (*node, health.GTIDSet, error) {
	if f.pool < 0 {
		return nil, health.GTIDSet{}, c.cl.unknownPool(q)
	}
	n, anyHealthy := c.cl.pickReader(f)
	if n == nil && f.poolUnavailable(anyHealthy) {
		toPrimary, err := c.cl.poolFallback(f, q)
		if err != nil {
			return nil, health.GTIDSet{}, err
		}
		if toPrimary {
			d.Reason = router.ReasonNoHealthyReplica
			return c.cl.primary(), health.GTIDSet{}, nil
		}
		n, anyHealthy = c.cl.pickReader(f)
	}
	if n != nil {
		return n, health.GTIDSet{}, nil
	}
	if anyHealthy && !f.gtid.IsZero() && c.cl.cfg.CausalWait == CausalWaitOnReplica {
		if n = c.cl.closest(f); n != nil {
			return n, f.gtid, nil
		}
	}
	reason, err := c.cl.readFallback(f, anyHealthy, q)
	if err != nil {
		return nil, health.GTIDSet{}, err
	}
	d.Reason = reason
	if reason == router.ReasonNoHealthyReplica {
		c.cl.mon.Emit(health.Event{Kind: health.FallbackToPrimary, Node: c.cl.primary().name, Detail: "no replica qualified"})
	}
	return c.cl.primary(), health.GTIDSet{}, nil
}

// readFallback says why a read for which no replica qualifies goes to the
// primary: replicas are healthy but too far behind (the session's last
// write, or the hint's lag bound), or none is healthy; or it refuses the
// read when configured to (FallbackError).
func (cl *cluster) readFallback(f *readFilter, anyHealthy bool, q string) (router.Reason, error) {
	switch {
	case anyHealthy && f.since.IsZero() && f.gtid.IsZero():
		return router.ReasonMaxLag, nil
	case anyHealthy:
		return router.ReasonReadYourWrites, nil
	case cl.starting():
		return router.ReasonStarting, nil
	case cl.cfg.Fallback == FallbackError:
		return 0, &RouteError{Reason: router.ReasonNoHealthyReplica.String(), Statement: quote(q), Err: ErrNoReplica}
	}
	return router.ReasonNoHealthyReplica, nil
}

// namedNode resolves a hint.Node decision: the node must exist, and only a
// read may go to a replica.
func (cl *cluster) namedNode(cls router.Class, d router.Decision, q string) (*node, error) {
	n := cl.byName[d.Node]
	if n == nil {
		return nil, &RouteError{Node: d.Node, Reason: d.Reason.String(), Statement: quote(q),
			Err: fmt.Errorf("%w; nodes: %s", ErrUnknownNode, nodeNames(cl.cfg.Nodes))}
	}
	if !cl.isPrimary(n) && cls.Kind != router.Read {
		return nil, &RouteError{Node: n.name, Reason: cls.Kind.String(), Statement: quote(q), Err: ErrWriteToReplica}
	}
	return n, nil
}

// withWait makes do wait on replica n until it has applied gtid, up to
// CausalTimeout; errNotCaughtUp if it does not. A wait that succeeds is
// remembered (node.applied): the next reads for that position need none.
func (c *conn) withWait(ctx context.Context, n *node, gtid health.GTIDSet, do work) work {
	if gtid.IsZero() {
		return do
	}
	return func(dc driver.Conn) error {
		q := "SELECT MASTER_GTID_WAIT(?, ?)"
		if _, mysqlSet := gtid.MySQL(); mysqlSet {
			q = "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)"
		}
		args := []driver.NamedValue{{Ordinal: 1, Value: gtid.String()}, {Ordinal: 2, Value: c.cl.cfg.CausalTimeout.Seconds()}}
		start := monotonic()
		v, err := queryValue(ctx, dc, q, args)
		if err != nil {
			return err
		}
		took := monotonic() - start
		c.waited += took
		caught := fmt.Sprint(v) == "0"
		n.meters.wait(took, caught)
		if !caught {
			return errNotCaughtUp
		}
		n.applied(gtid)
		return do(dc)
	}
}

// dispatchPrimary runs a statement on the primary. While there is no
// usable primary (down, read-only, being switched over) it waits up to
// WritePause for one, without sending anything; then it fails with
// ErrPrimaryUnavailable wrapping the cause. A write rejected because the
// node turned read-only did not run: rwshard has the topology rediscovered
// and retries it once on the new primary.
func (c *conn) dispatchPrimary(ctx context.Context, cls router.Class, d router.Decision, q string, do work) (*backend, error) {
	deadline := clockBase.Add(monotonic() + c.cl.cfg.WritePause) // time.Now().Add, monotonic only
	var cause error
	retried := false
	for {
		n, err := c.waitPrimary(ctx, deadline, d, q, cause)
		if err != nil {
			return nil, err
		}
		b, err := c.onNode(ctx, n, d, q, do)
		switch {
		case err == nil:
			return b, nil
		case notSent(err) && !n.everReached():
			return nil, connectCause(err)
		case notSent(err) && ctx.Err() == nil:
			c.cl.mon.Failure(n.index, err)
			n.errors.Add(1)
		case readOnlyRejection(err) && !retried && isWrite(cls.Kind):
			retried = true
			c.cl.mon.ReadOnly(n.index)
		case isWrite(cls.Kind) && sentAndBroke(ctx, err):
			c.cl.mon.Failure(n.index, err)
			return nil, outcomeUnknown(n.name, d, q, err)
		default:
			return nil, err
		}
		cause = err
		left := time.Until(deadline)
		if left <= 0 {
			return nil, c.unavailable(n, d, q, cause)
		}
		c.cl.mon.Kick()
		// Wait for news from the probes, not in a loop of connects.
		if err := c.awaitNews(ctx, min(left, c.cl.cfg.ProbeInterval/4)); err != nil {
			return nil, err
		}
	}
}

// waitPrimary returns the primary once it is usable, waiting for the
// monitor's news until deadline.
func (c *conn) waitPrimary(ctx context.Context, deadline time.Time, d router.Decision, q string, cause error) (*node, error) {
	for {
		i, ok := c.cl.mon.Primary()
		if c.cl.mon.SplitBrain() {
			return nil, &RouteError{Reason: d.Reason.String(), Statement: quote(q), Err: ErrSplitBrain}
		}
		if ok {
			return c.cl.nodes[i], nil
		}
		n := c.cl.nodes[i]
		last := n.h.LastError()
		if last != nil && (refused(last) || !n.everReached()) {
			return nil, last // refused, or never reachable: at once, as go-sql-driver
		}
		left := time.Until(deadline)
		if left <= 0 {
			switch {
			case cause != nil:
			case last != nil:
				cause = last
			default:
				cause = fmt.Errorf("%s is not a usable primary (read-only or replicating)", n.name)
			}
			return nil, c.unavailable(n, d, q, cause)
		}
		if err := c.awaitNews(ctx, left); err != nil {
			return nil, err
		}
	}
}

// awaitNews waits up to wait for the monitor to report a change of the
// primary; it fails only when ctx ends.
func (c *conn) awaitNews(ctx context.Context, wait time.Duration) error {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-c.cl.mon.Changed():
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// unavailable is the error of a statement for the primary that waited
// WritePause for a usable one; n is the node last taken as primary.
func (c *conn) unavailable(n *node, d router.Decision, q string, cause error) error {
	return &RouteError{Node: n.name, Reason: d.Reason.String(), Statement: quote(q),
		Err: fmt.Errorf("%w after waiting %s: %w", ErrPrimaryUnavailable, c.cl.cfg.WritePause, cause)}
}
