package rwshard

import (
	"cmp"
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/internal/monitor"
	"github.com/rwshard/rwshard/internal/route"
	"github.com/rwshard/rwshard/router"
)

// The executor: it carries out a plan (plan.go). It owns connection
// checkout, the application of session variables, the one bounded retry
// loop of each kind of plan (a read moves to another node; a statement
// for the primary waits up to WritePause for one and is sent again only
// when it provably did not run or changes no data), and the hand-over to
// transaction replay. Every failed attempt is judged once (outcome.go).

// results is what running a statement on a backend connection produced.
type results struct {
	rows driver.Rows
	st   driver.Stmt // one-off statement to close after rows
	res  driver.Result
}

// work runs a statement on a backend connection and leaves what it
// produced where its maker reads it (an outcome the closure captured): the
// layers between them pass no result back up, and no pointer to one
// escapes through the call of a func value.
type work func(driver.Conn) error

// exe is one execution: a plan carried out on a logical connection, and
// what it did, which the counters, the tracer, the route log and
// read-your-writes read once it is over. It lives on the stack of the
// statement it runs.
//
// It holds no pointer to the statement's plan or work: escape analysis
// follows an exe's fields as one, so such a pointer here would move the
// plan and the work's closure to the heap with it.
type exe struct {
	c *conn
	q string
	// ran is the node it reached last: 1 + its index in the cluster's
	// nodes; 0: none.
	ran   int32
	final router.Reason // the reason it ended with: the plan's, or a fallback's
	out   outcome       // the judgement of its last attempt
	// waited is the time a causal read waited on its replica; retried
	// says a read moved to another node.
	waited  time.Duration
	retried bool
	// gen and lost are the session tracker's counts on the connection of
	// its last attempt before it ran (trackConn.mark).
	gen, lost uint64
}

// reached records n as the node the execution reached last.
func (e *exe) reached(n *node) { e.ran = int32(n.index + 1) }

// node is the node the execution reached last, or nil.
func (e *exe) node() *node {
	if e.ran == 0 {
		return nil
	}
	return e.c.cl.nodes[e.ran-1]
}

// maxBadConnRetries bounds the retries on fresh backend connections after
// the driver proved a statement was not sent (driver.ErrBadConn), as
// database/sql does.
const maxBadConnRetries = 2

// run plans and executes the statement: it returns the backend
// connection it ran on for the caller to release, or nil when it ran on
// (or now is) the held connection c.sess. p.ok is false when planning
// failed.
func (e *exe) run(ctx context.Context, p *plan, ps *stmt, out *results, do work) (b *backend, took time.Duration, err error) {
	c := e.c
	start := monotonic()
	if err = c.plan(ctx, e.q, ps, p); err != nil {
		p.ok = false
		return nil, monotonic() - start, err
	}
	e.final = p.reason
	if c.guard != nil {
		if err = c.guard.enter(c, e.q); err != nil {
			return nil, monotonic() - start, err
		}
	}
	c.cl.budget.Request() // every statement earns its share of retries
	if p.r.cls.Effect == route.ReplayState {
		b, err = e.runSet(ctx, p, out)
	} else {
		b, err = e.execute(ctx, p, do)
	}
	if c.guard != nil {
		c.guard.leave()
	}
	took = monotonic() - start
	c.cl.account(e, p, took)
	if err != nil && c.ryw {
		e.failedWrite(ctx, p)
	}
	return b, took, err
}

// execute carries out the plan. The backend it returns is the caller's
// to release; nil means the statement ran on c.sess, the connection the
// logical connection holds, which a statement run on the primary becomes
// when it held none.
func (e *exe) execute(ctx context.Context, p *plan, do work) (*backend, error) {
	c := e.c
	var b *backend
	var err error
	switch p.where {
	case toHeld:
		return nil, e.runHeld(ctx, p, do)
	case toReplicas:
		b, err = e.runRead(ctx, p, do)
	case toNode:
		var out outcome
		if b, out, err = e.attempt(ctx, p, p.node, monitor.GTIDSet{}, do); out != ranOK {
			return nil, err
		}
	default:
		b, err = e.runPrimary(ctx, p, p.reason, do)
	}
	if err != nil || b == c.sess {
		return nil, err
	}
	if c.sess == nil && c.cl.isPrimary(b.node) {
		c.sess = b // kept for the caller (see conn)
		return nil, nil
	}
	return b, nil
}

