package rwshard

import (
	"context"
	"database/sql/driver"
	"math/rand/v2"
	"time"

	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/router"
)

// The short path: a prepared statement executed again inside a BeginTx
// transaction, on the held connection it last ran on, where route would
// return the route it remembered (stmt.routes) and runOn would run it
// there. It calls the backend's prepared statement (stmt.ent) directly,
// with what runOn's session branch and exec's or queryRows' tail do for
// such a statement and nothing else: no session variables to set (the
// connection has them), no cache lookup (the statement knows its entry),
// no argument conversion (CheckNamedValue did it), its counts in the
// connection's tally.
//
// It exists for the cache: on cores the servers share, every statement
// starts with the client's code and data evicted, and the layers of
// statement, run, route, exec and cache between database/sql and
// go-sql-driver cost more in the lines they fetch than in the
// instructions they run (scripts/txshape-cachegrind). Anything unusual
// takes the full path: a hint in the context, a tracer or route log, a
// transaction guard or replay log, a held connection due for its check,
// a statement not yet prepared on it (or dropped from its cache), session
// variables to apply, arguments not converted, a write whose connection
// is no longer the primary's.

// shortRoute returns ps's remembered route when this execution, with
// nargs arguments, can take the short path, else nil.
func (c *conn) shortRoute(ctx context.Context, ps *stmt, nargs int) *routed {
	if c.tx == nil || !c.argsChecked && nargs > 0 || c.sess == nil || c.unchecked || c.broken || c.guard != nil || c.replay != nil || c.cl.report {
		return nil
	}
	if _, hinted := hint.FromContext(ctx); hinted {
		return nil
	}
	r := ps.kept(router.State{InTx: true, Pinned: c.dirty})
	if r == nil || r.cls.Effect != 0 || r.d.Target != router.ToSession && !r.d.Pin {
		return nil
	}
	b := c.sess
	if bc := b.bc; bc == nil || ps.bc != bc || !ps.ent.live || bc.vars.key != c.vars.key || !c.sessionTargetOK(b, r) {
		return nil
	}
	return r
}

// shortRun runs ps on c.sess, with rows (a query) or without (an exec), once
// shortRoute has returned r.
func (c *conn) shortRun(ctx context.Context, ps *stmt, r *routed, args []driver.NamedValue, withRows bool) (res driver.Result, rows driver.Rows, err error) {
	c.argsChecked = false // consumed, as prep does
	b := c.sess
	c.reached(b.node)
	t := c.tallyFor(b.node, r.d.Reason)
	e := ps.ent
	ps.bc.stmts.touch(e, &t.hits)
	class := latencyClass(r.cls.Kind)
	timed := c.clock.due(class, b.node)
	var start time.Duration
	if timed {
		start = monotonic()
	}
	if withRows {
		rows, err = e.queryer.QueryContext(ctx, args)
	} else {
		res, err = e.execer.ExecContext(ctx, args)
	}
	d := c.clock.last[class]
	if timed {
		d = monotonic() - start
		c.clock.timed(class, b.node, d)
	}
	if err != nil {
		return nil, nil, c.shortFailed(ctx, ps, r, b, d, err)
	}
	t.add(r.cls.Kind, d)
	write := changesData(&r.cls)
	if withRows {
		// A write's rows (INSERT … RETURNING) record it once closed.
		return nil, c.heldRows(ctx, ps.q, args, rows, nil, write), nil
	}
	c.wrote(ctx, b, write)
	return res, nil, nil
}

// shortFailed is the short path's failed statement, counted at once as
// on the full path: a statement the server no longer knows leaves the
// cache (as exec's), and the error is handled as runOn's (in a
// transaction without a replay log the statement is never run again, so
// heldFailed needs no work to redo).
func (c *conn) shortFailed(ctx context.Context, ps *stmt, r *routed, b *backend, d time.Duration, err error) error {
	if staleStmt(err) {
		ps.bc.stmts.drop(ps.q)
	}
	c.cl.budget.Request()
	c.cl.count(r.d.Reason, r.cls.Kind, b, err)
	b.node.meters.latency(r.cls.Kind, d)
	_, err, _ = c.heldFailed(ctx, r, ps.q, nil, b, err)
	return err
}

