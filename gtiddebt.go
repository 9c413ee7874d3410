package rwshard

import (
	"context"
	"sync"
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
// in the scope yet.
type gtidDebt struct {
	mu      sync.Mutex
	gen     uint64 // commits that left a GTID owed, counted
	covered uint64 // commits up to this count are in the scope's GTID
	owing   int    // backend connections owing a GTID now
	lost    uint64 // newest commit whose GTID was lost with its connection
}

// owe records a commit on b, in the connector's scope at t, whose GTID b
// keeps.
func (cl *cluster) owe(b *backend, t time.Time) {
	cl.global.wrote(t, health.GTIDSet{})
	d := &cl.debt
	b.debtor = cl
	d.mu.Lock()
	d.gen++
	if b.owe == 0 {
		d.owing++
	}
	b.owe = d.gen
	d.mu.Unlock()
}

// settle records that b's GTID is in the scope (or was lost with it).
func (d *gtidDebt) settle(b *backend, lost bool) {
	d.mu.Lock()
	d.owing--
	if lost {
		d.lost = max(d.lost, b.owe)
	}
	b.owe, b.debtor = 0, nil
	d.mu.Unlock()
}

// due reports whether a read must fetch the primary's position, and the
// commit count that fetch will cover.
func (d *gtidDebt) due() (bool, uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return (d.owing > 0 && d.gen > d.covered) || d.lost > d.covered, d.gen
}

func (d *gtidDebt) cover(gen uint64) {
	d.mu.Lock()
	d.covered = max(d.covered, gen)
	d.mu.Unlock()
}

// payOwed reads the GTID b owes into the connector's scope. A connection
// that broke cannot: its commit counts as lost, and the next read fetches
// the primary's position.
func (cl *cluster) payOwed(ctx context.Context, b *backend, broken bool) {
	if broken {
		cl.debt.settle(b, true)
		return
	}
	g := lastGTID(ctx, b)
	cl.global.wrote(time.Time{}, g)
	cl.debt.settle(b, g.IsZero())
}

// collect brings the connector's scope up to date before a causal read:
// from the connection this logical connection holds, then, if another
// connection still owes, from the primary's position.
func (c *conn) collect(ctx context.Context) {
	if c.sess != nil && c.sess.owe != 0 && c.openRows == 0 {
		c.cl.payOwed(ctx, c.sess, false)
	}
	due, gen := c.cl.debt.due()
	if !due {
		return
	}
	p := c.cl.primary()
	if !p.h.Up() {
		return // reads go on while the primary is away; the GTID stays unknown
	}
	q := "SELECT @@global.gtid_binlog_pos"
	if p.flavor.Load() == flavorMySQL {
		q = "SELECT @@global.gtid_executed"
	}
	b, err := p.acquire(ctx)
	if err != nil {
		return // the GTID stays unknown: the read follows the session window
	}
	v, err := queryValue(ctx, b.dc, q, nil)
	b.release(isBadConn(err))
	if err != nil {
		return
	}
	text, _ := v.(string)
	if g, err := health.ParseGTID(text); err == nil && !g.IsZero() {
		c.cl.global.wrote(time.Time{}, g)
		c.cl.debt.cover(gen)
	}
}

// payOwedOnRelease pays b's GTID before b goes back to its pool, where the
// next commit on it would overwrite @@last_gtid.
func (cl *cluster) payOwedOnRelease(b *backend, broken bool) {
	ctx, cancel := context.WithTimeout(context.Background(), cl.cfg.ProbeTimeout)
	defer cancel()
	cl.payOwed(ctx, b, broken)
}