// attempt runs the statement on a connection of n, first waiting there
// for wait if it is not zero (a causal read), with the logical
// connection's session variables applied, and judges the outcome. It
// retries on fresh connections while the driver proves nothing was sent
// (a pooled connection the server closed). On success the connection
// stays checked out and is returned; a nil do only checks one out.
func (e *exe) attempt(ctx context.Context, p *plan, n *node, wait monitor.GTIDSet, do work) (*backend, outcome, error) {
	e.reached(n)
	for try := 0; ; try++ {
		b, err := n.acquire(ctx, e.c.vars.key)
		if err != nil {
			out := judge(ctx, err)
			if errors.Is(err, ErrConnBudget) {
				// The pool's limit, not the node: nothing was sent, the
				// node did not fail, and another attempt would wait again.
				if out != canceled {
					out = refused
				}
				e.out = out
				return nil, out, routeErr(n, p.reason, e.q, err)
			}
			if out != refused {
				// As go-sql-driver's: the server's refusal (a wrong
				// password, an unknown database) unwrapped, else the cause.
				if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
					// rwshard's connect timeout, not the caller's deadline,
					// which a caller would take it for.
					err = fmt.Errorf("no answer within rwshard.connectTimeout (%s)", e.c.cl.cfg.ConnectTimeout)
				}
				out, err = notSent, connectErr(err)
				n.errors.Add(1)
			}
			e.out = out
			return nil, out, err
		}
		if do == nil {
			return b, ranOK, nil
		}
		out, err := e.runOn(ctx, p, b, wait, do)
		if out == ranOK {
			return b, ranOK, nil
		}
		interrupted := b.bc != nil && b.bc.interrupted.Load()
		b.release(isBadConn(err)) // a connection the driver knows broken its pool drops (IsValid)
		switch {
		case interrupted:
			e.out = broke
			return nil, broke, fmt.Errorf("%w: %w", errInterrupted, err)
		case !isBadConn(err):
			return nil, out, err // the server's own error, unwrapped
		case try == maxBadConnRetries:
			return nil, notSent, ErrBrokenConnection
		}
	}
}

// runOn runs the statement on b, with the logical connection's session
// variables applied, after a causal wait for wait if it is not zero,
// judges its outcome and counts it on b's node.
func (e *exe) runOn(ctx context.Context, p *plan, b *backend, wait monitor.GTIDSet, do work) (outcome, error) {
	n := b.node
	e.reached(n)
	c := e.c
	if len(c.kept.capture) > 0 && b != c.sess {
		if err := c.captureVars(ctx); err != nil {
			return judge(ctx, err), err
		}
	}
	e.gen, e.lost = b.mark()
	start := monotonic()
	err := b.applyVars(ctx, &c.vars)
	if err == nil && !wait.IsZero() {
		err = e.causalWait(ctx, b, wait)
	}
	if err == nil {
		if commits := p.commits(c); commits {
			b.watch(true)
			err = do(b.dc)
			b.watch(false)
		} else {
			err = do(b.dc)
		}
	}
	out := judge(ctx, err)
	e.out = out
	if out != notSent && p.stmt {
		n.queries.Add(1)
	}
	if out == ranOK {
		n.observe(start)
		n.h.Success()
		if !n.reached.Load() { // a store would take the cache line from every other core
			n.reached.Store(true)
		}
		return ranOK, nil
	}
	n.meters.serverError(err)
	if out.connectionFailed() {
		n.errors.Add(1)
	}
	return out, err
}

// runHeld runs the statement on the held connection, taking one of the
// primary if there is none, and applies the plan's effects to the
// session when it succeeds.
func (e *exe) runHeld(ctx context.Context, p *plan, do work) error {
	c := e.c
	for again := 0; ; again++ {
		b, err := e.held(ctx, p)
		if err != nil {
			return err
		}
		if c.cl.galera && c.replay != nil && c.tx != nil && !targetOK(b, p.r.cls.Kind == route.Read) {
			// The Galera writer changed under the transaction: it moves
			// to the new writer before this statement (see writerMoved).
			if err := (*txn)(c).replayOn(ctx, errWriterMoved); err != nil {
				return err
			}
			b = c.sess
		}
		out, err := e.runOn(ctx, p, b, monitor.GTIDSet{}, do)
		if out == ranOK {
			if c.inTx() && changesData(&p.r.cls) {
				c.txWrites = true
			}
			if p.effects != 0 {
				c.applyEffects(p.effects, e.q)
			}
			return nil
		}
		retry, err := e.heldFailed(ctx, p, b, out, err)
		if !retry || again == maxBadConnRetries {
			return err
		}
	}
}

