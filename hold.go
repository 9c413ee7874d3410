package rwshard

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rwshard/rwshard/internal/route"
	"github.com/rwshard/rwshard/router"
)

// hold is the session state machine of a logical connection: the backend
// connection it holds, its transaction, and what keeps it held. A
// transaction (BeginTx, text BEGIN, autocommit=0) or session state that
// cannot be replayed pins the logical connection to sess: every statement
// runs there. State only statements on the primary see (PrimaryState), or
// result sets still open, keep sess without pinning reads. Without any of
// these, sess is the primary connection the logical connection last used,
// kept as one go-sql-driver connection would be. It is the first cache
// line of a connection: every statement tests it.
type hold struct {
	sess *backend  // backend connection held for the caller, or nil
	tx   driver.Tx // open BeginTx transaction on sess
	// guard watches the open transaction (Config.TxIdleTimeout, TxWarnAge).
	guard *txGuard
	// replay logs the open BeginTx transaction for replay (Config.TxReplay).
	replay *txLog

	broken bool // the session was lost: database/sql must discard this conn
	// unchecked: sess, held without session state, has not had its
	// liveness check since database/sql handed this connection out again;
	// it gets it when a statement is about to use it (checkHeld).
	unchecked     bool
	dirty         bool // session state changed: sess is pinned, and discarded at the end
	textTx        bool // BEGIN / START TRANSACTION seen, not yet ended
	autocommitOff bool // SET autocommit=0 in force
	primaryState  bool // sess carries state only primary statements see (PrimaryState): kept, not pinned
	rowsOut       bool // conn.rows is in use
	// txWrites: a statement of the open transaction may have changed
	// data (a COMMIT that breaks then has an unknown outcome).
	txWrites bool
	// more: sess carries locks, temporary tables or user variables still
	// to be read (see kept), which keep it without pinning reads.
	more     bool
	openRows int32 // result sets still open on sess
}

// kept is the state on the held connection that keeps it without pinning
// reads: named locks taken (GET_LOCK) and not released, the temporary
// tables it has (statements that mention them run there), and the user
// variables an expression assigned there whose values are still to be
// read (captureVars) before a statement runs on another connection. A
// connection keeps it off its first cache lines (hold.more says there is
// some); pinnedBy is the statement that pinned the session, redacted.
type kept struct {
	locks    int32
	temps    []string
	capture  []string
	pinnedBy string
}

// inTx reports an open transaction of any kind.
func (h *hold) inTx() bool { return h.tx != nil || h.textTx || h.autocommitOff }

// pinned reports that every statement must run on sess.
func (h *hold) pinned() bool { return h.inTx() || h.dirty }

// keep reports that sess must not be let go: it carries a transaction,
// session state, or open rows.
func (h *hold) keep() bool { return h.pinned() || h.primaryState || h.openRows > 0 || h.more }

// replayable reports that sess carries no state but what can be rebuilt
// elsewhere (the session and user variables conn.vars holds; user
// variables still to be read are read before it is let go).
func (h *hold) replayable() bool {
	return !h.dirty && !h.primaryState && !h.textTx && !h.autocommitOff && !h.more
}

// heldPrimary reports that a statement for the primary runs on the held
// connection: it is the primary's, or it carries state only statements
// on the primary see (its error says so if the node stopped being the
// primary).
func (h *hold) heldPrimary() bool {
	return h.sess != nil && (h.primaryState || h.sess.node.h.IsPrimary())
}

// targetOK reports whether a statement may run on the held connection b: a
// plain read anywhere, anything else on the primary only.
func targetOK(b *backend, read bool) bool { return read || b.node.h.IsPrimary() }

// errWriterMoved is the cause of a transaction replayed because the Galera
// writer changed under it.
var errWriterMoved = errors.New("the Galera writer changed")

// writerMoved handles a statement for the writer on the held connection
// of a Galera node that is no longer the writer: every node would take the
// write, but two writers make certification conflicts, so nothing more is
// written there. A transaction kept for replay moves to the new writer
// (runHeld replays it first); any other session on the old writer is
// lost, and its transaction rolled back with its connection.
func (c *conn) writerMoved(q string, reason router.Reason) error {
	if c.replay != nil && c.tx != nil {
		return nil
	}
	n := c.sess.node
	lost := routeErr(n, reason, q, fmt.Errorf("%w: %s is no longer the Galera writer", ErrSessionLost, n.name))
	c.breakSession(lost)
	return lost
}

