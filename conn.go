package rwshard

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/redact"
	"github.com/rwshard/rwshard/router"
)

var (
	_ driver.Conn               = (*conn)(nil)
	_ driver.ConnPrepareContext = (*conn)(nil)
	_ driver.ConnBeginTx        = (*conn)(nil)
	_ driver.QueryerContext     = (*conn)(nil)
	_ driver.ExecerContext      = (*conn)(nil)
	_ driver.Pinger             = (*conn)(nil)
	_ driver.SessionResetter    = (*conn)(nil)
	_ driver.Validator          = (*conn)(nil)
	_ driver.NamedValueChecker  = (*conn)(nil)
	_ driver.Execer             = (*conn)(nil) //nolint:staticcheck // for callers that assert it
	_ driver.Queryer            = (*conn)(nil) //nolint:staticcheck
)

// maxBadConnRetries bounds the retries on fresh backend connections after
// the driver proved a statement was not sent (driver.ErrBadConn), as
// database/sql does.
const maxBadConnRetries = 2

// conn is a logical connection: what database/sql pools on the caller's
// side. While idle in that pool it holds no backend connection.
//
// While a caller holds it (a *sql.Conn, a *sql.Tx, or one db.Query), it
// keeps the primary connection it last used (sess), so that connection-bound
// reads such as LAST_INSERT_ID() see the caller's own writes, exactly as on
// one go-sql-driver connection; plain reads still go to replicas. A
// statement that changes session state, or a transaction, pins the logical
// connection to sess: every statement runs there. database/sql calls
// IsValid when the caller is done, and that ends the session (release).
type conn struct {
	// The fields a statement reads come first, those of the short path
	// (short.go) on two cache lines: on cores the servers share, each
	// line is fetched again at every statement.
	sess *backend  // backend connection held for the caller, or nil
	tx   driver.Tx // open BeginTx transaction on sess
	// guard watches the open transaction (Config.TxIdleTimeout, TxWarnAge).
	guard *txGuard
	// replay logs the open BeginTx transaction for replay (Config.TxReplay).
	replay *txLog
	cl     *cluster

	broken bool // sess broke: database/sql must discard this conn
	// unchecked: sess, held without session state, has not had its
	// liveness check since database/sql handed this connection out again;
	// it gets it when a statement is about to use it (checkHeld).
	unchecked bool
	// argsChecked: CheckNamedValue converted the arguments of the
	// statement database/sql is about to run (see prep).
	argsChecked bool
	dirty       bool // session state changed: sess is discarded at the end
	// report and ryw are the cluster's (a statement is reported when it
	// ends; read-your-writes is on), copied here with the flags a
	// statement reads.
	report, ryw bool
	// A write inside a transaction is recorded for read-your-writes when
	// the transaction commits, in the session it ran in.
	pendingWrite bool

	// What the statement running now did, for its meters and tracer: the
	// node it reached last (1 + its index in cl.nodes; 0: none, an
	// integer so that setting it needs no write barrier), its causal
	// wait, whether a read was retried.
	ran int

	// The short path's state (see shortState), on the second cache line,
	// with the context a statement last found no hint in (see hintOf),
	// and the session variables, which every statement compares.
	short shortState
	// plainCtx is the last context a statement of the open BeginTx
	// transaction found to carry no hint (see hintOf); its
	// read-your-writes scope is ctxScope.
	plainCtx context.Context
	// vars are the session variables this logical connection set without
	// pinning (router.ReplayableSet), applied to every backend connection
	// before its statements run (see applyVars).
	vars sessionVars
	// shortLat are the short path's tallied durations by latency class
	// (see shortInfo.latencyClass): the rest, plain reads (as
	// nodeMeters.latency).
	shortLat [2]localHist
	// shortLast is the duration of the last timed statement of each
	// latency class on short.node (shortState.sampled says there was one).
	shortLast [2]time.Duration

	// The rest of what the statement running now did (see ran): its
	// causal wait, whether a read was retried.
	waited  time.Duration
	retried bool

	textTx        bool // BEGIN / START TRANSACTION seen, not yet ended
	autocommitOff bool // SET autocommit=0 in force
	primaryState  bool // sess carries state only primary statements see (PrimaryState): kept, not pinned
	rowsOut       bool // rows is in use
	openRows      int  // result sets still open on sess
	pendingSess   *Session
	// ctxScope is plainCtx's read-your-writes scope (see hintOf), beside
	// pendingSess, which a transaction's start and end write too.
	ctxScope *Session
	// rule is the pool rule (1-based, Config.PoolRules) that chose the
	// last routed read's pool; 0: none.
	rule int

	owner *Connector // set by Driver.Open: closed with the connection
	// rows is the result set of a statement run on the held connection,
	// handed to database/sql without an allocation of its own while
	// rowsOut says it is in use (a second open result set gets its own).
	rows rows
	// A BeginTx transaction's tracer context and start (Config.Tracer).
	txCtx   context.Context
	txStart time.Duration

	// Padding to 512 bytes, a size the allocator aligns to cache lines:
	// the first line of a connection is then never the last of another,
	// which another core writes (false sharing); sizeof_test.go checks it.
	_ [24]byte
}

// newConn is a logical connection of cl.
func newConn(cl *cluster) *conn {
	return &conn{cl: cl, report: cl.report, ryw: cl.ryw}
}

// reached records n as the node the running statement reached last.
func (c *conn) reached(n *node) { c.ran = n.index + 1 }

// ranOn is the node the running statement reached last, or nil.
func (c *conn) ranOn() *node {
	if c.ran == 0 {
		return nil
	}
	return c.cl.nodes[c.ran-1]
}

// inTx reports an open transaction of any kind.
func (c *conn) inTx() bool { return c.tx != nil || c.textTx || c.autocommitOff }

// pinned reports that every statement must run on sess.
func (c *conn) pinned() bool { return c.inTx() || c.dirty }

// keep reports that sess must not be let go: it carries a transaction,
// session state, or open rows.
func (c *conn) keep() bool { return c.pinned() || c.primaryState || c.openRows > 0 }

// onSession reports whether a decision runs on the held connection: a
// pinned session or transaction, a statement that pins, or a statement for
// the primary while the caller holds a connection to it.
func (c *conn) onSession(d *router.Decision) bool {
	return d.Target == router.ToSession || d.Pin || c.heldPrimary(d)
}

