package shard

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
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
	if sc.c.base.Sharding.XA {
		sc.xid = newXID()
	}
	return (*tx)(sc), nil
}

func (sc *conn) Begin() (driver.Tx, error) {
	return sc.BeginTx(context.Background(), driver.TxOptions{})
}

// xaID is the XA id of one data source's branch, as SQL ('gtrid','bqual'):
// the decision data source is the first the transaction touched, the
// one whose branch starts first (see xa_id.go).
func (sc *conn) xaID(ds string) string {
	decision := ds
	if len(sc.txOrder) > 0 {
		decision = sc.txOrder[0]
	}
	return xaID(sc.xid, decision, ds)
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
		_, err := sc.xaRollback(ctx, sc.txOrder, false)
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

// xaStep, nil outside tests, is called after each step of an XA commit
// ("record", "prepare", "commit") with the data source it ran on: the
// crash-recovery tests stop the process there.
var xaStep func(step, ds string)

// xaCommit commits the branches of an XA transaction so that a crash at
// any step leaves what recovery (xa_recover.go) can finish. The decision
// data source, the first the transaction touched, records the commit in
// its own branch; every branch prepares, the decision's first; the
// decision branch commits, which commits the transaction; the others
// commit after it. A failure before the decision's commit rolls every
// branch back; one after it leaves the rest prepared for recovery to
// commit. A single branch commits in one phase and records nothing.
func (sc *conn) xaCommit(ctx context.Context) error {
	order := sc.txOrder
	switch len(order) {
	case 0:
		return nil
	case 1:
		return sc.xaCommitOne(ctx, order[0])
	}
	d := order[0]
	if err := sc.xaRecord(ctx, d); err != nil {
		rolledBack, _ := sc.xaRollback(ctx, order, false)
		return &CommitError{Failed: d, RolledBack: rolledBack, Err: err}
	}
	if xaStep != nil {
		xaStep("record", d)
	}
	for _, ds := range order {
		s := sc.subs[ds]
		for _, q := range []string{"XA END ", "XA PREPARE "} {
			if _, err := s.exec(ctx, q+sc.xaID(ds), nil, false); err != nil {
				rolledBack, _ := sc.xaRollback(ctx, order, true)
				return &CommitError{Failed: ds, RolledBack: rolledBack, Err: err}
			}
		}
		if xaStep != nil {
			xaStep("prepare", ds)
		}
	}
	if _, err := sc.subs[d].exec(ctx, "XA COMMIT "+sc.xaID(d), nil, false); err != nil {
		if serverRolledBack(err) {
			// Gone, or rolled back by its server: nothing is
			// committed anywhere, the decision is to roll back.
			rolledBack, _ := sc.xaRollback(ctx, order[1:], true)
			return &CommitError{Failed: d, RolledBack: append([]string{d}, rolledBack...), Err: err}
		}
		// Unknown: the decision row, committed or not, tells recovery.
		return &CommitError{Failed: d, Prepared: slices.Clone(order), Err: err}
	}
	if xaStep != nil {
		xaStep("commit", d)
	}
	// The transaction is committed: every branch that can commits now,
	// recovery commits the others.
	committed := []string{d}
	var failed *CommitError
	for _, ds := range order[1:] {
		// XAER_NOTA here is a recovery that saw the decision and
		// committed the branch first.
		if _, err := sc.subs[ds].exec(ctx, "XA COMMIT "+sc.xaID(ds), nil, false); err != nil && !xaNotFound(err) {
			if failed == nil {
				failed = &CommitError{Failed: ds, Decided: true, Err: err}
			}
			failed.Prepared = append(failed.Prepared, ds)
			continue
		}
		committed = append(committed, ds)
		if xaStep != nil {
			xaStep("commit", ds)
		}
	}
	if failed != nil {
		failed.Committed = committed
		return failed
	}
	sc.c.xa.done(ctx, sc.subs[d], d, gtridOf(sc.xid, d))
	return nil
}

// xaCommitOne commits a transaction that touched one data source in one
// phase: there is nothing to decide, and nothing is left prepared.
func (sc *conn) xaCommitOne(ctx context.Context, ds string) error {
	s := sc.subs[ds]
	if _, err := s.exec(ctx, "XA END "+sc.xaID(ds), nil, false); err != nil {
		rolledBack, _ := sc.xaRollback(ctx, sc.txOrder, false)
		return &CommitError{Failed: ds, RolledBack: rolledBack, Err: err}
	}
	if _, err := s.exec(ctx, "XA COMMIT "+sc.xaID(ds)+" ONE PHASE", nil, false); err != nil {
		e := &CommitError{Failed: ds, Err: err}
		if serverRolledBack(err) {
			e.RolledBack = []string{ds}
		}
		return e
	}
	return nil
}

// xaRollback rolls back every branch (ending it first if still active).
// It returns the branches that are rolled back, those the server had
// rolled back itself included, and the first error of the others. When
// branches may be prepared, each rollback is made durable at once
// (makeDurable).
func (sc *conn) xaRollback(ctx context.Context, order []string, prepared bool) ([]string, error) {
	var rolledBack []string
	var first error
	for _, ds := range order {
		s := sc.subs[ds]
		_, _ = s.exec(ctx, "XA END "+sc.xaID(ds), nil, false) // an ended or prepared branch refuses: fine
		_, err := s.exec(ctx, "XA ROLLBACK "+sc.xaID(ds), nil, false)
		if err == nil && prepared {
			_ = makeDurable(ctx, func(ctx context.Context, q string) error { _, err := s.exec(ctx, q, nil, false); return err })
		}
		switch {
		case err == nil || serverRolledBack(err):
			rolledBack = append(rolledBack, ds)
		case first == nil:
			first = err
		}
	}
	return rolledBack, first
}

// xaNotFound reports XAER_NOTA: the server has no such branch (any more),
// or another session holds it.
func xaNotFound(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1397
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
	// Prepared (XA): branches left prepared, which recovery resolves
	// (XA RECOVER lists them); the decision branch among them when its
	// commit's outcome is unknown.
	Prepared []string
	// Decided (XA): the commit is recorded in the decision branch, which
	// is committed; the transaction is committed, and recovery commits
	// the branches left Prepared. Retrying it would apply it twice.
	Decided bool
	Err     error
}

func (e *CommitError) Error() string {
	msg := fmt.Sprintf("rwshard: shard: commit failed on shard %s; committed: [%s]; rolled back: [%s]",
		e.Failed, strings.Join(e.Committed, ", "), strings.Join(e.RolledBack, ", "))
	if len(e.Prepared) > 0 {
		msg += "; left prepared (XA RECOVER): [" + strings.Join(e.Prepared, ", ") + "]"
	}
	if e.Decided {
		msg += "; the commit is recorded: recovery commits the prepared branches"
	}
	return msg + ": " + e.Err.Error()
}
func (e *CommitError) Unwrap() error { return e.Err }
