package rwshard

import (
	"context"
	"database/sql/driver"

	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/router"
)

// The short path: a prepared statement executed again inside a BeginTx
// transaction, on the connection the transaction holds, where it is
// prepared already. Everything route and runOn would decide for it is
// known: its route is remembered (stmt.routes), it runs on c.sess, its
// arguments are converted (CheckNamedValue), its cache entry is known
// (stmt.ent). What is left is what any statement does there: the write
// check, the counters and latency, the server's error handling, and
// read-your-writes.
//
// It exists for the cache: on cores the servers share, every statement
// starts with the client's code and data evicted, and the full path's
// decisions cost more in the lines they fetch than in the instructions
// they run (scripts/txshape-cachegrind). Anything unusual takes the full
// path: a hint in the context, a tracer or route log, a transaction guard
// or replay log, session variables to apply, a connection to check.

// shortRoute returns ps's remembered route when this execution can take
// the short path, else nil.
func (c *conn) shortRoute(ctx context.Context, ps *stmt) *routed {
	b := c.sess
	if c.tx == nil || b == nil || b.bc == nil || ps.bc != b.bc || !ps.ent.live || !c.argsChecked ||
		c.unchecked || c.broken || c.guard != nil || c.replay != nil || c.cl.report || b.bc.vars.key != c.vars.key {
		return nil
	}
	if _, hinted := hint.FromContext(ctx); hinted {
		return nil
	}
	r := ps.routes[stateIndex(router.State{InTx: true, Pinned: c.dirty})]
	if r == nil || r.cls.Effect != 0 || r.d.Target != router.ToSession && !r.d.Pin {
		return nil
	}
	return r
}

// shortRun runs ps on c.sess, given its cache entry, as a query (rows)
// or an exec (res): what run, runOn and exec or queryRows do for it once
// shortRoute has returned r.
func (c *conn) shortRun(ctx context.Context, ps *stmt, r *routed, args []driver.NamedValue, query bool) (res driver.Result, rows driver.Rows, err error) {
	c.argsChecked = false
	b := c.sess
	if !c.sessionTargetOK(b, r) {
		return nil, nil, c.checkSessionTarget(b, r, ps.q)
	}
	c.reached(b.node)
	c.cl.budget.Request()
	start := monotonic()
	b.bc.stmts.touch(ps.ent)
	if query {
		rows, err = ps.ent.queryer.QueryContext(ctx, args)
	} else {
		res, err = ps.ent.execer.ExecContext(ctx, args)
	}
	c.cl.count(r.d.Reason, r.cls.Kind, b, err)
	b.node.meters.latency(r.cls.Kind, monotonic()-start)
	if err != nil {
		if staleStmt(err) {
			b.bc.stmts.drop(ps.q)
		}
		// In a transaction without a replay log the statement is never
		// run again (heldFailed needs no work to redo).
		_, err, _ = c.heldFailed(ctx, r, ps.q, nil, b, err)
		return nil, nil, err
	}
	if query {
		// A write's rows (INSERT … RETURNING) record it once closed.
		return nil, c.heldRows(ctx, ps.q, args, rows, nil, changesData(&r.cls)), nil
	}
	// What wrote does inside a transaction: a write is recorded at the
	// commit.
	if c.cl.ryw && changesData(&r.cls) {
		c.pendingWrite, c.pendingSess = true, c.cl.scope(ctx)
	}
	return res, nil, nil
}