// heldPrimary is onSession for a statement that does not pin: one for the
// primary runs on the held connection while that is the primary's.
func (c *conn) heldPrimary(d *router.Decision) bool {
	if d.Target != router.ToPrimary || c.sess == nil {
		return false
	}
	if c.sess.node == c.cl.primary() || c.primaryState {
		return true // with primary state, on it even if it stopped being the primary: its error says so
	}
	// Held for a node that is no longer the primary: let go of it.
	if !c.keep() {
		c.sess.release(false)
		c.sess = nil
	}
	return false
}

// dropSoft lets go of a held primary connection that broke, or whose
// server turned read-only (a switchover), while it held no session state:
// nothing is lost, and the statement, which did not run, is dispatched
// anew (a read-only rejection has the topology rediscovered first).
func (c *conn) dropSoft(err error) bool {
	rejected := readOnlyRejection(err)
	if !isBadConn(err) && !rejected || c.keep() {
		return false
	}
	if rejected {
		c.cl.mon.ReadOnly(c.sess.node.index)
	}
	c.sess.release(isBadConn(err))
	c.sess = nil
	return true
}

// rejectReadOnlyTx reports error 1792 (a write in a read-only
// transaction, SET SESSION TRANSACTION READ ONLY) when the DSN asked for
// rejectReadOnly=true: as go-sql-driver does then, the connection is
// given up (driver.ErrBadConn; the statement did not run) and database/sql
// runs it on another. (1290 and 1836, a read-only server, rwshard handles
// itself by following the switchover: see Config.Backend.)
func (c *conn) rejectReadOnlyTx(err error) bool {
	return c.cl.cfg.Backend.RejectReadOnly && serverErrno(err) == 1792
}

// routed is what route decides for a statement: its class, where it
// goes, and the hint that applies (the context's merged with the text's).
// The statement path passes it down by pointer, not by value.
type routed struct {
	d   router.Decision // first: with cls.Kind and cls.Effect, what a statement reads
	cls router.Class
	h   hint.Hint
}

// route classifies a statement and decides where it goes, into r, and
// returns r; or, for a prepared statement that was routed before in the
// same connection state without a hint in the context, it returns what
// was decided then (stmt.routes), which nobody modifies.
func (c *conn) route(ctx context.Context, q string, ps *stmt, r *routed) (*routed, error) {
	c.rule = 0
	st := router.State{InTx: c.inTx(), Pinned: c.dirty}
	ch, hinted := c.hintOf(ctx)
	if ps != nil && !hinted && !c.broken {
		if kept := ps.kept(st); kept != nil {
			return kept, nil
		}
	}
	return c.routeAnew(q, ps, r, st, ch, hinted)
}

// hintOf returns the hint ctx carries. In a BeginTx transaction, a
// context found without one is remembered (plainCtx) with its
// read-your-writes scope (ctxScope): a context's values never change, so
// the transaction's statements that follow in the same context (a
// request's, a worker's) walk its chain for neither, which a program
// that makes hints or sessions anywhere would otherwise do at every
// statement (hint.FromContext, SessionFrom). Both are dropped when the
// transaction ends (endTx; release, for one never ended), so that the
// logical connection, idle in database/sql's pool, keeps no caller's
// context alive: no longer than database/sql's Tx keeps its own.
func (c *conn) hintOf(ctx context.Context) (hint.Hint, bool) {
	if sameCtx(ctx, c.plainCtx) {
		return hint.Hint{}, false
	}
	h, ok := hint.FromContext(ctx)
	if !ok && c.tx != nil {
		c.plainCtx, c.ctxScope = ctx, c.cl.scope(ctx)
	}
	return h, ok
}

// scope is the read-your-writes scope of ctx (cluster.scope), known
// without a lookup for the context hintOf remembered.
func (c *conn) scope(ctx context.Context) *Session {
	if sameCtx(ctx, c.plainCtx) {
		return c.ctxScope
	}
	return c.cl.scope(ctx)
}

// sameCtx reports whether a and b hold the same dynamic type and the
// same pointer, which makes them the same context, without the runtime's
// comparison (ifaceeq), a call that reads the type's descriptor, on
// lines a statement otherwise leaves alone. Two contexts it calls
// different may still be equal (a context type that is not a pointer,
// boxed twice): they are then looked up as two.
func sameCtx(a, b context.Context) bool {
	x, y := (*[2]unsafe.Pointer)(unsafe.Pointer(&a)), (*[2]unsafe.Pointer)(unsafe.Pointer(&b))
	return x[0] == y[0] && x[1] == y[1] // not x == y: an array comparison calls memequal
}

// routeAnew is route for a statement it does not remember.
func (c *conn) routeAnew(q string, ps *stmt, r *routed, st router.State, ch hint.Hint, hinted bool) (*routed, error) {
	if c.broken {
		return nil, c.lost(q)
	}
	if err := c.classify(q, ps, &r.cls); err != nil {
		return nil, hintErr(q, err)
	}
	// The uncommon cases are calls, so that the common path's code stays
	// compact: it is cold at every statement on cores the servers share.
	if r.cls.Effect == router.Pin && r.cls.Statements == 1 {
		c.settleSet(q, &r.cls)
	}
	if hinted {
		decideHinted(ch, r, st)
	} else {
		r.h = r.cls.Hint
		r.d = router.Decide(r.cls, r.h, st)
	}
	// What decides a read for a replica, and whether a node hint is
	// refused, can change from one execution to the next; the rest
	// depends on the text and the connection state alone.
	fixed := r.d.Target != router.ToReplica
	if !fixed {
		c.routeRead(q, r)
	}
	if r.h.Route == hint.NodeOnly && r.d.Pin {
		fixed = false
		if err := c.refuseNodeHint(q, r); err != nil {
			return nil, err
		}
	}
	if r.cls.Effect == router.PrimaryState && !r.d.Pin && r.d.Target == router.ToPrimary {
		r.d.Pin = true // it runs on the held primary connection (see onSession)
	}
	if ps != nil && !hinted && fixed {
		ps.remember(st, r)
	}
	return r, nil
}

