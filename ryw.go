package rwshard

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rwshard/rwshard/internal/monitor"
)

// Recording writes for read-your-writes. A write that succeeds outside a
// transaction, or a COMMIT after writes, is recorded in its scope
// (Session, or the connector's) with the GTID the server reported in the
// write's own OK packet (sessiontrack.go): nothing more is sent on the
// caller's connection, and the GTID is known even if the primary dies
// right after. Where it cannot be known (a connection rwshard does not
// watch, MySQL), the write is recorded with its GTID unknown, and the
// scope's next causal read asks the primary for its position.

// recordWrite notes a statement that succeeded on b for read-your-writes:
// a write (write) at once in autocommit, a transaction's writes at its
// commit. gen and lost are the session tracker's counts on b when the
// statement began: the GTID b's server reported since is the write's. It
// inlines: a statement with nothing to record makes no call.
func (c *conn) recordWrite(ctx context.Context, b *backend, write bool, gen, lost uint64) {
	if c.ryw && (write || c.pendingWrite) {
		c.committed(ctx, b, write, gen, lost)
	}
}

// committed is recordWrite's work.
func (c *conn) committed(ctx context.Context, b *backend, write bool, gen, lost uint64) {
	if write {
		c.pendingWrite, c.pendingSess = true, c.scope(ctx)
	}
	if !c.pendingWrite || c.inTx() {
		return
	}
	s := c.pendingSess
	c.pendingWrite, c.pendingSess = false, nil
	var gtid monitor.GTIDSet
	state := gtidUnknown
	if b != nil && b.bc != nil {
		gtid, state = b.bc.trk.since(gen, lost)
	}
	if state == gtidNone && !c.dirty {
		// Nothing reached the binlog: there is nothing for a replica to
		// have. (A pinned session may have changed its own session
		// tracking: there, no report proves nothing.)
		return
	}
	s.wroteOn(c.cl.partOf(s), time.Now(), gtid)
}

// pendInTx marks a write of the short path, always inside a BeginTx
// transaction whose context hintOf remembered, to record at commit: its
// scope is ctxScope, with no lookup. Until the program makes a Session,
// pendingSess is the connector's scope, as beginTx set it. It inlines.
func (c *conn) pendInTx() {
	c.pendingWrite, c.txWrites = true, true
	if sessionsMade.Load() {
		c.pendingSess = c.ctxScope
	}
}

// failedWrite records, for read-your-writes, a statement that failed but
// may have committed on the primary all the same: a write in autocommit,
// or any statement of a transaction with writes pending, whose last
// attempt was sent and then broke or was abandoned by its caller. A lost
// transaction recorded this way costs the scope a needless look at the
// primary, never a stale read.
func (e *exe) failedWrite(ctx context.Context, p *plan) {
	c := e.c
	if e.ran == 0 || !(changesData(&p.r.cls) || c.pendingWrite) || !e.out.mayHaveRun() {
		return
	}
	if c.pendingWrite {
		c.cl.unsure(c.pendingSess)
	} else {
		c.cl.unsure(c.scope(ctx))
	}
}

// unsure records in s a write whose outcome is unknown, as committed now
// with its GTID unknown: the scope's next read takes the primary's
// position (causal) or needs data as of now (session). A statement the
// server goes on running after its caller gave up, and commits later, is
// beyond it, as it is beyond a program connected to the primary alone.
func (cl *cluster) unsure(s *Session) {
	s.wroteOn(cl.partOf(s), time.Now(), monitor.GTIDSet{})
}

// position reads the primary's whole GTID position into part name of s,
// on a connection of its own: it holds every write acknowledged before the
// read began. False when the primary is away or does not answer: the
// GTIDs stay as they were (a read follows the time rule for a write whose
// GTID is unknown).
func (cl *cluster) position(ctx context.Context, s *Session, name string) bool {
	asOf := time.Now()
	g, ok := cl.primaryPosition(ctx)
	if ok {
		s.gtidOf(name, g, asOf)
	}
	return ok
}

// primaryPosition reads the primary's whole GTID position, on a connection
// of its own; false when the primary is away or does not answer, or has
// no position.
func (cl *cluster) primaryPosition(ctx context.Context) (monitor.GTIDSet, bool) {
	p := cl.primary()
	if !p.h.Up() {
		return monitor.GTIDSet{}, false // reads go on while the primary is away
	}
	q := "SELECT @@global.gtid_binlog_pos"
	if p.flavor.Load() == flavorMySQL {
		q = "SELECT @@global.gtid_executed"
	}
	b, err := p.acquire(ctx, "")
	if err != nil {
		return monitor.GTIDSet{}, false
	}
	cl.positions.queries.Add(1)
	v, err := queryValue(ctx, b.dc, q, nil)
	b.release(isBadConn(err))
	if err != nil {
		return monitor.GTIDSet{}, false
	}
	text, _ := v.(string)
	g, err := monitor.ParseGTID(text)
	if err != nil || g.IsZero() {
		return monitor.GTIDSet{}, false
	}
	return g, true
}

// positions fetches the primary's current GTID position for universal
// reads (ConsistencyUniversal), one fetch for many reads: a read that
// arrives while a fetch is in flight waits for the next one, which starts
// when that one ends, since the fetch in flight may have been sent before
// the read began and so miss a write acknowledged before it. The primary
// sees at most one position query in flight per connector, whatever the
// read rate.
type positions struct {
	mu       sync.Mutex
	inflight bool
	next     *posFetch     // the fetch the reads arriving now wait for
	queries  atomic.Uint64 // sent, causal reads' included (Stats.PositionQueries)
}

// posFetch is one fetch of the primary's position and the reads waiting
// for it.
type posFetch struct {
	done chan struct{}
	pos  monitor.GTIDSet
	ok   bool
}

// freshPosition returns a position of the primary taken after the call
// began; false when the primary did not answer within ProbeTimeout or
// ctx ended.
func (cl *cluster) freshPosition(ctx context.Context) (monitor.GTIDSet, bool) {
	ps := &cl.positions
	ps.mu.Lock()
	f := ps.next
	if f == nil {
		f = &posFetch{done: make(chan struct{})}
		ps.next = f
	}
	if !ps.inflight {
		ps.inflight, ps.next = true, nil
		go cl.fetchPositions(f)
	}
	ps.mu.Unlock()
	select {
	case <-f.done:
		return f.pos, f.ok
	case <-ctx.Done():
		return monitor.GTIDSet{}, false
	}
}

// fetchPositions runs fetch f, then each fetch that reads queued while it
// ran, one at a time.
func (cl *cluster) fetchPositions(f *posFetch) {
	ps := &cl.positions
	for {
		ctx, cancel := context.WithTimeout(context.Background(), cl.cfg.ProbeTimeout)
		f.pos, f.ok = cl.primaryPosition(ctx)
		cancel()
		close(f.done)
		ps.mu.Lock()
		if f = ps.next; f == nil {
			ps.inflight = false
			ps.mu.Unlock()
			return
		}
		ps.next = nil
		ps.mu.Unlock()
	}
}
