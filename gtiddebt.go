package rwshard

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/rwshard/rwshard/health"
)

// GTIDs read late. In causal mode a commit's GTID is what a later read
// waits for, and reading it (SELECT @@last_gtid) costs a statement per
// committed transaction. A transaction committed in the connector's scope
// (no Session in its context) on a primary connection that its logical
// connection keeps, which is what every transaction does under
// database/sql, leaves that GTID on the backend connection instead: the
// connection owes it (backend.owe). It is read when a read needs it, or
// when the connection goes back to its pool (before anyone else commits on
// it): a service whose transactions are not followed by reads in the same
// scope (TPC-C: its reads are inside transactions, on the primary) never
// pays for it. A read in the scope on another logical connection cannot
// use a connection it does not hold: it reads the primary's whole
// position instead (@@global.gtid_binlog_pos, which holds every GTID
// committed before it), at most once per batch of commits before it.
//
// An explicit Session reads its GTID at commit, as before: its token
// (Session.Token) must carry it.

// gtidDebt tracks the commits of the connector's scope whose GTID is not
// in the scope yet. Every causal read of the scope asks due, so it is
// lock-free.
type gtidDebt struct {
	gen     atomic.Uint64 // commits that left a GTID owed, counted
	covered atomic.Uint64 // commits up to this count are in the scope's GTID
	owing   atomic.Int64  // backend connections owing a GTID now
}

// owe records a commit on b, in the connector's scope at t, whose GTID b
// keeps.
func (cl *cluster) owe(b *backend, t time.Time) {
	cl.global.wroteLate("", t)
	if !b.owe {
		cl.debt.owing.Add(1)
	}
	b.owe, b.oweAt, b.debtor = true, t, cl
	cl.debt.gen.Add(1)
}

// settle records that b owes nothing any more.
func (d *gtidDebt) settle(b *backend) {
	d.owing.Add(-1)
	b.owe, b.debtor = false, nil
}

// due reports whether a read must fetch the primary's position, and the
// commit count that fetch will cover.
func (d *gtidDebt) due() (bool, uint64) {
	if d.owing.Load() == 0 {
		return false, 0
	}
	gen := d.gen.Load()
	return gen > d.covered.Load(), gen
}

// cover records that the commits up to gen are in the scope's GTID.
func (d *gtidDebt) cover(gen uint64) {
	for {
		c := d.covered.Load()
		if c >= gen || d.covered.CompareAndSwap(c, gen) {
			return
		}
	}
}

// payOwed reads the GTID b owes into the connector's scope. A connection
// that broke cannot: its commit's GTID is unknown (Session.rule), and the
// next read fetches the primary's position.
func (cl *cluster) payOwed(ctx context.Context, b *backend, broken bool) {
	var g health.GTIDSet
	if !broken {
		g = lastGTID(ctx, b)
	}
	if g.IsZero() {
		cl.global.wroteOn("", b.oweAt, g)
	} else {
		cl.global.gtidOf("", g, time.Time{})
	}
	cl.debt.settle(b)
}

// collect brings the connector's scope up to date before a causal read:
// from the connection this logical connection holds, then, if another
// connection still owes, from the primary's position.
func (c *conn) collect(ctx context.Context) {
	if c.sess != nil && c.sess.owe && c.openRows == 0 {
		c.checkHeld(ctx)
		if c.sess != nil && c.sess.owe { // lose pays what a dropped connection owed
			c.cl.payOwed(ctx, c.sess, false)
		}
	}
	if due, gen := c.cl.debt.due(); due && c.cl.position(ctx, &c.cl.global, "") {
		c.cl.debt.cover(gen)
	}
}

// position reads the primary's whole GTID position into part name of s:
// it holds every write acknowledged before the read began. False when
// the primary is away or does not answer: the GTIDs stay as they were
// (a read follows the time rule for a write whose GTID is unknown).
func (cl *cluster) position(ctx context.Context, s *Session, name string) bool {
	p := cl.primary()
	if !p.h.Up() {
		return false // reads go on while the primary is away
	}
	q := "SELECT @@global.gtid_binlog_pos"
	if p.flavor.Load() == flavorMySQL {
		q = "SELECT @@global.gtid_executed"
	}
	asOf := time.Now()
	b, err := p.acquire(ctx)
	if err != nil {
		return false
	}
	v, err := queryValue(ctx, b.dc, q, nil)
	b.release(isBadConn(err))
	if err != nil {
		return false
	}
	text, _ := v.(string)
	g, err := health.ParseGTID(text)
	if err != nil || g.IsZero() {
		return false
	}
	s.gtidOf(name, g, asOf)
	return true
}

// payOwedOnRelease pays b's GTID before b goes back to its pool, where the
// next commit on it would overwrite @@last_gtid.
func (cl *cluster) payOwedOnRelease(b *backend, broken bool) {
	ctx, cancel := context.WithTimeout(context.Background(), cl.cfg.ProbeTimeout)
	defer cancel()
	cl.payOwed(ctx, b, broken)
}