// settleSet tells apart the session statements (router.Pin) that need no
// pinning: a SET only primary statements see (PrimaryState), or one
// replayed on every backend connection (ReplayState).
func (c *conn) settleSet(q string, cls *router.Class) {
	if router.PrimaryOnlySet(q) {
		cls.Effect = router.PrimaryState
	} else if c.cl.replay && !c.dirty {
		if _, ok := router.ReplayableSet(q); ok {
			cls.Effect = router.ReplayState
		}
	}
}

// decideHinted decides for a statement whose context carries a hint.
func decideHinted(ch hint.Hint, r *routed, st router.State) {
	r.h = hint.Merge(ch, r.cls.Hint)
	r.d = router.Decide(r.cls, r.h, st)
}

// routeRead applies what else decides a read bound for a replica: a
// stored function or a primary-only table sends it to the primary; a pool
// rule (Config.PoolRules), decided with the classification, picks its
// pool when it names none itself.
func (c *conn) routeRead(q string, r *routed) {
	cls, d, h := &r.cls, &r.d, &r.h
	if len(cls.Functions) > 0 && !c.cl.replicaSafe(cls.Functions) || c.cl.isPrimaryOnly(q) {
		*d = router.Decision{Target: router.ToPrimary, Reason: router.ReasonStoredFunction}
		return
	}
	if h.Pool == "" && cls.Tag > 0 {
		c.rule = c.cl.poolRule(*cls)
		if c.rule > 0 {
			h.Pool = c.cl.cfg.rules[c.rule-1].pool
		}
	}
}

// refuseNodeHint refuses a node hint on a statement that pins: it goes to
// the primary connection it pins, and a hint aiming it elsewhere is
// refused, not ignored.
func (c *conn) refuseNodeHint(q string, r *routed) error {
	_, err := c.cl.namedNode(r.cls, router.Decision{Target: router.ToNode, Node: r.h.Node, Reason: router.ReasonHintNode}, q)
	return err
}

// classify puts the classifier's answer for q into cls; ps, the caller's
// prepared statement for q (nil for a text statement), keeps it after its
// first execution: the classifier's cache is looked up by the whole text.
func (c *conn) classify(q string, ps *stmt, cls *router.Class) error {
	if ps != nil && ps.classified {
		*cls = ps.cls
		return nil
	}
	return c.classifyText(q, ps, cls)
}

// classifyText asks the classifier.
func (c *conn) classifyText(q string, ps *stmt, cls *router.Class) error {
	var err error
	if *cls, err = c.cl.classifier.Classify(q); err == nil && ps != nil {
		ps.cls, ps.classified = *cls, true
	}
	return err
}

// session returns the held backend connection, taking one of the primary
// (waiting for it as a write does) when there is none.
func (c *conn) session(ctx context.Context, r *routed, q string) (*backend, error) {
	if c.unchecked || c.sess == nil {
		return c.takeSession(ctx, r, q)
	}
	return c.sess, nil
}

// takeSession is session for a held connection that is to be checked
// first (checkHeld), or none: it takes one of the primary.
func (c *conn) takeSession(ctx context.Context, r *routed, q string) (*backend, error) {
	c.checkHeld(ctx)
	if c.sess != nil {
		return c.sess, nil
	}
	b, err := c.dispatchPrimary(ctx, r.cls, r.d, q, func(driver.Conn) error { return nil })
	if err != nil {
		return nil, err
	}
	c.sess = b
	return b, nil
}

// sessionErr handles an error on the pinned connection. If the driver says
// the connection broke, the session is gone: the logical connection is
// marked broken and the caller learns why; its state cannot be rebuilt
// elsewhere, so this is never retried.
func (c *conn) sessionErr(err error, d router.Decision, q string) error {
	if err == nil {
		return nil
	}
	if readOnlyRejection(err) {
		c.cl.mon.ReadOnly(c.sess.node.index) // rediscover; this session stays where it is
	}
	sent := sentAndBroke(context.Background(), err)
	if !isBadConn(err) && !sent {
		if c.sess != nil && !validConn(c.sess.dc) {
			// Its driver closed the connection under the statement, as
			// go-sql-driver does when a statement's context ends: a
			// transaction or session state is lost as on a broken
			// connection (lose), and the caller gets the error it met
			// (context.Canceled), as it would direct.
			c.lose()
		}
		return err
	}
	name := c.sess.node.name
	c.broken = true
	c.tx = nil
	c.sess.release(true)
	c.sess = nil
	lost := &RouteError{Node: name, Reason: d.Reason.String(), Statement: quote(q), Err: ErrSessionLost}
	if sent && q == "COMMIT" {
		// The commit was sent: the transaction may have committed.
		lost.Err = fmt.Errorf("%w (%w)", ErrOutcomeUnknown, err)
	}
	return lost
}

// lost refuses a statement on a logical connection whose session was lost
// (see sessionErr): on a fresh connection it would run without the
// session's transaction or state; an INSERT of a broken text transaction
// would be committed on its own. The statement that met the break got
// ErrSessionLost; the ones after it get driver.ErrBadConn, as from a
// broken go-sql-driver connection: nothing was sent, and database/sql
// discards the connection.
func (c *conn) lost(string) error { return driver.ErrBadConn }

// applyEffects updates the session state after a statement succeeded on
// the pinned connection. Without effects it would change nothing (what
// opened the transaction armed its guard), and runOn does not call it.
func (c *conn) applyEffects(e router.Effect) {
	if e.Has(router.Pin) {
		c.dirty = true
	}
	if e.Has(router.PrimaryState) {
		c.primaryState = true
	}
	switch {
	case e.Has(router.TxBegin):
		c.textTx = true // BEGIN …; COMMIT in one string stays pinned: safe side
	case e.Has(router.TxEnd):
		c.textTx = false
	}
	switch {
	case e.Has(router.AutocommitOff):
		c.autocommitOff = true
	case e.Has(router.AutocommitOn):
		c.autocommitOff = false
		c.textTx = false // SET autocommit=1 commits an open transaction
	}
	if c.inTx() {
		c.armGuard()
	} else {
		c.disarmGuard()
	}
}

