package rwshard

import (
	"context"
	"database/sql/driver"
	"math/rand/v2"
	"time"

	"github.com/rwshard/rwshard/internal/route"
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
// connection's tally, and a read's rows handed to database/sql as the
// backend's own, without rwshard's wrapper (see stmt.QueryContext).
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

// shortInfo is what the short path needs of a statement's remembered
// route in a BeginTx transaction (stmt.routes for route.State{InTx:
// true}, pinned or not), derived once when the route is remembered
// (stmt.remember), so that an execution reads it from the statement's
// own first cache line instead of the route's.
type shortInfo struct {
	ok     bool // the route runs on the session connection and changes no session state
	read   bool // a plain read (route.Read): it may run on a session held on a replica
	write  bool // it changes data (changesData): recorded for read-your-writes
	reason router.Reason
}

// shortInfoOf derives r's shortInfo.
func shortInfoOf(r *routed) shortInfo {
	return shortInfo{
		ok:     r.cls.Effect == 0 && (r.d.Target == route.ToSession || r.d.Pin),
		read:   r.cls.Kind == route.Read,
		write:  changesData(&r.cls),
		reason: r.d.Reason,
	}
}

// latencyClass is the index of a statement's histogram in conn.shortLat
// and of its durations in shortState: 1 for plain reads, 0 for the rest.
func (si *shortInfo) latencyClass() int {
	if si.read {
		return 1
	}
	return 0
}

// shortRoute returns what ps's remembered route says of this execution,
// with nargs arguments, when it can take the short path, else nil. What
// it reads is on cache lines the statement's arguments brought in
// (CheckNamedValue reads c.sess and its connection for each), the
// statement's first line and its cache entry's, in that order.
func (ps *stmt) shortRoute(ctx context.Context, nargs int) *shortInfo {
	c := ps.c
	if c.tx == nil || !c.argsChecked && nargs > 0 || c.sess == nil || c.unchecked || c.broken || c.guard != nil || c.replay != nil || c.report {
		return nil
	}
	si := &ps.short[b2i(c.dirty)]
	if !si.ok {
		return nil
	}
	b := c.sess
	bc := b.bc
	if bc == nil || ps.bc != bc || !ps.ent.live || !targetOK(b, si.read) {
		return nil
	}
	if len(bc.vars.key)|len(c.vars.key) != 0 || !sameCtx(ctx, c.plainCtx) {
		return ps.shortRouteRare(ctx, bc, si)
	}
	return si
}

// shortRouteRare is shortRoute's last test when session variables are
// set or the context is not the one last found without a hint
// (conn.plainCtx): the first is rare, the second once per context, and
// their comparison and lookup calls, out of line, leave shortRoute's
// common path without spills. A context without a hint is remembered
// (hintOf): its values never change.
//
//go:noinline
func (ps *stmt) shortRouteRare(ctx context.Context, bc *backendConn, si *shortInfo) *shortInfo {
	c := ps.c
	if !sameKey(bc.vars.key, c.vars.key) {
		return nil
	}
	if _, hinted := c.hintOf(ctx); hinted {
		return nil
	}
	return si
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// shortTimed runs ps's backend statement with the clock read around it,
// for a statement of the short path that is timed (shortState.due), after
// flushing a full tally. The others run from stmt's ExecContext and
// QueryContext, without the clock's code and state in their frames.
func (ps *stmt) shortTimed(ctx context.Context, si *shortInfo, args []driver.NamedValue, withRows bool) (res driver.Result, rows driver.Rows, err error) {
	c := ps.c
	if c.short.n >= tallyMax {
		c.short.flush(c.cl, &c.hist)
	}
	e := ps.ent
	start := monotonic()
	if withRows {
		rows, err = e.queryer.QueryContext(ctx, args)
	} else {
		res, err = e.execer.ExecContext(ctx, args)
	}
	c.short.timed(&c.hist, si.latencyClass(), monotonic()-start)
	return res, rows, err
}

// shortCount counts a statement that succeeded on the short path in the
// tally. It inlines; a full tally is flushed by the next statement, which
// is timed for it (shortState.due, shortTimed).
func (s *shortState) count(si *shortInfo) {
	s.n++
	s.pending[si.latencyClass()]++
}

// shortFailed is the short path's failed statement, counted at once as
// on the full path: a statement the server no longer knows leaves the
// cache (as exec's), and the error is handled as runOn's (in a
// transaction without a replay log the statement is never run again, so
// heldFailed needs no work to redo).
func (ps *stmt) shortFailed(ctx context.Context, si *shortInfo, err error) error {
	c := ps.c
	b, d := c.sess, c.hist.last[si.latencyClass()]
	r := ps.kept(route.State{InTx: true, Pinned: c.dirty})
	ps.bc.stmts.stats.hits.Add(1) // it found its statement prepared: a hit, counted at once as the failure
	if staleStmt(err) {
		ps.bc.stmts.drop(ps.q)
	}
	c.cl.budget.Request()
	p := plan{r: *r, ok: true, reason: r.d.Reason, where: toHeld, effects: r.cls.Effect, stmt: true}
	e := exe{c: c, q: ps.q, final: r.d.Reason, out: judge(ctx, err)}
	e.reached(b.node)
	if e.out != notSent {
		b.node.queries.Add(1)
	}
	b.node.meters.serverError(err)
	if e.out.connectionFailed() {
		b.node.errors.Add(1)
	}
	c.cl.account(&e, &p, d)
	// In a transaction without a replay log nothing is run again: the
	// connection's state is the transaction's.
	_, err = e.heldFailed(ctx, &p, b, e.out, err)
	return err
}

// shortState is the short path's own state on a logical connection:
// which of its statements are timed (the clock), and what it counted and
// has not yet added to the connector's shared counters (the tally). Its
// fields lie on one cache line of the connection, the histograms apart
// (conn.shortLat): an untimed statement writes that line only.
//
// The tally. A statement on the short path writes only its own
// connection's memory: each shared counter is a cache line other cores
// write too, fetched from them when they did; the full path writes five
// or six such counters per statement. flushTally adds the tally (the routes and reads, the node's
// statements, statement cache hits and latency histograms) when the
// transaction ends, when the connection is let go, and before the
// statement after every tallyMax (that statement is timed, so that the
// flush stays off the untimed statements' code), with the statements'
// deposits into the retry budget; a
// failed statement is counted at once, as on the full path. Stats and the
// metrics see a transaction's short-path statements by then. Its reads
// count as reads on the primary when its node is the primary at the
// flush (a tally holds one node's statements: in a transaction, those of
// one connection).
//
// The clock. Timing a statement takes two clock reads, a sizeable share
// of what rwshard adds to a short statement, and their code is fetched
// again on cold cores (docs/performance.md). So about one in
// shortTimedEvery is timed, chosen at random, and each
// statement between is counted in its class's histogram at the duration
// of the last timed statement of its class on the same node: pending
// until the next timed one of its class, or the flush, puts them in that
// duration's bucket together. The counts stay exact;
// the buckets and sums of the short path's statements are estimates,
// unbiased as the gaps between timed statements do not depend on their
// durations. A statement with no timed one of its class on its node
// before it (on this logical connection) is timed.
type shortState struct {
	node    *node     // the node of the statements tallied and timed, or nil
	n       uint32    // statements tallied
	pending [2]uint32 // of them, those not yet in conn.shortLat, to be counted at conn.shortLast[class]
	untimed uint32    // statements to run untimed before the next timed one
	bucket  [2]uint8  // the histogram bucket of each of conn.shortLast's durations
	// sampled: a statement of the class was timed on node; its duration
	// is in conn.shortLast, off this line (the timed statements read it).
	sampled [2]bool
	reason  router.Reason // the route of the statements tallied
}

// tallyMax is how many statements a tally holds at most.
const tallyMax = 64

// shortTimedEvery is how many of the short path's statements, on
// average, there are to one timed.
const shortTimedEvery = 16

// shortOn prepares c's short-path state for a statement on n routed for
// reason: a tally of other statements (another node or route) is flushed
// first, and on another node the clock starts again (a full tally is
// flushed by the next statement, see shortCount). It inlines: the
// statements of a transaction, one node's and one route's, make no call.
func (s *shortState) on(c *conn, n *node, reason router.Reason) {
	if s.node != n || s.reason != reason {
		s.switchTo(c, n, reason)
	}
}

// switchTo is on's work for a statement of another node or route.
func (s *shortState) switchTo(c *conn, n *node, reason router.Reason) {
	s.flush(c.cl, &c.hist)
	if s.node != n {
		s.node, s.sampled = n, [2]bool{}
	}
	s.reason = reason
}

// due reports whether the next statement, of latency class class, is to
// be timed, and counts it if it is not. A statement that finds the tally
// full is timed too: shortTimed flushes it.
func (s *shortState) due(class int) bool {
	if s.untimed == 0 || !s.sampled[class] || s.n >= tallyMax {
		return true
	}
	s.untimed--
	return false
}

// timed records the duration of a timed statement of class class, after
// counting the statements pending at the one before, and draws the
// number of statements to run untimed before the next one: 0 to
// 2×(shortTimedEvery-1), evenly.
func (s *shortState) timed(h *shortHist, class int, d time.Duration) {
	s.settle(h, class)
	h.last[class], s.sampled[class] = d, true
	s.bucket[class] = uint8(bucketOf(d))
	s.untimed = rand.Uint32N(2*shortTimedEvery - 1)
}

// settle counts the statements of class class pending at their duration.
func (s *shortState) settle(h *shortHist, class int) {
	if k := s.pending[class]; k > 0 {
		l := &h.lat[class]
		l.buckets[s.bucket[class]] += k
		l.sum += int64(k) * int64(h.last[class])
		s.pending[class] = 0
	}
}

// shortHist is the short path's tallied durations by latency class (see
// shortInfo.latencyClass): the rest, plain reads (as nodeMeters.latency);
// and the duration of the last timed statement of each class on
// shortState.node (shortState.sampled says there was one). A connection
// keeps it off the cache lines every statement reads: only timed
// statements and the flush touch it.
type shortHist struct {
	lat  [2]localHist
	last [2]time.Duration
}

// flush adds the tally to cl's shared counters and empties it; the clock
// goes on.
func (s *shortState) flush(cl *cluster, h *shortHist) {
	if s.n == 0 {
		return
	}
	s.settle(h, 0)
	s.settle(h, 1)
	n, lat := s.node, &h.lat
	reads := uint64(lat[1].count())
	var primaryReads uint64
	if cl.isPrimary(n) {
		primaryReads = reads
	}
	cl.counted(s.reason, n, uint64(s.n), reads, primaryReads)
	cl.budget.Requests(int(s.n))
	n.meters.writes.merge(&lat[0])
	n.meters.reads.merge(&lat[1])
	n.stmts.hits.Add(uint64(s.n)) // every statement of the short path is a hit
	s.n = 0
	*lat = [2]localHist{}
}
