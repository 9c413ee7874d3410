package rwshard

import (
	"context"
	"database/sql/driver"
	"time"
	"unsafe"

	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/route"
	"github.com/rwshard/rwshard/internal/shardhook"
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
	_ shardhook.Units           = (*conn)(nil)
)

// conn is a logical connection: what database/sql pools on the caller's
// side, a thin shell over the plan (plan.go) and the executor
// (execute.go). While idle in that pool it holds no backend connection
// but, without session state, the primary connection it last used.
//
// While a caller holds it (a *sql.Conn, a *sql.Tx, or one db.Query), it
// keeps the primary connection it last used (sess), so that connection-bound
// reads such as LAST_INSERT_ID() see the caller's own writes, exactly as on
// one go-sql-driver connection; plain reads still go to replicas. A
// statement that changes session state, or a transaction, pins the logical
// connection to sess: every statement runs there (see hold).
type conn struct {
	// What every statement reads comes first: on the first cache line
	// the held connection, the transaction and the flags a statement
	// tests; on the second the short path's state (short.go) and what it
	// compares. On cores the servers share, each line a statement
	// touches is fetched again at every statement.
	hold
	// argsChecked: CheckNamedValue converted the arguments of the
	// statement database/sql is about to run (see prep).
	argsChecked bool
	// report and ryw are the cluster's (a statement is reported when it
	// ends; read-your-writes is on), copied here with the flags a
	// statement reads.
	report, ryw bool
	// A write inside a transaction is recorded for read-your-writes when
	// the transaction commits, in the session it ran in.
	pendingWrite bool

	// The short path's state (see shortState), with the context a
	// statement last found no hint in (see hintOf), and the session
	// variables, which every statement compares.
	short shortState
	// plainCtx is the last context a statement of the open BeginTx
	// transaction found to carry no hint (see hintOf); its
	// read-your-writes scope is ctxScope.
	plainCtx context.Context
	// vars are the session variables this logical connection set without
	// pinning (route.ReplayableSet), applied to every backend connection
	// before its statements run (see applyVars).
	vars sessionVars
	cl   *cluster
	// hist is the short path's tallied durations.
	hist shortHist

	pendingSess *Session
	// ctxScope is plainCtx's read-your-writes scope (see hintOf), beside
	// pendingSess, which a transaction's start and end write too.
	ctxScope *Session
	// rule is the pool rule (1-based, Config.PoolRules) that chose the
	// last routed read's pool; 0: none.
	rule int
	// lostBy is the error the statement that lost the session got
	// (ErrSessionLost, ErrTxIdleTimeout): a Commit after it says it again.
	lostBy *RouteError
	// kept is the held connection's state that hold.more stands for.
	kept kept

	owner *Connector // set by Driver.Open: closed with the connection
	// rows is the result set of a statement run on the held connection,
	// handed to database/sql without an allocation of its own while
	// rowsOut says it is in use (a second open result set gets its own).
	rows rows
	// A BeginTx transaction's tracer context and start (Config.Tracer).
	txCtx   context.Context
	txStart time.Duration

	// 576 bytes, a size class of nine cache lines, so that the allocator
	// places every connection on a line boundary: the first line of a
	// connection is then never the last of another, which another core
	// writes (false sharing); sizeof_test.go checks it. A field added
	// needs padding to the next such size.
}

// newConn is a logical connection of cl.
func newConn(cl *cluster) *conn {
	return &conn{cl: cl, report: cl.report, ryw: cl.ryw}
}