// unpin returns a replica connection held for a read-only transaction once
// the transaction is over and its rows are closed. A primary connection
// stays held until release, unless the primary's pool is bounded
// (rwshard.maxOpenConns, or an OpenDB handle with SetMaxOpenConns): then
// it goes back at once, so that idle logical connections cannot hold
// every connection of the bound and leave a busy one waiting for ever.
func (c *conn) unpin() {
	if c.sess != nil && !c.keep() {
		c.unpinIdle()
	}
}

// unpinIdle is unpin for a held connection that nothing keeps.
func (c *conn) unpinIdle() {
	if c.cl.isPrimary(c.sess.node) && !c.sess.node.bounded() {
		return
	}
	c.sess.release(false)
	c.sess = nil
}

// wrote notes a successful write on b for read-your-writes: at once in
// autocommit, at commit inside a transaction. It inlines: a statement
// with nothing to record makes no call.
func (c *conn) wrote(ctx context.Context, b *backend, write bool) {
	if c.ryw && (write || c.pendingWrite) {
		c.record(ctx, b, write)
	}
}

// record is wrote's work.
func (c *conn) record(ctx context.Context, b *backend, write bool) {
	if write {
		c.pend(ctx)
	}
	if c.pendingWrite && !c.inTx() {
		c.commitWrite(ctx, b)
	}
}

// pend marks a write to record in ctx's read-your-writes scope: at
// commit inside a transaction, at once outside one (record). Inside a
// transaction it is all that wrote and record do for a write (a read
// there records nothing). The short path, always inside a BeginTx
// transaction, calls pendInTx instead.
func (c *conn) pend(ctx context.Context) {
	c.pendingWrite, c.pendingSess = true, c.scope(ctx)
}

// pendInTx is pend on the short path, whose statement runs in the
// context hintOf remembered (see shortRoute): its scope is ctxScope, with
// no lookup. Until the program makes a Session, pendingSess is the
// connector's scope, as beginTx set it, and stays (neither ctxScope's
// line nor pendingSess's is touched). It inlines: the short path's write
// makes no call.
func (c *conn) pendInTx() {
	c.pendingWrite = true
	if sessionsMade.Load() {
		c.pendingSess = c.ctxScope
	}
}

// failedWrite records, for read-your-writes, a statement that failed but
// may have committed on the primary all the same (see mayHaveRun): a write
// in autocommit, or any statement of a transaction with writes pending
// (a text COMMIT's outcome is unknown as well; a lost transaction
// recorded this way costs the scope a needless look at the primary, never
// a stale read).
func (c *conn) failedWrite(ctx context.Context, cls *router.Class, err error) {
	if c.ran == 0 || !(changesData(cls) || c.pendingWrite) || !mayHaveRun(err) {
		return
	}
	if c.pendingWrite {
		c.unsure(c.pendingSess)
	} else {
		c.unsure(c.scope(ctx))
	}
}

// mayHaveRun reports the error of a statement sent to a server that does
// not prove it failed: its context ended after it was sent, or its
// connection broke before the answer (ErrOutcomeUnknown). A server's
// error (the statement failed and was rolled back), a connect failure or
// driver.ErrBadConn (nothing was sent), and the refusals made before
// sending anything (no usable primary, split brain) prove it.
func mayHaveRun(err error) bool {
	return serverErrno(err) == 0 && !notSent(err) && !isBadConn(err) &&
		!errors.Is(err, ErrPrimaryUnavailable) && !errors.Is(err, ErrSplitBrain)
}

// unsure records in s a write whose outcome is unknown, as committed now
// with its GTID unknown: the scope's next read takes the primary's
// position (causal) or needs data as of now (session). A statement the
// server goes on running after its caller gave up, and commits later, is
// beyond it, as it is beyond a program connected to the primary alone.
func (c *conn) unsure(s *Session) {
	s.wroteOn(c.cl.partOf(s), time.Now(), health.GTIDSet{})
}

// commitWrite records the pending write in its session, with its GTID in
// causal mode (one extra statement on the same connection).
func (c *conn) commitWrite(ctx context.Context, b *backend) {
	s := c.pendingSess
	c.pendingWrite, c.pendingSess = false, nil
	if s == nil {
		return
	}
	var gtid health.GTIDSet
	if c.cl.cfg.Consistency == ConsistencyCausal && b != nil && len(c.cl.nodes) > 1 {
		gtid = lastGTID(ctx, b) // no replica, no read to wait for it
	}
	s.wroteOn(c.cl.partOf(s), time.Now(), gtid)
}

// lastGTID reads the GTID of the session's last commit on b's connection.
func lastGTID(ctx context.Context, b *backend) health.GTIDSet {
	q := "SELECT @@last_gtid"
	if b.node.flavor.Load() == flavorMySQL {
		q = "SELECT @@global.gtid_executed"
	}
	v, err := queryValue(ctx, b.dc, q, nil)
	if err != nil {
		return health.GTIDSet{}
	}
	text, _ := v.(string)
	g, _ := health.ParseGTID(text)
	return g
}

// QueryContext routes and runs a statement that returns rows.
func (c *conn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return c.queryRows(ctx, q, args, nil)
}

