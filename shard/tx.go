package shard

import (
	"context"
	"crypto/rand"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard"
)

// Transactions over shards: one local transaction per data source, opened
// when a statement first touches it (see conn.sub), ended in the order
// they were opened. With rwshard.xa=true they are the branches of one XA
// transaction.

var _ driver.Tx = (*tx)(nil)

// BeginTx starts a transaction over the shards.
func (sc *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if sc.inTx() {
		return nil, &rwshard.RouteError{Reason: "in-transaction",
			Err: errors.New("a transaction is already open on this connection (BEGIN or autocommit=0)")}
	}
	sc.tx, sc.txOpts, sc.txOrder = txAPI, opts, nil
	sc.holdState(ctx)
	sc.txCtx = ctx
	if sc.c.base.XA {
		sc.xid = newXID()
	}
	return (*tx)(sc), nil
}

func (sc *conn) Begin() (driver.Tx, error) {
	return sc.BeginTx(context.Background(), driver.TxOptions{})
}

func newXID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "rwshard-" + hex.EncodeToString(b[:])
}

// xaID is the XA id of one data source's branch: gtrid, bqual.
func (sc *conn) xaID(ds string) string {
	return "'" + sc.xid + "','" + ds + "'"
}

// tx commits or rolls back the parts of a BeginTx transaction.
type tx conn

func (t *tx) Commit() error {
	sc := (*conn)(t)
	defer sc.endTx()
	return sc.finish(sc.txCtx, "COMMIT", true)
}

func (t *tx) Rollback() error {
	sc := (*conn)(t)
	defer sc.endTx()
	return sc.finish(sc.txCtx, "ROLLBACK", false)
}

// endTx forgets the transaction; the rules state is let go unless
// autocommit=0 keeps every statement in one.
func (sc *conn) endTx() {
	sc.tx, sc.txBegin, sc.xid = txNone, "", ""
	for _, s := range sc.subs {
		s.tx = nil
	}
	if sc.autocommitOff {
		return
	}
	sc.txCtx, sc.txOrder = nil, nil
	if sc.txState != nil {
		sc.txState.release()
		sc.txState = nil
	}
}

// finish commits (or rolls back) every part in turn. If a commit fails,
// the parts after it are rolled back, and the error says which shards
// committed and which did not: without XA a commit over shards is not
// atomic. q is the statement that ends a text transaction.
func (sc *conn) finish(ctx context.Context, q string, commit bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if sc.xid != "" {
		if commit {
			return sc.xaCommit(ctx)
		}
		_, err := sc.xaRollback(ctx, sc.txOrder)
		return err
	}
	end := func(ds string, commit bool) error {
		s := sc.subs[ds]
		if s.tx != nil {
			if commit {
				return s.tx.Commit()
			}
			return s.tx.Rollback()
		}
		stmt := q
		if !commit {
			stmt = "ROLLBACK"
		}
		_, err := s.exec(ctx, stmt, nil, false)
		return err
	}
	if !commit {
		var first error
		for _, ds := range sc.txOrder {
			if err := end(ds, false); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	var committed []string
	for i, ds := range sc.txOrder {
		if err := end(ds, true); err != nil {
			var rolledBack []string
			for _, later := range sc.txOrder[i+1:] {
				if end(later, false) == nil {
					rolledBack = append(rolledBack, later)
				}
			}
			if serverRolledBack(err) {
				rolledBack = append([]string{ds}, rolledBack...)
			}
			return &CommitError{Committed: committed, Failed: ds, RolledBack: rolledBack, Err: err}
		}
		committed = append(committed, ds)
	}
	return nil
}

// xaCommit runs the two phases: XA END and XA PREPARE on every branch,
// then XA COMMIT on every branch. A failure in the first phase rolls every
// branch back; one in the second leaves the branches after it prepared
// on their servers (XA RECOVER shows them). The error reports each
// branch as the servers left it.
func (sc *conn) xaCommit(ctx context.Context) error {
	for _, ds := range sc.txOrder {
		s := sc.subs[ds]
		for _, q := range []string{"XA END ", "XA PREPARE "} {
			if _, err := s.exec(ctx, q+sc.xaID(ds), nil, false); err != nil {
				rolledBack, _ := sc.xaRollback(ctx, sc.txOrder)
				return &CommitError{Failed: ds, RolledBack: rolledBack, Err: err}
			}
		}
	}
	var committed []string
	for i, ds := range sc.txOrder {
		if _, err := sc.subs[ds].exec(ctx, "XA COMMIT "+sc.xaID(ds), nil, false); err != nil {
			e := &CommitError{Committed: committed, Failed: ds, Prepared: sc.txOrder[i+1:], Err: err}
			if serverRolledBack(err) {
				e.RolledBack = []string{ds}
			} else {
				e.Prepared = append([]string{ds}, e.Prepared...)
			}
			return e
		}
		committed = append(committed, ds)
	}
	return nil
}

// xaRollback rolls back every branch (ending it first if still active).
// It returns the branches that are rolled back, those the server had
// rolled back itself included, and the first error of the others.
func (sc *conn) xaRollback(ctx context.Context, order []string) ([]string, error) {
	var rolledBack []string
	var first error
	for _, ds := range order {
		s := sc.subs[ds]
		_, _ = s.exec(ctx, "XA END "+sc.xaID(ds), nil, false) // an ended or prepared branch refuses: fine
		_, err := s.exec(ctx, "XA ROLLBACK "+sc.xaID(ds), nil, false)
		switch {
		case err == nil || serverRolledBack(err):
			rolledBack = append(rolledBack, ds)
		case first == nil:
			first = err
		}
	}
	return rolledBack, first
}

// serverRolledBack reports an error after which the server has rolled the
// transaction or branch back: a deadlock or lock wait timeout, an XA
// rollback code (XA_RBROLLBACK 1402, XA_RBTIMEOUT 1613, XA_RBDEADLOCK
// 1614), or a branch the server no longer knows (XAER_NOTA 1397) when
// rolling back.
func serverRolledBack(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case 1213, 1205, 1402, 1613, 1614, 1397:
		return true
	}
	return false
}

// CommitError reports a commit over shards that failed part way: the
// state of every part as the servers left it.
type CommitError struct {
	Committed  []string // shards whose part is committed
	Failed     string   // the shard whose commit failed
	RolledBack []string // shards rolled back (by rwshard, or by the server after the failure)
	Prepared   []string // XA: branches left prepared (XA RECOVER lists them)
	Err        error
}

func (e *CommitError) Error() string {
	msg := fmt.Sprintf("rwshard: shard: commit failed on shard %s; committed: [%s]; rolled back: [%s]",
		e.Failed, strings.Join(e.Committed, ", "), strings.Join(e.RolledBack, ", "))
	if len(e.Prepared) > 0 {
		msg += "; left prepared (XA RECOVER): [" + strings.Join(e.Prepared, ", ") + "]"
	}
	return msg + ": " + e.Err.Error()
}
func (e *CommitError) Unwrap() error { return e.Err }
