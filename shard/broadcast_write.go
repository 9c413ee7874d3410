package shard

// A write without shard key on every data node (Rules.AllowBroadcastWrites)
// must apply everywhere or nowhere, as the one statement it is on one
// server: outside a transaction it runs in a transaction of its own.

import (
	"context"
	"database/sql/driver"

	"github.com/rwshard/rwshard/internal/route"
)

// execAtomic runs the units of rt in a transaction over their data
// sources, as BeginTx opens one: committed after the last unit, rolled
// back if any unit fails, so that a failure leaves no shard changed. A
// commit that fails part way is a *CommitError naming the shards that
// committed (without XA a commit across data sources is not atomic).
func (sc *conn) execAtomic(ctx context.Context, st *state, rt *Route, cls *route.Class, prepared bool) (driver.Result, error) {
	tx, err := sc.BeginTx(ctx, driver.TxOptions{})
	if err != nil {
		return nil, err
	}
	res, failed, err := sc.execUnits(ctx, st, rt, cls, prepared)
	// The end must reach every server even when ctx is done (an XA
	// branch left active would hold its connection).
	sc.txCtx = context.WithoutCancel(ctx)
	if err != nil {
		// The unit's error is the answer; a part whose rollback fails is
		// rolled back by its server when the connection goes.
		_ = tx.Rollback()
		return nil, unitErr(rt.Units[failed], err)
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return res, nil
}