// queryRows routes and runs a statement that returns rows. The rows of a
// read dispatched to a node are the backend's own (backend.rows),
// recycled with it: the caller (database/sql, or the sharding module)
// closes them exactly once and never touches them afterwards.
func (c *conn) queryRows(ctx context.Context, q string, args []driver.NamedValue, ps *stmt) (driver.Rows, error) {
	p := c.prep(ps)
	var rt routed
	var out outcome
	b, write, err := c.statement(ctx, q, args, ps, &rt, &out, func(dc driver.Conn) (err error) {
		out.rows, out.st, err = query(ctx, dc, q, args, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	if b != nil {
		r := &b.rows
		r.Rows.Rows, r.st, r.b = out.rows, out.st, b
		return r, nil
	}
	return c.heldRows(ctx, q, args, out.rows, out.st, write), nil
}

// heldRows hands database/sql the rows of a statement that ran on c.sess
// (st: a one-off statement to close with them).
func (c *conn) heldRows(ctx context.Context, q string, args []driver.NamedValue, rs driver.Rows, st driver.Stmt, write bool) driver.Rows {
	c.openRows++
	// The connection's own, while no other rows of it are open: its
	// other fields (st, b, log, Meta) are nil since it was last closed.
	r := &c.rows
	if c.rowsOut {
		r = new(rows)
	}
	c.rowsOut = true
	r.Rows.Rows, r.c, r.write, r.ctx = rs, c, write, ctx
	if st != nil {
		r.st = st
	}
	if c.replay != nil && c.tx != nil {
		r.log = c.replay.record(q, args, true, c.cl.cfg.ReplayLimit)
	}
	return r
}

// ExecContext routes and runs a statement without rows.
func (c *conn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return c.exec(ctx, q, args, nil)
}

func (c *conn) exec(ctx context.Context, q string, args []driver.NamedValue, ps *stmt) (driver.Result, error) {
	p := c.prep(ps)
	var rt routed
	var out outcome
	b, write, err := c.statement(ctx, q, args, ps, &rt, &out, func(dc driver.Conn) (err error) {
		out.res, err = exec(ctx, dc, q, args, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	if b != nil {
		c.wrote(ctx, b, write)
		b.release(false)
	} else {
		if c.replay != nil && c.tx != nil {
			if e := c.replay.record(q, args, false, c.cl.cfg.ReplayLimit); e != nil {
				e.sum = resultSum(out.res)
			}
		}
		c.wrote(ctx, c.sess, write)
		c.unpin()
	}
	return out.res, nil
}

// statement routes q (into r, see route) and runs do, which leaves its
// result in out (read only to report the statement): on the held session
// connection, or dispatched to a node. A dispatched statement's backend is
// returned for the caller to release; nil means it ran on (or now is)
// c.sess. write reports a statement that ran and changes data (see
// changesData).
func (c *conn) statement(ctx context.Context, q string, args []driver.NamedValue, ps *stmt, r *routed, out *outcome, do work) (_ *backend, write bool, _ error) {
	if c.report {
		return c.reported(ctx, q, args, ps, r, out, do)
	}
	b, r, _, _, err := c.run(ctx, q, ps, r, out, do)
	return b, err == nil && changesData(&r.cls), err
}

// run is statement without its report. It returns the route (r, or the
// prepared statement's: see route), whether routing succeeded (it did not
// when the transaction guard refused the statement), and the time the
// statement took.
func (c *conn) run(ctx context.Context, q string, ps *stmt, r *routed, out *outcome, do work) (_ *backend, _ *routed, routed bool, took time.Duration, err error) {
	start := monotonic()
	c.ran, c.waited, c.retried = 0, 0, false
	rp, err := c.route(ctx, q, ps, r)
	if err != nil {
		return nil, r, false, monotonic() - start, err
	}
	if c.guard != nil {
		if err = c.enterGuard(q); err != nil {
			return nil, rp, false, monotonic() - start, err
		}
	}
	c.cl.budget.Request() // every statement earns its share of retries
	var b *backend
	var held bool
	if rp.cls.Effect == router.ReplayState {
		b, held, err = c.runSet(ctx, rp, q, out)
	} else {
		b, held, err = c.runOn(ctx, rp, q, do)
	}
	if c.guard != nil {
		c.leaveGuard()
	}
	took = monotonic() - start
	if n := c.ranOn(); n != nil {
		n.meters.latency(rp.cls.Kind, took)
	}
	if held {
		b = nil // it ran on, or now is, c.sess
	}
	if err != nil && c.ryw {
		c.failedWrite(ctx, &rp.cls, err)
	}
	return b, rp, true, took, err
}

// reported is statement with its report: its trace (Config.Tracer) and,
// once routed, its route log line (Config.RouteLog).
func (c *conn) reported(ctx context.Context, q string, args []driver.NamedValue, ps *stmt, r *routed, out *outcome, do work) (*backend, bool, error) {
	tr := c.cl.cfg.Tracer
	if tr != nil {
		ctx = tr.StatementStart(ctx, StatementStart{SQL: q, Args: len(args)})
	}
	b, r, routed, took, err := c.run(ctx, q, ps, r, out, do)
	if c.cl.cfg.RouteLog && routed {
		c.logRoute(ctx, q, args, r.d, c.nodeName(r.d), took, err)
	}
	if tr != nil {
		tr.StatementEnd(ctx, c.statementEnd(q, r.cls, r.d, out, took, err))
	}
	return b, err == nil && changesData(&r.cls), err
}

// nodeName is the node the statement ran on, else the one its decision
// named.
func (c *conn) nodeName(d router.Decision) string {
	if n := c.ranOn(); n != nil {
		return n.name
	}
	return d.Node
}

// statementEnd describes the statement that just ran, for the tracer.
func (c *conn) statementEnd(q string, cls router.Class, d router.Decision, out *outcome, took time.Duration, err error) StatementEnd {
	e := StatementEnd{Node: c.nodeName(d), Reason: d.Reason.String(), Kind: cls.Kind.String(),
		Redacted: redact.Literals(q), RowsAffected: -1, Waited: c.waited, Retried: c.retried, Err: err, Duration: took}
	if n := c.ranOn(); n != nil {
		e.Role, e.Addr = roleOf(c.cl.isPrimary(n)), c.cl.cfg.Nodes[n.index].Addr
	}
	if c.cl.cfg.Backend != nil {
		e.Database = c.cl.cfg.Backend.DBName
	}
	if out.res != nil && err == nil {
		if n, rerr := out.res.RowsAffected(); rerr == nil {
			e.RowsAffected = n
		}
	}
	return e
}

func roleOf(primary bool) string {
	if primary {
		return "primary"
	}
	return "replica"
}

// runSet runs a SET that becomes part of the state applied to every
// backend connection (router.ReplayState): applying it where the
// statement runs (the primary, or the transaction's connection) checks
// it, as running it would.
func (c *conn) runSet(ctx context.Context, r *routed, q string, out *outcome) (*backend, bool, error) {
	as, _ := router.ReplayableSet(q)
	prev := c.vars
	c.vars = prev.with(as)
	b, held, err := c.runOn(ctx, r, q, func(driver.Conn) error { // applyVars ran it
		out.res, out.rows = driver.RowsAffected(0), noRows{}
		return nil
	})
	if err != nil {
		c.vars = prev
	}
	return b, held, err
}

// runOn executes a routed statement whose session effects are settled,
// on the held session connection or on a dispatched backend, and counts
// it. held reports that b is c.sess.
func (c *conn) runOn(ctx context.Context, r *routed, q string, do work) (*backend, bool, error) {
	d := &r.d
	if c.onSession(d) {
		b, err := c.session(ctx, r, q)
		if err == nil {
			err = c.checkSessionTarget(b, r, q)
		}
		if err != nil {
			return nil, false, err
		}
		c.reached(b.node)
		err = b.applyVars(ctx, &c.vars)
		if err == nil {
			err = do(b.dc)
		}
		c.cl.count(d.Reason, r.cls.Kind, b, err)
		if err != nil {
			var anew bool
			if b, err, anew = c.heldFailed(ctx, r, q, do, b, err); !anew {
				return b, b != nil, err
			}
		} else {
			if r.cls.Effect != 0 {
				c.applyEffects(r.cls.Effect)
			}
			return b, true, nil
		}
	}
	b, err := c.dispatch(ctx, r, q, do)
	c.cl.count(d.Reason, r.cls.Kind, b, err)
	if err != nil {
		return nil, false, err
	}
	if c.cl.isPrimary(b.node) && c.sess == nil {
		c.sess = b // held for the caller (see conn)
		return b, true, nil
	}
	return b, false, nil
}

// heldFailed handles the error of a statement on the held connection b,
// out of runOn's way: a lost transaction is replayed on the primary and
// the statement run again there (the connection it ran on is returned);
// anew says the statement did not run and is to be
// dispatched to a fresh connection; otherwise the error (nil when a dead
// connection without state was just dropped) is the caller's.
func (c *conn) heldFailed(ctx context.Context, r *routed, q string, do work, b *backend, err error) (_ *backend, _ error, anew bool) {
	b.node.meters.serverError(err)
	if c.replay != nil && c.tx != nil && replayable(ctx, err) {
		// The transaction's connection is lost: rebuild it on the
		// primary and run this statement there.
		if rerr := c.replayTx(ctx, err); rerr != nil {
			return nil, rerr, false
		}
		b = c.sess
		c.reached(b.node)
		if err = b.applyVars(ctx, &c.vars); err == nil {
			err = do(b.dc)
		}
		if err == nil {
			c.applyEffects(r.cls.Effect)
			return b, nil, false
		}
	}
	if c.rejectReadOnlyTx(err) {
		return nil, c.lose(), false
	}
	if !c.keep() && sentAndBroke(ctx, err) {
		// A held connection without state broke under the statement:
		// a write's outcome is unknown; a read is dispatched anew.
		node := c.sess.node
		c.sess.release(true)
		c.sess = nil
		c.cl.mon.Failure(node.index, err)
		if isWrite(r.cls.Kind) {
			return nil, outcomeUnknown(node.name, r.d, q, err), false
		}
		return nil, nil, true
	}
	if c.dropSoft(err) {
		return nil, nil, true
	}
	err = c.sessionErr(err, r.d, q)
	c.unpin()
	return nil, err, false
}

// checkSessionTarget refuses to send anything but a plain read into a
// session on a replica (a read-only transaction there): the replica would
// reject it anyway, but rwshard never sends a write to a replica.
func (c *conn) checkSessionTarget(b *backend, r *routed, q string) error {
	if c.sessionTargetOK(b, r.cls.Kind == router.Read) {
		return nil
	}
	return &RouteError{Node: b.node.name, Reason: r.d.Reason.String(), Statement: quote(q), Err: ErrWriteToReplica}
}

// sessionTargetOK is checkSessionTarget's test, which inlines.
func (c *conn) sessionTargetOK(b *backend, read bool) bool {
	return read || c.cl.isPrimary(b.node)
}

// PrepareContext returns a statement that is routed on every execution.
// As go-sql-driver's Prepare does, it lets the server check the statement
// now (a syntax error is Prepare's error): it is prepared on the primary
// connection the logical connection holds, and kept in that connection's
// statement cache, so an execution there costs nothing more. Elsewhere it
// is prepared once per backend connection (see StmtCacheSize).
func (c *conn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	ps := &stmt{c: c, q: q}
	var rt routed
	rp, err := c.route(ctx, q, ps, &rt)
	if err != nil {
		return nil, err
	}
	r := *rp // modified below
	if r.d.Target != router.ToSession {
		r.d = router.Decision{Target: router.ToPrimary, Reason: r.d.Reason}
	}
	b, err := c.session(ctx, &r, q)
	if err != nil {
		return nil, err
	}
	if bc, ok := b.dc.(*backendConn); ok && bc.stmts != nil {
		_, err = bc.cached(ctx, q, ps)
	} else {
		var st driver.Stmt
		if st, err = prepare(ctx, b.dc, q); err == nil {
			st.Close()
		}
	}
	if err != nil {
		if c.dropSoft(err) {
			return nil, driver.ErrBadConn // nothing was prepared: database/sql tries another connection
		}
		return nil, c.sessionErr(err, r.d, q)
	}
	return ps, nil
}

// Exec and Query are the pre-context forms, for callers that type-assert
// them on the driver connection (database/sql itself uses the context
// ones).
// Their arguments come unconverted (no CheckNamedValue before them).
func (c *conn) Exec(q string, args []driver.Value) (driver.Result, error) {
	c.argsChecked = false
	return c.ExecContext(context.Background(), q, named(args))
}

func (c *conn) Query(q string, args []driver.Value) (driver.Rows, error) {
	c.argsChecked = false
	return c.QueryContext(context.Background(), q, named(args))
}

// Prepare is PrepareContext with a background context.
func (c *conn) Prepare(q string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), q)
}

// BeginTx opens a transaction on the primary, or on a replica for a
// read-only transaction when Config.ReadOnlyTx is "replica". Every
// statement of the transaction runs on its connection. Isolation levels go
// to the server unchanged.
func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.broken {
		return nil, c.lost("BEGIN")
	}
	c.checkHeld(ctx)
	if c.sess != nil {
		if !validConn(c.sess.dc) {
			if err := c.lose(); err != nil {
				return nil, err // e.g. a transaction whose context ended killed it
			}
		}
	}
	if c.inTx() {
		return nil, &RouteError{Reason: router.ReasonInTransaction.String(),
			Err: errors.New("a transaction is already open on this connection (text BEGIN or autocommit=0)")}
	}
	if tt := c.cl.txTracer; tt != nil {
		c.txCtx, c.txStart = tt.TxStart(ctx, TxStart{ReadOnly: opts.ReadOnly, Isolation: int(opts.Isolation)}), monotonic()
		ctx = c.txCtx
	}
	tx, err := c.beginTx(ctx, opts)
	if err != nil {
		c.traceTx(false, err)
	}
	return tx, err
}

// traceTx ends a BeginTx transaction's trace. It inlines: without a
// tracer a transaction's end makes no call for it.
func (c *conn) traceTx(commit bool, err error) {
	if c.cl.txTracer != nil && c.txCtx != nil {
		c.endTrace(commit, err)
	}
}

// endTrace is traceTx's work.
func (c *conn) endTrace(commit bool, err error) {
	tt := c.cl.txTracer
	e := TxEnd{Commit: commit, Err: err, Duration: monotonic() - c.txStart}
	if c.sess != nil {
		e.Node, e.Addr = c.sess.node.name, c.cl.cfg.Nodes[c.sess.node.index].Addr
	}
	tt.TxEnd(c.txCtx, e)
	c.txCtx = nil
}

func (c *conn) beginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	d := router.Decision{Target: router.ToPrimary, Reason: router.ReasonInTransaction}
	var tx driver.Tx
	begin := func(dc driver.Conn) (err error) {
		tx, err = beginTx(ctx, dc, opts)
		return err
	}
	if c.sess != nil && !c.cl.isPrimary(c.sess.node) && !c.keep() {
		c.sess.release(false) // held for a node that is no longer the primary
		c.sess = nil
	}
	// A held primary connection runs the transaction: no release and
	// acquire per transaction (one go-sql-driver connection would do the
	// same).
	if c.sess != nil {
		err := c.sess.applyVars(ctx, &c.vars)
		if err == nil {
			err = begin(c.sess.dc)
		}
		if err != nil && !c.keep() && (isBadConn(err) || sentAndBroke(ctx, err)) {
			// The held connection, without state, died while idle (the
			// server restarted, wait_timeout): BEGIN runs on a fresh one,
			// as database/sql would retry it.
			c.cl.mon.Failure(c.sess.node.index, err)
			c.sess.release(true)
			c.sess = nil
		} else if err != nil {
			return nil, c.sessionErr(err, d, "BEGIN")
		}
	}
	if c.sess == nil {
		var b *backend
		var err error
		if opts.ReadOnly && c.cl.cfg.ReadOnlyTx == TxReadReplica {
			// The replica is chosen at BEGIN, before any statement: the
			// context's pool and lag hints apply, pool rules (by table
			// or text) cannot.
			d.Target = router.ToReplica
			ch, _ := hint.FromContext(ctx)
			b, err = c.dispatchRead(ctx, &d, hint.Hint{Pool: ch.Pool, MaxLag: ch.MaxLag}, "BEGIN", begin)
		} else {
			b, err = c.dispatchPrimary(ctx, router.Class{Kind: router.Write}, d, "BEGIN", begin)
		}
		if err != nil {
			return nil, err
		}
		c.sess = b
	}
	c.tx = tx
	c.hintOf(ctx) // the transaction's statements usually run in its context
	c.pendingWrite, c.pendingSess = false, c.scope(ctx)
	if c.cl.cfg.TxReplay && !(opts.ReadOnly && c.cl.cfg.ReadOnlyTx == TxReadReplica) {
		c.replay = &txLog{opts: opts}
	}
	c.armGuard()
	return (*txn)(c), nil
}

// Begin starts a default transaction.
func (c *conn) Begin() (driver.Tx, error) { return c.BeginTx(context.Background(), driver.TxOptions{}) }

// endTx commits or rolls back the BeginTx transaction.
func (c *conn) endTx(commit bool) error {
	c.flushTally()
	if c.guard != nil && c.guard.state.Load() == guardExpired {
		op := "COMMIT"
		if !commit {
			op = "ROLLBACK"
		}
		err := c.expired(op)
		c.traceTx(commit, err)
		if !commit {
			return nil // it is rolled back
		}
		return err
	}
	c.disarmGuard()
	if c.tx == nil {
		err := &RouteError{Err: errors.New("no transaction is open")}
		if c.broken {
			// The transaction was lost with its connection (and said so);
			// nothing of it was committed.
			err = &RouteError{Reason: router.ReasonInTransaction.String(), Err: ErrSessionLost}
		}
		c.traceTx(commit, err) // its trace ends with it
		return err
	}
	var err error
	if commit {
		err = c.tx.Commit()
		if err != nil && c.replay != nil && readOnlyRejection(err) {
			// The server refused the COMMIT (the node turned read-only):
			// nothing was committed; replay on the new primary, commit there.
			if err = c.replayTx(context.Background(), err); err == nil {
				err = c.tx.Commit()
			} else {
				c.traceTx(commit, err)
				return err
			}
		}
	} else {
		err = c.tx.Rollback()
	}
	c.tx, c.replay = nil, nil
	c.plainCtx, c.ctxScope = nil, nil // see hintOf
	c.traceTx(commit, err)
	switch {
	case err != nil:
		op := "COMMIT"
		if !commit {
			op = "ROLLBACK"
		}
		if commit && c.pendingWrite && mayHaveRun(err) {
			c.unsure(c.pendingSess) // the COMMIT may have run
		}
		c.pendingWrite, c.pendingSess = false, nil
		err = c.sessionErr(err, router.Decision{Reason: router.ReasonInTransaction}, op)
	case commit && c.pendingWrite && c.pendingSess == &c.cl.global && c.sess != nil &&
		c.cl.cfg.Consistency == ConsistencyCausal && len(c.cl.nodes) > 1:
		// The connector's scope: the GTID is read when a read needs it
		// (gtiddebt.go).
		c.pendingWrite, c.pendingSess = false, nil
		c.cl.owe(c.sess, time.Now())
	case commit && c.pendingWrite && c.pendingSess != nil:
		// Only a causal session reads the commit's GTID (lastGTID): the
		// timeout, allocations and a timer, is for that statement.
		ctx := context.Background()
		if c.cl.cfg.Consistency == ConsistencyCausal {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.cl.cfg.ProbeTimeout)
			defer cancel()
		}
		c.commitWrite(ctx, c.sess)
	default: // nothing to record: no write, or no session to record it in
		c.pendingWrite, c.pendingSess = false, nil
	}
	c.unpin()
	return err
}

// Ping checks the primary, or the pinned connection. A logical
// connection whose session broke is reported bad, as BeginTx and every
// statement report it: a program that pings before each transaction and
// takes a new *sql.Conn when the ping fails (go-tpc) would otherwise keep
// the broken one for ever.
func (c *conn) Ping(ctx context.Context) error {
	if c.broken {
		return c.lost("PING")
	}
	c.checkHeld(ctx)
	if c.sess != nil {
		if err := pingConn(ctx, c.sess.dc); err != nil {
			return c.sessionErr(err, router.Decision{Reason: router.ReasonSessionPinned}, "PING")
		}
		return nil
	}
	b, err := onNode(ctx, c.cl.primary(), router.Decision{}, "PING", nil, func(dc driver.Conn) error {
		return pingConn(ctx, dc)
	})
	if err != nil {
		return err
	}
	b.release(false)
	return nil
}

// CheckNamedValue converts an argument as go-sql-driver does when the
// logical connection holds one of rwshard's own backend connections (a
// transaction, a held primary connection), so that the statement needs no
// second pass over its arguments (convertArgs): every node rwshard opens
// is go-sql-driver, and its conversion is the same on every connection.
// Otherwise the value is accepted unchanged, and the backend connection
// the statement runs on converts it.
//
// The argument types programs pass most (integers, strings, bytes, floats,
// booleans, times, nil) are converted without go-sql-driver's converter,
// to what it returns for them (backendConn.convert): that converter
// asserts driver.Valuer and reflects for any value that is not already a
// driver.Value, a Go int among them.
func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	if b := c.sess; b != nil && b.bc != nil && b.bc.checker != nil {
		c.argsChecked = true
		return b.bc.convert(nv)
	}
	c.argsChecked = false
	return nil
}