// applyEffects updates the session state after a statement succeeded on
// the held connection.
func (c *conn) applyEffects(e route.Effect, q string) {
	if e.Has(route.Pin) && !c.dirty {
		c.dirty, c.kept.pinnedBy = true, quote(q)
		c.cl.pinned.Add(1)
	}
	if e.Has(route.PrimaryState) {
		c.primaryState = true
	}
	if e&(route.Lock|route.Unlock|route.TempTable|route.UserVars) != 0 {
		c.keepState(e, q)
	}
	switch {
	case e.Has(route.TxBegin):
		c.textTx = true // BEGIN …; COMMIT in one string stays pinned: safe side
	case e.Has(route.TxEnd):
		c.textTx = false
	}
	switch {
	case e.Has(route.AutocommitOff):
		c.autocommitOff = true
	case e.Has(route.AutocommitOn):
		c.autocommitOff = false
		c.textTx = false // SET autocommit=1 commits an open transaction
	}
	if c.inTx() {
		c.armGuard(q)
	} else {
		c.txWrites = false
		c.disarmGuard()
	}
}

// unpin returns a held connection that nothing keeps: a replica's (a
// read-only transaction's, once it is over and its rows are closed) at
// once; the primary's only when its pool is bounded (rwshard.maxOpenConns,
// or an OpenDB handle with SetMaxOpenConns), so that idle logical
// connections cannot hold every connection of the bound and leave a busy
// one waiting for ever.
func (h *hold) unpin() {
	if h.sess != nil && !h.keep() && (!h.sess.node.h.IsPrimary() || h.sess.node.bounded()) {
		h.sess.release(false)
		h.sess = nil
	}
}

// sessionErr handles the failed outcome out of a statement on the held
// connection. If the connection broke, or its node turned read-only, the
// session is gone: the logical connection is broken and the caller learns
// why (ErrSessionLost, and ErrOutcomeUnknown as well when the statement
// may have committed data: commits); its state cannot be rebuilt
// elsewhere, so this is never retried. Any other error is the caller's as
// it came.
func (c *conn) sessionErr(err error, out outcome, reason router.Reason, q string, commits bool) error {
	if readOnlyRejection(err) {
		// The node turned read-only under the session (a switchover): its
		// transaction or state can neither go on there nor move; the
		// statement did not run. The session is lost, and says why.
		n := c.sess.node
		c.cl.mon.ReadOnly(n.index)
		lost := routeErr(n, reason, q, fmt.Errorf("%w: the node turned read-only: %w", ErrSessionLost, err))
		c.breakSession(lost)
		return lost
	}
	if !out.connectionFailed() {
		if c.sess != nil && !validConn(c.sess.dc) {
			// Its driver closed the connection under the statement, as
			// go-sql-driver does when a statement's context ends: a
			// transaction or session state is lost as on a broken
			// connection (lose), and the caller gets the error it met
			// (context.Canceled), as it would direct.
			_ = c.lose()
		}
		return err
	}
	n := c.sess.node
	c.cl.mon.Failure(n.index, err)
	cause := fmt.Errorf("%w: %w", ErrSessionLost, bare(err))
	if out == broke && commits {
		cause = fmt.Errorf("%w; %w: %w", ErrOutcomeUnknown, ErrSessionLost, bare(err))
	}
	lost := routeErr(n, reason, q, cause)
	c.breakSession(lost)
	return lost
}

// commits reports whether a statement of plan p, failing on the held
// connection, may have committed data: a write in autocommit, or what
// ends a transaction that wrote (a text COMMIT, SET autocommit=1).
func (h *hold) commits(p *plan) bool {
	if !h.inTx() {
		return changesData(&p.r.cls)
	}
	return h.txWrites && p.effects&(route.TxEnd|route.AutocommitOn) != 0
}