// held returns the held connection, checked if it is due (checkHeld), or
// takes a connection of the primary, waiting for one as a write does.
func (e *exe) held(ctx context.Context, p *plan) (*backend, error) {
	c := e.c
	c.checkHeld(ctx)
	if c.sess != nil {
		return c.sess, nil
	}
	b, err := e.runPrimary(ctx, p, p.reason, nil) // a checkout only
	if err != nil {
		return nil, err
	}
	c.sess = b
	return b, nil
}

// heldFailed handles the failed attempt of the statement on the held
// connection b. retry says the statement is to run again on c.sess (its
// transaction replayed there) or on a fresh connection of the primary (the
// held one, without state, was let go); otherwise err is the caller's.
func (e *exe) heldFailed(ctx context.Context, p *plan, b *backend, out outcome, err error) (retry bool, _ error) {
	c := e.c
	rejected := readOnlyRejection(err)
	switch {
	case c.replay != nil && c.tx != nil && (out.connectionFailed() || rejected || c.cl.certFailed(err)):
		// The transaction's connection is lost: rebuild it on the
		// primary and run this statement there.
		if rerr := (*txn)(c).replayOn(ctx, err); rerr != nil {
			return false, rerr
		}
		return true, nil
	case c.cl.cfg.Backend.RejectReadOnly && serverErrno(err) == 1792:
		// A write in a read-only transaction, with rejectReadOnly=true
		// in the DSN: as go-sql-driver does then, the connection is given
		// up (driver.ErrBadConn; the statement did not run) and
		// database/sql runs it on another.
		return false, c.lose()
	case !c.keep() && (out.connectionFailed() || rejected):
		// The held connection carried no state: let it go. A statement
		// that may have changed data did so or not (outcome unknown); any
		// other did not run and goes to a fresh connection.
		n := b.node
		if rejected {
			c.cl.mon.ReadOnly(n.index)
		} else {
			c.cl.mon.Failure(n.index, err)
		}
		c.sess.release(!rejected)
		c.sess = nil
		if out == broke && changesData(&p.r.cls) {
			return false, outcomeUnknown(n, p.reason, e.q, err)
		}
		return true, nil
	}
	return false, c.sessionErr(err, out, p.reason, e.q, c.commits(p))
}

// runRead runs a read on one of the plan's targets, moving to another
// when one fails before answering (within the retry budget), then to the
// fallback.
func (e *exe) runRead(ctx context.Context, p *plan, do work) (*backend, error) {
	c := e.c
	var excl nodeSet
	for p.targets&^excl != 0 {
		n := c.cl.pick(p.targets &^ excl)
		if n == nil {
			break
		}
		wait := p.wait
		if !wait.IsZero() && n.has(wait) {
			wait = monitor.GTIDSet{} // it caught up since the plan was made
		}
		b, out, err := e.attempt(ctx, p, n, wait, do)
		switch {
		case out == ranOK:
			return b, nil
		case errors.Is(err, errNotCaughtUp):
			e.final = router.ReasonReadYourWrites
			return e.readFallback(ctx, p, excl, do)
		case readOnlyRejection(err) && !c.cl.isPrimary(n):
			// The read writes (a stored function): the replica refused
			// it, so it did not run. It runs on the primary as a write,
			// now and from now on.
			c.cl.rememberPrimaryOnly(e.q)
			e.final = router.ReasonStoredFunction
			return e.runPrimary(ctx, p, router.ReasonStoredFunction, do)
		case c.cl.notPrimaryComponent(err):
			// The Galera node left the Primary component since its last
			// probe: the read did not run, so it moves on whatever the
			// budget, and the node is probed now.
			c.cl.mon.Kick()
		case !out.connectionFailed():
			return nil, err // the server's answer, or the caller's context
		default:
			c.cl.mon.Failure(n.index, err)
			// A read rwshard itself interrupted is retried whatever the
			// budget: the node is out, and the read had no answer yet.
			if !errors.Is(err, errInterrupted) && !c.cl.budget.Retry(time.Now()) {
				return nil, routeErr(n, e.final, e.q, err)
			}
		}
		c.cl.mon.Emit(health.Event{Kind: health.ReadRetried, Node: n.name, Err: err})
		n.retries.Add(1)
		e.retried = true
		excl = excl.with(n.index)
	}
	if p.fallbackErr != nil {
		return nil, p.fallbackErr
	}
	e.final = p.fallback
	if p.fallback == router.ReasonNoHealthyReplica {
		c.cl.mon.Emit(health.Event{Kind: health.FallbackToPrimary, Node: c.cl.primary().name, Detail: "no replica qualified"})
	}
	return e.readFallback(ctx, p, excl, do)
}