// prep is how the statement database/sql is about to run reaches the
// backend: ps, the caller's prepared statement (nil: a text statement),
// and whether CheckNamedValue has converted its arguments. It consumes
// CheckNamedValue's mark, which holds for this statement only.
func (c *conn) prep(ps *stmt) prep {
	p := prep{st: ps, converted: c.argsChecked}
	c.argsChecked = false
	return p
}

// release ends the pinned session: rolls back an open BeginTx transaction
// and returns the backend connection to its pool, or discards it when it
// carries session state (SET variables, temporary tables, locks, an open
// text transaction) that the next user must not inherit.
func (c *conn) release() {
	c.flushTally()
	c.plainCtx, c.ctxScope = nil, nil
	c.disarmGuard()
	c.replay = nil
	if c.sess == nil {
		return
	}
	discard := c.dirty || c.primaryState || c.textTx || c.autocommitOff || c.openRows > 0
	if c.tx != nil {
		if err := c.tx.Rollback(); err != nil {
			discard = true
		}
		c.tx = nil
	}
	c.sess.release(discard)
	c.sess = nil
	c.dirty, c.primaryState, c.textTx, c.autocommitOff, c.openRows = false, false, false, false, 0
}

// ResetSession is called by database/sql before reusing the connection.
// As with go-sql-driver, the session carries over to the next user of the
// logical connection: its held primary connection (no release and acquire
// per use) and any session state (SET, temporary tables, locks, an open
// text transaction) stay until database/sql closes the connection.
func (c *conn) ResetSession(ctx context.Context) error {
	if c.broken {
		return driver.ErrBadConn // our own conn: database/sql discards it
	}
	if c.cl.cfg.ResetSession {
		c.vars = sessionVars{} // backend connections are restored as they are used
	}
	if c.sess == nil {
		return nil
	}
	c.sess.raw = false // every result set of the last user is closed
	if c.cl.cfg.ResetSession && c.keep() {
		c.release() // the state goes with its backend connection
		return nil
	}
	if !c.keep() {
		if !c.cl.isPrimary(c.sess.node) {
			c.sess.release(false) // the node is no longer the primary
			c.sess = nil
			return nil
		}
		// Without state the held connection is checked when a statement
		// uses it, not here: a read that goes to a replica does not pay
		// for a check of the primary connection (checkHeld).
		c.unchecked = true
		return nil
	}
	// The held connection gets go-sql-driver's own check before reuse (a
	// stale connection the server closed: wait_timeout, a restart).
	if err := resetConn(ctx, c.sess.dc); err != nil {
		return c.lose()
	}
	return nil
}

