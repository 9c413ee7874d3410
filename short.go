package rwshard

import (
	"context"
	"database/sql/driver"

	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/router"
)

// The short path: a prepared statement executed again inside a BeginTx
// transaction, where route would return the route it remembered
// (stmt.routes) and runOn would run it on the held connection. It runs
// there directly: the same steps as runOn's session branch (the write
// check, the session variables, exec or query, the counters and latency,
// the server's error handling) and exec's or queryRows' tail, without
// the layers of statement, run and route between them.
//
// It exists for the cache: on cores the servers share, every statement
// starts with the client's code and data evicted, and those layers cost
// more in the lines they fetch than in the instructions they run
// (scripts/txshape-cachegrind). Anything unusual takes the full path: a
// hint in the context, a tracer or route log, a transaction guard or
// replay log, a held connection due for its check.

// shortRoute returns ps's remembered route when this execution can take
// the short path, else nil.
func (c *conn) shortRoute(ctx context.Context, ps *stmt) *routed {
	if c.tx == nil || c.sess == nil || c.unchecked || c.broken || c.guard != nil || c.replay != nil || c.cl.report {
		return nil
	}
	if _, hinted := hint.FromContext(ctx); hinted {
		return nil
	}
	r := ps.kept(router.State{InTx: true, Pinned: c.dirty})
	if r == nil || r.cls.Effect != 0 || r.d.Target != router.ToSession && !r.d.Pin {
		return nil
	}
	return r
}

// shortRun runs ps on c.sess, with rows (a query) or without (an exec), once
// shortRoute has returned r.
func (c *conn) shortRun(ctx context.Context, ps *stmt, r *routed, args []driver.NamedValue, withRows bool) (res driver.Result, rows driver.Rows, err error) {
	p := c.prep(ps)
	b := c.sess
	if !c.sessionTargetOK(b, r) {
		return nil, nil, c.checkSessionTarget(b, r, ps.q)
	}
	c.reached(b.node)
	c.cl.budget.Request()
	start := monotonic()
	var st driver.Stmt
	if err = b.applyVars(ctx, &c.vars); err == nil {
		if withRows {
			rows, st, err = query(ctx, b.dc, ps.q, args, p)
		} else {
			res, err = exec(ctx, b.dc, ps.q, args, p)
		}
	}
	c.cl.count(r.d.Reason, r.cls.Kind, b, err)
	b.node.meters.latency(r.cls.Kind, monotonic()-start)
	if err != nil {
		// In a transaction without a replay log the statement is never
		// run again (heldFailed needs no work to redo).
		_, err, _ = c.heldFailed(ctx, r, ps.q, nil, b, err)
		return nil, nil, err
	}
	write := changesData(&r.cls)
	if withRows {
		// A write's rows (INSERT … RETURNING) record it once closed.
		return nil, c.heldRows(ctx, ps.q, args, rows, st, write), nil
	}
	c.wrote(ctx, b, write)
	return res, nil, nil
}