// hintOf returns the hint ctx carries. In a BeginTx transaction, a
// context found without one is remembered (plainCtx) with its
// read-your-writes scope (ctxScope): a context's values never change, so
// the transaction's statements that follow in the same context walk its
// chain for neither. Both are dropped when the transaction ends, so that
// the logical connection, idle in database/sql's pool, keeps no caller's
// context alive.
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
// interface comparison. Two contexts it calls different may still be
// equal (a context type that is not a pointer, boxed twice): they are
// then looked up as two.
func sameCtx(a, b context.Context) bool {
	x, y := (*[2]unsafe.Pointer)(unsafe.Pointer(&a)), (*[2]unsafe.Pointer)(unsafe.Pointer(&b))
	return x[0] == y[0] && x[1] == y[1] // not x == y: an array comparison calls memequal
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
	pr := c.prep(ps)
	var out results
	var p plan
	e := exe{c: c, q: q}
	b, err := c.statement(ctx, args, ps, &e, &p, &out, func(dc driver.Conn) (err error) {
		out.rows, out.st, err = query(ctx, dc, q, args, pr)
		return err
	})
	if err != nil {
		return nil, err
	}
	if b != nil {
		r := &b.rows
		r.Rows.Rows, r.st, r.b = out.rows, out.st, b
		if h := c.cl.holds; h != nil && !c.inTx() {
			r.hold = h.begin("a result set", q, b.node.name, b.bc, nil)
		}
		return r, nil
	}
	return c.heldRows(ctx, q, args, out.rows, out.st, wrote(&p), e.gen, e.lost), nil
}

// heldRows hands database/sql the rows of a statement that ran on c.sess
// (st: a one-off statement to close with them).
// write reports a statement that changes data, whose rows record it once
// they are closed, at the session tracker's counts gen and lost.
func (c *conn) heldRows(ctx context.Context, q string, args []driver.NamedValue, rs driver.Rows, st driver.Stmt, write bool, gen, lost uint64) driver.Rows {
	c.openRows++
	// The connection's own, while no other rows of it are open: its
	// other fields (st, b, log, Meta) are nil since it was last closed.
	r := &c.rows
	if c.rowsOut {
		r = new(rows)
	}
	c.rowsOut = true
	r.Rows.Rows, r.c, r.write, r.ctx = rs, c, write, ctx
	r.gen, r.lost = gen, lost
	if st != nil {
		r.st = st
	}
	if c.replay != nil && c.tx != nil {
		r.log = c.replay.record(q, args, true, c.cl.cfg.ReplayLimit)
	}
	if h := c.cl.holds; h != nil && !c.inTx() {
		// A transaction's rows are its hold's.
		r.hold = h.begin("a result set", q, c.sess.node.name, c.sess.bc, nil)
	}
	return r
}

// QueryUnit and ExecUnit run a unit of a sharded statement (see
// shardhook.Units): a statement like any other, whose class the sharding
// module gives, run as a prepared statement when prepared.
func (c *conn) QueryUnit(ctx context.Context, q string, args []driver.NamedValue, cls route.Class, prepared bool) (driver.Rows, error) {
	return c.queryRows(ctx, q, args, unitStmt(c, q, cls, prepared))
}

func (c *conn) ExecUnit(ctx context.Context, q string, args []driver.NamedValue, cls route.Class, prepared bool) (driver.Result, error) {
	return c.exec(ctx, q, args, unitStmt(c, q, cls, prepared))
}

// ExecContext routes and runs a statement without rows.
func (c *conn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return c.exec(ctx, q, args, nil)
}

func (c *conn) exec(ctx context.Context, q string, args []driver.NamedValue, ps *stmt) (driver.Result, error) {
	pr := c.prep(ps)
	var out results
	var p plan
	e := exe{c: c, q: q}
	b, err := c.statement(ctx, args, ps, &e, &p, &out, func(dc driver.Conn) (err error) {
		out.res, err = exec(ctx, dc, q, args, pr)
		return err
	})
	if err != nil {
		return nil, err
	}
	if b != nil {
		c.recordWrite(ctx, b, wrote(&p), e.gen, e.lost)
		b.release(false)
	} else {
		if c.replay != nil && c.tx != nil {
			if l := c.replay.record(q, args, false, c.cl.cfg.ReplayLimit); l != nil {
				l.sum = resultSum(out.res)
			}
		}
		c.recordWrite(ctx, c.sess, wrote(&p), e.gen, e.lost)
		c.unpin()
	}
	return out.res, nil
}