// readFallback runs a read that no target served on the primary; while
// the primary is away, on the most advanced replica that is up (the
// scope's last write may not be there: the event and the route reason
// primary-away say so). A read never fails while a replica is up.
func (e *exe) readFallback(ctx context.Context, p *plan, excl nodeSet, do work) (*backend, error) {
	cl := e.c.cl
	prim := cl.primary()
	var cause error
	if _, ok := cl.mon.Primary(); ok || !cl.probing {
		b, out, err := e.attempt(ctx, p, prim, monitor.GTIDSet{}, do)
		if out == ranOK || !out.connectionFailed() {
			return b, err
		}
		cl.mon.Failure(prim.index, err)
		cause = err
	}
	n := cl.mostAdvanced(excl.with(prim.index))
	if n == nil {
		return nil, routeErr(prim, e.final, e.q, fmt.Errorf("%w and no replica is up: %w", ErrPrimaryUnavailable,
			cmp.Or(cause, prim.h.LastError(), error(errPrimaryAway))))
	}
	e.final = router.ReasonPrimaryAway
	cl.mon.Emit(health.Event{Kind: health.ReadWithoutPrimary, Node: n.name,
		Detail: "the primary is away: the most advanced replica served a read its scope's last write may not have reached"})
	b, _, err := e.attempt(ctx, p, n, monitor.GTIDSet{}, do)
	return b, err
}

// errPrimaryAway: health has no usable primary.
var errPrimaryAway = errors.New("no usable primary")

// runPrimary runs a statement on the primary, routed for reason. While
// there is no usable primary (down, read-only, being switched over) it
// waits up to WritePause for one, without sending anything; then it
// fails with ErrPrimaryUnavailable wrapping the cause. An attempt that
// did not run (not sent, refused as read-only after a switchover) or
// that changes no data is made again on the primary found next; one that
// may have changed data and broke fails with ErrOutcomeUnknown. A nil do
// only checks a connection out.
func (e *exe) runPrimary(ctx context.Context, p *plan, reason router.Reason, do work) (*backend, error) {
	c, q := e.c, e.q
	if c.sess != nil && !c.keep() && !c.cl.isPrimary(c.sess.node) {
		c.sess.release(false) // held for a node that is no longer the primary
		c.sess = nil
	}
	cl := c.cl
	deadline := clockBase.Add(monotonic() + cl.cfg.WritePause) // time.Now().Add, monotonic only
	var cause error
	rejected := false
	for {
		n, err := e.waitPrimary(ctx, deadline, reason, cause)
		if err != nil {
			return nil, err
		}
		b, out, err := e.attempt(ctx, p, n, monitor.GTIDSet{}, do)
		switch {
		case out == ranOK:
			return b, nil
		case errors.Is(err, ErrBrokenConnection):
			// Fresh connections broke one after another before anything
			// was sent: database/sql's own bound, reached on this node.
			cl.mon.Failure(n.index, err)
			return nil, routeErr(n, reason, q, err)
		case out == notSent || out == broke && !changesData(&p.r.cls):
			cl.mon.Failure(n.index, err)
		case readOnlyRejection(err) && !rejected:
			rejected = true
			cl.mon.ReadOnly(n.index)
		case out == broke:
			cl.mon.Failure(n.index, err)
			return nil, outcomeUnknown(n, reason, q, err)
		default:
			return nil, err // the server's answer, or the caller's context
		}
		cause = err
		left := time.Until(deadline)
		if left <= 0 {
			return nil, e.unavailable(n, reason, cause)
		}
		cl.mon.Kick()
		// Wait for news from the probes, not in a loop of connects.
		if err := cl.awaitNews(ctx, min(left, cl.cfg.ProbeInterval/4)); err != nil {
			return nil, err
		}
	}
}