// breakSession gives up the held connection with its state: the logical
// connection is broken, and database/sql, told driver.ErrBadConn by the
// statements after this one, discards it.
func (c *conn) breakSession(by *RouteError) {
	c.lostBy = by
	c.tx = nil
	c.disarmGuard()
	if c.sess != nil {
		c.sess.release(true)
		c.sess = nil
	}
	c.clearHold()
	c.broken = true
}

// lostErr is what a Commit or Rollback of a transaction lost with its
// session returns: the cause the statement that lost it got.
func (c *conn) lostErr() error {
	if c.lostBy != nil && (errors.Is(c.lostBy.Err, ErrTxIdleTimeout) || errors.Is(c.lostBy.Err, ErrHoldLimit)) {
		return c.lostBy
	}
	return routeErr(nil, router.ReasonInTransaction, "", ErrSessionLost)
}

// release ends the session: rolls back an open BeginTx transaction and
// returns the backend connection to its pool, or discards it when it
// carries session state (SET variables, temporary tables, locks, an open
// text transaction) that the next user must not inherit.
func (c *conn) release() {
	c.short.flush(c.cl, &c.hist)
	c.plainCtx, c.ctxScope = nil, nil
	c.disarmGuard()
	c.replay = nil
	if c.sess == nil {
		return
	}
	discard := !c.replayable() || c.openRows > 0
	if c.tx != nil {
		if err := c.tx.Rollback(); err != nil {
			discard = true
		}
		c.tx = nil
	}
	c.sess.release(discard)
	c.sess = nil
	c.clearHold()
}

// clearHold forgets the state the held connection carried, once it is
// let go.
func (c *conn) clearHold() {
	if c.dirty {
		c.cl.pinned.Add(-1)
	}
	c.dirty, c.primaryState, c.textTx, c.autocommitOff, c.txWrites, c.more, c.openRows = false, false, false, false, false, false, 0
	c.kept = kept{}
}

// keepState records what a lock, a temporary table or an assignment of
// user variables left on the held connection, after the statement q ran
// there.
func (c *conn) keepState(e route.Effect, q string) {
	k := &c.kept
	if e.Has(route.Lock) {
		k.locks++
	}
	if e.Has(route.Unlock) {
		if strings.Contains(strings.ToUpper(q), "RELEASE_ALL_LOCKS") {
			k.locks = 0
		} else if k.locks > 0 {
			k.locks--
		}
	}
	if e.Has(route.TempTable) {
		names, create, ok := route.TemporaryTables(q)
		switch {
		case !ok: // a form not read: the safe side
			if !c.dirty {
				c.dirty, k.pinnedBy = true, quote(q)
				c.cl.pinned.Add(1)
			}
		case create:
			for _, n := range names {
				if !slices.Contains(k.temps, n) {
					k.temps = append(k.temps, n)
				}
			}
		default:
			k.temps = slices.DeleteFunc(k.temps, func(t string) bool { return slices.Contains(names, t) })
		}
	}
	if e.Has(route.UserVars) {
		names, _ := route.AssignedVars(q)
		for _, n := range names {
			if !slices.Contains(k.capture, n) {
				k.capture = append(k.capture, n)
			}
		}
	}
	c.more = k.locks > 0 || len(k.temps) > 0 || len(k.capture) > 0
}

// checkHeld gives the held connection, without session state, the
// liveness check ResetSession left for its first use; a dead one is
// dropped (lose) and the statement goes to a fresh connection.
func (c *conn) checkHeld(ctx context.Context) {
	if !c.unchecked {
		return
	}
	c.unchecked = false
	if c.sess == nil {
		return
	}
	if err := resetConn(ctx, c.sess.dc); err != nil {
		_ = c.lose() // no state: never an error
	}
}

// lose handles a held connection found dead before anything was sent on
// it: without session state it is dropped and the logical connection goes
// on; with state (a transaction, SET, locks) the logical connection is
// broken, and database/sql, told driver.ErrBadConn, discards it, as it
// would a dead go-sql-driver connection.
func (c *conn) lose() error {
	if !c.keep() && c.tx == nil {
		c.sess.release(true)
		c.sess = nil
		return nil
	}
	c.breakSession(routeErr(c.sess.node, router.ReasonSessionPinned, "", ErrSessionLost))
	return driver.ErrBadConn
}