// tally is what the short path counted in the running transaction and
// has not yet added to the connector's shared counters (the routes and
// reads, the node's statements, statement cache hits and latency
// histograms). A statement on the short path then writes only its own
// connection's memory: each shared counter is a cache line other cores
// write too, fetched from them when they did (an atomic handed between
// two goroutines took 72–255 ns a transfer on the project's two-core AMD
// machine); the full path writes five or six such counters per
// statement. flushTally adds the tally when the transaction ends, when
// the connection is let go, and every tallyMax statements, with the
// statements' deposits into the retry budget; a failed statement is
// counted at once, as on the full path. Stats and the metrics see a
// transaction's short-path statements by then. Its reads count as reads
// on the primary when its node is the primary at the flush (a tally holds
// one node's statements: in a transaction, those of one connection).
type tally struct {
	n      uint32 // statements
	reads  uint32 // of them plain reads (on the primary if node is when flushed)
	hits   uint32 // statement cache hits
	node   *node
	reason router.Reason
	lat    [2]localHist // by class: the rest, plain reads (as nodeMeters.latency)
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

// add tallies a statement of kind k that ran for d, as count and
// nodeMeters.latency would count it.
func (t *tally) add(k router.Kind, d time.Duration) {
	t.n++
	if k == router.Read {
		t.reads++
	}
	t.lat[latencyClass(k)].observe(d)
}

// latencyClass is the index of kind k's histogram in tally.lat and
// shortClock.last: 1 for plain reads, 0 for the rest.
func latencyClass(k router.Kind) int {
	if k == router.Read {
		return 1
	}
	return 0
}

// shortClock decides which of the short path's statements are timed.
// Timing one takes two clock reads: about a tenth of the instructions
// rwshard adds to such a statement (scripts/txshape-cachegrind: 1,554 of
// about 12,800 in a NEW_ORDER-shaped transaction). So about one in
// shortTimedEvery is timed, chosen at random, and each statement between
// is counted in its class's histogram at the duration of the last timed
// statement of its class on the same node. The counts stay exact; the
// buckets and sums of the short path's statements are estimates,
// unbiased as the gaps between timed statements do not depend on their
// durations. A statement with no timed one of its class on its node
// before it (on this logical connection) is timed.
type shortClock struct {
	untimed uint32           // statements to run untimed before the next timed one
	node    *node            // the node last durations were timed on
	last    [2]time.Duration // the last timed statement's duration, by latency class (0: none)
}

// shortTimedEvery is how many of the short path's statements, on
// average, there are to one timed.
const shortTimedEvery = 8

// due reports whether the next statement, of latency class class on n,
// is to be timed, and counts it if it is not.
func (k *shortClock) due(class int, n *node) bool {
	if k.untimed == 0 || k.last[class] == 0 || k.node != n {
		return true
	}
	k.untimed--
	return false
}

// timed records the duration of a timed statement on n and draws the
// number of statements to run untimed before the next one: 0 to
// 2×(shortTimedEvery-1), evenly.
func (k *shortClock) timed(class int, n *node, d time.Duration) {
	if k.node != n {
		k.node, k.last = n, [2]time.Duration{}
	}
	k.last[class] = max(d, 1)
	k.untimed = rand.Uint32N(2*shortTimedEvery - 1)
}

// flushTally adds c's tally to the shared counters and empties it.
func (c *conn) flushTally() {
	t := &c.tally
	if t.n == 0 && t.hits == 0 {
		return
	}
	n := t.node
	if t.n > 0 {
		var primaryReads uint64
		if c.cl.isPrimary(n) {
			primaryReads = uint64(t.reads)
		}
		c.cl.counted(t.reason, n, uint64(t.n), uint64(t.reads), primaryReads)
		c.cl.budget.Requests(int(t.n))
		n.meters.writes.merge(&t.lat[0])
		n.meters.reads.merge(&t.lat[1])
	}
	if t.hits > 0 {
		n.stmts.hits.Add(uint64(t.hits))
	}
	*t = tally{}
}