// waitPrimary returns the primary once it is usable, waiting for the
// monitor's news until deadline.
func (e *exe) waitPrimary(ctx context.Context, deadline time.Time, reason router.Reason, cause error) (*node, error) {
	cl, q := e.c.cl, e.q
	for {
		i, ok := cl.mon.Primary()
		if cl.mon.SplitBrain() {
			return nil, routeErr(nil, reason, q, ErrSplitBrain)
		}
		n := cl.nodes[i]
		if ok && cl.cfg.Galera.MaxWriters > 1 {
			return cl.leastBusyWriter(n), nil
		}
		if ok || !cl.probing {
			return n, nil
		}
		last := n.h.LastError()
		if last != nil && judge(ctx, last) == refused && !readOnlyRejection(last) {
			return nil, last // the server refuses this user or database: waiting would not change it
		}
		if time.Until(deadline) <= 0 {
			return nil, e.unavailable(n, reason, cmp.Or(cause, last,
				error(fmt.Errorf("%s is not a usable primary (read-only or replicating)", n.name))))
		}
		if err := cl.awaitNews(ctx, time.Until(deadline)); err != nil {
			return nil, err
		}
	}
}

// unavailable is the error of a statement for the primary that waited
// WritePause for a usable one; n is the node last taken as primary.
func (e *exe) unavailable(n *node, reason router.Reason, cause error) error {
	e.out = notSent
	return routeErr(n, reason, e.q, fmt.Errorf("%w after waiting %s: %w", ErrPrimaryUnavailable, e.c.cl.cfg.WritePause, bare(cause)))
}

// causalWait waits on b, a replica's connection, until it has applied
// gtid, up to CausalTimeout; errNotCaughtUp if it does not. A wait that
// succeeds is remembered (node.applied): the next reads for that
// position need none.
func (e *exe) causalWait(ctx context.Context, b *backend, gtid monitor.GTIDSet) error {
	q, want := "SELECT MASTER_GTID_WAIT(?, ?)", "0"
	if _, mysqlSet := gtid.MySQL(); mysqlSet {
		q = "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)"
	}
	wait := gtid
	galera := e.c.cl.cfg.Topology == TopologyGalera
	if galera {
		// A Galera node applies the cluster's write-sets, not a replica's
		// relay log: its wait is on the GTID of the cluster's domain
		// (wsrep_gtid_mode), which every node numbers alike.
		var ok bool
		if wait, ok = gtid.Domain(b.node.wsrepDomain.Load()); !ok {
			b.node.applied(gtid)
			return nil // nothing replicated by the cluster to wait for
		}
		// WSREP_SYNC_WAIT_UPTO_GTID returns once the node has given the
		// GTID to a write-set, which can be a moment before its commit is
		// visible to a read; wsrep_sync_wait for this one statement, not
		// the session, makes the node first apply and commit everything
		// the cluster had certified when the read arrived.
		q, want = "SET STATEMENT wsrep_sync_wait=1 FOR SELECT WSREP_SYNC_WAIT_UPTO_GTID(?, ?)", "1"
	}
	var timeout any = e.c.cl.cfg.CausalTimeout.Seconds()
	if galera {
		timeout = int64(math.Ceil(e.c.cl.cfg.CausalTimeout.Seconds())) // whole seconds
	}
	args := []driver.NamedValue{{Ordinal: 1, Value: wait.String()}, {Ordinal: 2, Value: timeout}}
	start := monotonic()
	v, err := queryValue(ctx, b.dc, q, args)
	if galera && serverErrno(err) == 1205 {
		v, err = nil, nil // its timeout: not caught up
	}
	if err != nil {
		return err
	}
	took := monotonic() - start
	e.waited += took
	caught := fmt.Sprint(v) == want
	b.node.meters.wait(took, caught)
	if !caught {
		return errNotCaughtUp
	}
	b.node.applied(gtid)
	return nil
}

// runSet runs a SET that becomes part of the state applied to every
// backend connection (route.ReplayState): applying it where the
// statement runs (the primary, or the transaction's connection) checks
// it, as running it would.
func (e *exe) runSet(ctx context.Context, p *plan, out *results) (*backend, error) {
	c := e.c
	as, _ := route.ReplayableSet(e.q)
	prev := c.vars
	c.vars = prev.with(as)
	b, err := e.execute(ctx, p, func(driver.Conn) error { // applyVars ran it
		out.res, out.rows = driver.RowsAffected(0), noRows{}
		return nil
	})
	if err != nil {
		c.vars = prev
	}
	return b, err
}