// statement plans e's statement into p and runs it (see exe.run), with
// do leaving its result in out, and reports it when a tracer or the
// route log is on. It returns the backend connection the statement ran
// on for the caller to release (nil: c.sess).
func (c *conn) statement(ctx context.Context, args []driver.NamedValue, ps *stmt, e *exe, p *plan, out *results, do work) (*backend, error) {
	if !c.report {
		b, _, err := e.run(ctx, p, ps, out, do)
		return b, err
	}
	tr := c.cl.cfg.Tracer
	if tr != nil {
		ctx = tr.StatementStart(ctx, StatementStart{SQL: e.q, Args: len(args)})
	}
	b, took, err := e.run(ctx, p, ps, out, do)
	if c.cl.cfg.RouteLog && p.ok {
		e.logRoute(ctx, p, args, took, err)
	}
	if tr != nil {
		tr.StatementEnd(ctx, e.statementEnd(p, out, took, err))
	}
	return b, err
}

// wrote reports whether plan p ran a statement that changes data.
func wrote(p *plan) bool { return p.ok && changesData(&p.r.cls) }

// PrepareContext returns a statement that is routed on every execution.
// As go-sql-driver's Prepare does, it lets the server check the statement
// now (a syntax error is Prepare's error): on the connection the logical
// connection holds, taking one of the primary if it holds none, and kept
// in that connection's statement cache, so an execution there costs
// nothing more. Elsewhere it is prepared once per backend connection (see
// StmtCacheSize). A read checked there moves no balancer.
func (c *conn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	ps := &stmt{c: c, q: q}
	var p plan
	if err := c.plan(ctx, q, ps, &p); err != nil {
		return nil, err
	}
	// Prepared, not run: the session stays as it is, and nothing is
	// counted as a statement.
	p.where, p.effects, p.stmt = toHeld, 0, false
	e := exe{c: c, q: q}
	if err := e.runHeld(ctx, &p, func(dc driver.Conn) error {
		if bc, ok := dc.(*backendConn); ok && bc.stmts != nil {
			_, err := bc.cached(ctx, q, ps)
			return err
		}
		st, err := prepare(ctx, dc, q)
		if err == nil {
			st.Close()
		}
		return err
	}); err != nil {
		return nil, err
	}
	return ps, nil
}

// Exec and Query are the pre-context forms, for callers that type-assert
// them on the driver connection (database/sql itself uses the context
// ones). Their arguments come unconverted (no CheckNamedValue before
// them).
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

// Ping checks the primary, or the held connection. A logical connection
// whose session broke is reported bad, as BeginTx and every statement
// report it: a program that pings before each transaction and takes a
// new *sql.Conn when the ping fails (go-tpc) would otherwise keep the
// broken one for ever.
func (c *conn) Ping(ctx context.Context) error {
	if c.broken {
		return driver.ErrBadConn
	}
	c.checkHeld(ctx)
	if c.sess != nil {
		if err := pingConn(ctx, c.sess.dc); err != nil {
			return c.sessionErr(err, judge(ctx, err), router.ReasonSessionPinned, "PING", false)
		}
		return nil
	}
	p := plan{r: routed{cls: route.Class{Kind: route.SessionRead}}, ok: true, reason: router.ReasonWrite}
	e := exe{c: c, q: "PING"}
	b, err := e.runPrimary(ctx, &p, router.ReasonWrite, func(dc driver.Conn) error { return pingConn(ctx, dc) })
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
	if ps != nil && ps.text {
		p.st = nil // a unit run as a text statement
	}
	c.argsChecked = false
	return p
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
	if c.sess == nil {
		return nil
	}
	c.sess.raw = false // every result set of the last user is closed
	if len(c.kept.capture) > 0 {
		// User variables are replayed: their values go on with the
		// logical connection.
		if err := c.captureVars(ctx); err != nil {
			return c.lose()
		}
	}
	if c.pinned() {
		// State that would send the next user's reads to the primary.
		if c.cl.cfg.ResetSession {
			c.release() // the state goes with its backend connection
			return nil
		}
		c.cl.mon.Emit(health.Event{Kind: health.SessionPinned, Node: c.sess.node.name,
			Detail: "a pooled connection stays pinned to the primary by " + c.kept.pinnedBy + " (rwshard.resetSession=false)"})
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