// checkHeld gives the held connection, without session state, the
// liveness check ResetSession left for its first use; a dead one is
// dropped (lose) and the statement goes to a fresh connection.
func (c *conn) checkHeld(ctx context.Context) {
	if c.unchecked {
		c.recheck(ctx)
	}
}

// recheck is checkHeld's check.
func (c *conn) recheck(ctx context.Context) {
	c.unchecked = false
	if c.sess == nil {
		return
	}
	if err := resetConn(ctx, c.sess.dc); err != nil {
		_ = c.lose() // no state: never an error
	}
}

// lose handles a held connection found dead before anything was sent on
// it: without session state it is dropped and the logical connection goes
// on; with state (a transaction, SET, locks) the logical connection is
// broken, and database/sql, told driver.ErrBadConn, discards it, as it
// would a dead go-sql-driver connection.
func (c *conn) lose() error {
	if !c.keep() && c.tx == nil {
		c.sess.release(true)
		c.sess = nil
		return nil
	}
	c.broken = true
	c.tx = nil
	c.sess.release(true)
	c.sess = nil
	return driver.ErrBadConn
}

// IsValid reports whether database/sql may pool the connection again; a
// pure check.
func (c *conn) IsValid() bool { return !c.broken }

// Close ends the session and, for Driver.Open, the connector.
func (c *conn) Close() error {
	if c.sess != nil {
		// database/sql closes a connection no caller holds: every result
		// set of it is closed.
		c.sess.raw = false
	}
	c.release()
	if c.owner != nil {
		return c.owner.Close()
	}
	return nil
}
