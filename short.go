package rwshard

import (
	"context"
	"database/sql/driver"
	"time"

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
	t := c.tallyFor(b.node, r.d.Reason)
	p.hits = &t.hits
	start := monotonic()
	var st driver.Stmt
	if err = b.applyVars(ctx, &c.vars); err == nil {
		if withRows {
			rows, st, err = query(ctx, b.dc, ps.q, args, p)
		} else {
			res, err = exec(ctx, b.dc, ps.q, args, p)
		}
	}
	d := monotonic() - start
	if err != nil {
		c.cl.count(r.d.Reason, r.cls.Kind, b, err)
		b.node.meters.latency(r.cls.Kind, d)
		// In a transaction without a replay log the statement is never
		// run again (heldFailed needs no work to redo).
		_, err, _ = c.heldFailed(ctx, r, ps.q, nil, b, err)
		return nil, nil, err
	}
	t.add(c.cl, r.cls.Kind, d)
	write := changesData(&r.cls)
	if withRows {
		// A write's rows (INSERT … RETURNING) record it once closed.
		return nil, c.heldRows(ctx, ps.q, args, rows, st, write), nil
	}
	c.wrote(ctx, b, write)
	return res, nil, nil
}

// tally is what the short path counted in the running transaction and
// has not yet added to the connector's shared counters (the routes and
// reads, the node's statements, statement cache hits and latency
// histograms). A statement on the short path then writes only its own
// connection's memory: each shared counter is a cache line other cores
// write too, fetched from them when they did (an atomic handed between
// two goroutines took 72–255 ns a transfer on the project's two-core AMD
// machine); the full path writes five or six such counters per statement. flushTally adds the tally
// when the transaction ends, when the connection is let go, and every
// tallyMax statements; a failed statement is counted at once, as on the
// full path. Stats and the metrics see a transaction's short-path
// statements by then.
type tally struct {
	n            uint32 // statements
	reads        uint32 // of them plain reads
	primaryReads uint32 // of those, on the primary
	hits         uint32 // statement cache hits
	node         *node
	reason       router.Reason
	lat          [2]localHist // by class: the rest, plain reads (as nodeMeters.latency)
}

// tallyMax is how many statements a tally holds at most.
const tallyMax = 64

// tallyFor returns c's tally, for statements on n routed for reason:
// flushed first if it holds others' or is full.
func (c *conn) tallyFor(n *node, reason router.Reason) *tally {
	t := &c.tally
	if t.node != n || t.reason != reason || t.n >= tallyMax {
		c.flushTally()
		t.node, t.reason = n, reason
	}
	return t
}

// add tallies a statement of class k that ran for d, as count and
// nodeMeters.latency would count it.
func (t *tally) add(cl *cluster, k router.Kind, d time.Duration) {
	t.n++
	class := 0
	if k == router.Read {
		t.reads++
		if cl.isPrimary(t.node) {
			t.primaryReads++
		}
		class = 1
	}
	t.lat[class].observe(d)
}

// flushTally adds c's tally to the shared counters and empties it.
func (c *conn) flushTally() {
	t := &c.tally
	if t.n == 0 && t.hits == 0 {
		return
	}
	n := t.node
	if t.n > 0 {
		c.cl.counted(t.reason, n, uint64(t.n), uint64(t.reads), uint64(t.primaryReads))
		n.meters.writes.merge(&t.lat[0])
		n.meters.reads.merge(&t.lat[1])
	}
	if t.hits > 0 {
		n.stmts.hits.Add(uint64(t.hits))
	}
	*t = tally{}
}
