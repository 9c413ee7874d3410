package rwshard

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/route"
	"github.com/rwshard/rwshard/router"
)

var _ driver.Tx = (*txn)(nil)

// txn is a BeginTx transaction: the logical connection, whose statements
// all run on its held backend connection until Commit or Rollback.
type txn conn

func (t *txn) Commit() error   { return t.end(true) }
func (t *txn) Rollback() error { return t.end(false) }

// BeginTx opens a transaction on the primary, or on a replica for a
// read-only transaction when Config.ReadOnlyTx is "replica". Every
// statement of the transaction runs on its connection. Isolation levels go
// to the server unchanged.
func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.broken {
		return nil, driver.ErrBadConn
	}
	if c.inTx() {
		return nil, routeErr(nil, router.ReasonInTransaction, "BEGIN",
			errors.New("a transaction is already open on this connection (text BEGIN or autocommit=0)"))
	}
	if tt := c.cl.txTracer; tt != nil {
		c.txCtx, c.txStart = tt.TxStart(ctx, TxStart{ReadOnly: opts.ReadOnly, Isolation: int(opts.Isolation)}), monotonic()
		ctx = c.txCtx
	}
	tx, err := (*txn)(c).begin(ctx, opts)
	if err != nil {
		(*txn)(c).trace(false, err)
	}
	return tx, err
}

// Begin starts a default transaction.
func (c *conn) Begin() (driver.Tx, error) { return c.BeginTx(context.Background(), driver.TxOptions{}) }

// beginTx plans and runs the BEGIN: on the held connection or the
// primary's, or, for a read-only transaction with Config.ReadOnlyTx
// "replica", on a replica the read rules choose (the context's pool and
// lag hints apply; pool rules, by table or text, cannot: no statement is
// known yet). A BEGIN changes no data: a connection that breaks under it
// is replaced, as for any statement that did not run.
func (t *txn) begin(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c := (*conn)(t)
	var tx driver.Tx
	p := plan{ok: true, reason: router.ReasonInTransaction, r: routed{
		cls: route.Class{Kind: route.Write, Effect: route.TxBegin},
		d:   route.Decision{Target: route.ToPrimary, Reason: router.ReasonInTransaction}}}
	e := exe{c: c, q: "BEGIN"}
	begin := func(dc driver.Conn) (err error) {
		tx, err = beginTx(ctx, dc, opts)
		return err
	}
	var b *backend
	var err error
	if opts.ReadOnly && c.cl.cfg.ReadOnlyTx == TxReadReplica {
		if c.sess != nil && !c.keep() {
			c.sess.release(false) // the held primary connection is not this transaction's
			c.sess = nil
		}
		ch, _ := hint.FromContext(ctx)
		p.r.cls.Kind, p.r.d.Target = route.Read, route.ToReplica
		p.r.h = hint.Hint{Pool: ch.Pool, MaxLag: ch.MaxLag}
		p.where = toReplicas
		if err = c.planRead(ctx, "BEGIN", &p); err == nil {
			b, err = e.runRead(ctx, &p, begin)
		}
	} else {
		if c.heldPrimary() {
			p.where = toHeld
		}
		b, err = e.execute(ctx, &p, begin)
	}
	if err != nil {
		return nil, err
	}
	if b != nil {
		c.sess = b
	}
	c.tx, c.txWrites = tx, false
	c.hintOf(ctx) // the transaction's statements usually run in its context
	c.pendingWrite, c.pendingSess = false, c.scope(ctx)
	if c.cl.cfg.TxReplay && c.cl.isPrimary(c.sess.node) {
		c.replay = &txLog{opts: opts}
	}
	c.armGuard("BEGIN")
	return t, nil
}

// trace ends a BeginTx transaction's trace. It inlines: without a
// tracer a transaction's end makes no call for it.
func (t *txn) trace(commit bool, err error) {
	if t.cl.txTracer != nil && t.txCtx != nil {
		t.endTrace(commit, err)
	}
}

// endTrace is trace's work.
func (t *txn) endTrace(commit bool, err error) {
	c := (*conn)(t)
	tt := c.cl.txTracer
	e := TxEnd{Commit: commit, Err: err, Duration: monotonic() - c.txStart}
	if c.sess != nil {
		e.Node, e.Addr = c.sess.node.name, c.cl.cfg.Nodes[c.sess.node.index].Addr
	}
	tt.TxEnd(c.txCtx, e)
	c.txCtx = nil
}

// end commits or rolls back the BeginTx transaction.
func (t *txn) end(commit bool) error {
	c := (*conn)(t)
	c.short.flush(c.cl, &c.hist)
	op := "COMMIT"
	if !commit {
		op = "ROLLBACK"
	}
	if c.guard != nil && c.guard.expired() {
		err := c.expired(op)
		t.trace(commit, err)
		if !commit {
			return nil // it is rolled back
		}
		return err
	}
	c.disarmGuard()
	if c.tx == nil {
		var err error = routeErr(nil, 0, "", errors.New("no transaction is open"))
		if c.broken {
			// The transaction was lost with its connection (and said so);
			// nothing of it was committed.
			err = c.lostErr()
		}
		t.trace(commit, err)
		return err
	}
	b := c.sess
	gen, lost := b.mark()
	var err error
	if commit && c.cl.galera && c.txWrites && !b.node.h.IsPrimary() {
		// The Galera writer changed since the transaction began: its
		// COMMIT is not sent to the old writer (see writerMoved).
		if c.replay == nil {
			gone := routeErr(b.node, router.ReasonInTransaction, op,
				fmt.Errorf("%w: %s is no longer the Galera writer", ErrSessionLost, b.node.name))
			c.breakSession(gone)
			c.pendingWrite, c.pendingSess, c.txWrites = false, nil, false
			t.trace(commit, gone)
			return gone
		}
		if err := t.replayOn(context.Background(), errWriterMoved); err != nil {
			t.trace(commit, err)
			return err
		}
		b = c.sess
		gen, lost = b.mark()
	}
	if commit {
		b.watch(true)
		err = c.tx.Commit()
		b.watch(false)
		if err != nil && c.replay != nil && (readOnlyRejection(err) || c.cl.certFailed(err)) {
			// The server refused the COMMIT (the node turned read-only):
			// nothing was committed; replay on the new primary, commit there.
			if err = t.replayOn(context.Background(), err); err == nil {
				b = c.sess
				gen, lost = b.mark()
				b.watch(true)
				err = c.tx.Commit()
				b.watch(false)
			} else {
				t.trace(commit, err)
				return err
			}
		}
	} else {
		err = c.tx.Rollback()
	}
	c.tx, c.replay = nil, nil
	c.plainCtx, c.ctxScope = nil, nil // see hintOf
	t.trace(commit, err)
	out := judge(context.Background(), err)
	switch {
	case err != nil:
		if commit && c.pendingWrite && out.mayHaveRun() {
			c.cl.unsure(c.pendingSess) // the COMMIT may have run
		}
		c.pendingWrite, c.pendingSess = false, nil
		err = c.sessionErr(err, out, router.ReasonInTransaction, op, commit && c.txWrites)
	case commit && c.pendingWrite:
		c.committed(context.Background(), b, false, gen, lost)
	default: // nothing to record: no write, or no session to record it in
		c.pendingWrite, c.pendingSess = false, nil
	}
	c.txWrites = false
	c.unpin()
	return err
}
