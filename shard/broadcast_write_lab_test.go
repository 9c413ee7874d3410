package shard_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/rwshard/rwshard/shard"
)

// openBroadcastWrites opens the tests' rules with AllowBroadcastWrites on
// t_order only.
func openBroadcastWrites(t *testing.T, l *lab.Lab, xa bool, tracer rwshard.Tracer) *sql.DB {
	t.Helper()
	sc, err := shard.LoadRules(labtest.RulesFile(t, l))
	require.NoError(t, err)
	rules, err := sc.Build(nil)
	require.NoError(t, err)
	rules.Tables["t_order"].AllowBroadcastWrites = true
	cfg := rwshard.NewConfig()
	cfg.Sharding.Rules = rules
	cfg.ProbeInterval = 250 * time.Millisecond
	cfg.Sharding.XA = xa
	cfg.Tracer = tracer
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	labtest.WaitReady(t, db)
	return db
}

// nodeCounts reads, on every primary directly, how many rows of each
// physical t_order table match cond: "ds_0.t_order_1" → n.
func nodeCounts(t *testing.T, ctx context.Context, l *lab.Lab, cond string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, g := range l.Groups {
		for ti := range 2 {
			var n int
			require.NoError(t, labtest.Direct(t, g.Primary(), "").QueryRowContext(ctx,
				fmt.Sprintf("SELECT COUNT(*) FROM t_order_%d WHERE %s", ti, cond)).Scan(&n))
			out[fmt.Sprintf("%s.t_order_%d", g.Name, ti)] = n
		}
	}
	return out
}

// everyNode is the same count on the four physical tables.
func everyNode(n int) map[string]int {
	return map[string]int{"ds_0.t_order_0": n, "ds_0.t_order_1": n, "ds_1.t_order_0": n, "ds_1.t_order_1": n}
}

// UPDATE and DELETE without shard key, with AllowBroadcastWrites on
// t_order: they run on every physical table, RowsAffected is the sum;
// a failure on one node (a CHECK constraint that only ds_1.t_order_1
// has, the last unit) leaves no node changed, in autocommit, with XA,
// and inside the caller's transaction. A table without the option is
// refused as before.
func TestLabShardedBroadcastWrites(t *testing.T) {
	l := labtest.Fresh(t, lab.Sharded())
	ctx := labtest.Ctx(t, 3*time.Minute)
	tracer := labtest.NewCancelOn("ds_0-primary")
	db := openBroadcastWrites(t, l, false, tracer)
	xa := openBroadcastWrites(t, l, true, tracer)
	exec := func(db *sql.DB, q string, args ...any) int64 {
		t.Helper()
		res, err := db.ExecContext(ctx, q, args...)
		require.NoError(t, err, q)
		n, err := res.RowsAffected()
		require.NoError(t, err)
		return n
	}
	exec(db, "CREATE TABLE t_order (order_id BIGINT PRIMARY KEY, user_id INT NOT NULL, amount INT NOT NULL, status VARCHAR(10))")
	// Users 1 and 2 (ds_1, ds_0), orders 1..10 each (both tables): five
	// rows per physical table, three of them new.
	for _, u := range []int{1, 2} {
		for k := 1; k <= 10; k++ {
			status := "old"
			if k <= 6 {
				status = "new"
			}
			exec(db, "INSERT INTO t_order (order_id, user_id, amount, status) VALUES (?, ?, ?, ?)", u*100+k, u, k, status)
		}
	}
	require.Equal(t, everyNode(3), nodeCounts(t, ctx, l, "status = 'new'"))

	// Every node, the rows affected summed; the other rows untouched.
	assert.EqualValues(t, 12, exec(db, "UPDATE t_order SET status = 'seen' WHERE status = ?", "new"))
	assert.Equal(t, everyNode(3), nodeCounts(t, ctx, l, "status = 'seen'"))
	assert.Equal(t, everyNode(2), nodeCounts(t, ctx, l, "status = 'old'"))
	// Prepared, and with the key in one OR branch only.
	st, err := db.PrepareContext(ctx, "UPDATE t_order SET amount = amount + ? WHERE status = ? OR user_id = 0")
	require.NoError(t, err)
	res, err := st.ExecContext(ctx, 100, "old")
	require.NoError(t, err)
	n, _ := res.RowsAffected()
	assert.EqualValues(t, 8, n)
	require.NoError(t, st.Close())
	assert.Equal(t, everyNode(2), nodeCounts(t, ctx, l, "amount > 100"))
	assert.EqualValues(t, 4, exec(db, "DELETE FROM t_order WHERE status = 'seen' AND amount IN (1, 2)"))
	assert.Equal(t, everyNode(2), nodeCounts(t, ctx, l, "status = 'seen'"))
	before := nodeCounts(t, ctx, l, "TRUE")
	require.Equal(t, everyNode(4), before)

	// A table without the option: refused as before, nothing sent.
	_, err = db.ExecContext(ctx, "DELETE FROM t_order_item WHERE qty = 0")
	assert.ErrorIs(t, err, shard.ErrNoShardKey)

	// A constraint only ds_1.t_order_1 has: the UPDATE applies on the
	// three other tables first, then fails there; all or nothing.
	_, err = labtest.Direct(t, l.Groups[1].Primary(), "").ExecContext(ctx, "ALTER TABLE t_order_1 ADD CONSTRAINT small CHECK (amount < 1000)")
	require.NoError(t, err)
	unchanged := func(name string) {
		t.Helper()
		assert.Equal(t, everyNode(0), nodeCounts(t, ctx, l, "amount >= 1000"), name)
		assert.Equal(t, before, nodeCounts(t, ctx, l, "TRUE"), name)
	}
	for name, db := range map[string]*sql.DB{"local transactions": db, "XA": xa} {
		_, err = db.ExecContext(ctx, "UPDATE t_order SET amount = amount + 1000 WHERE status <> 'none'")
		var me *mysql.MySQLError
		require.True(t, errors.As(err, &me), "%s: %T %v", name, err, err)
		assert.Contains(t, []uint16{4025, 3819}, me.Number, "%s: a CHECK constraint failure: %v", name, err)
		unchanged(name)
		// The connection is usable and in autocommit again.
		assert.EqualValues(t, 8, exec(db, "UPDATE t_order SET status = 'both' WHERE status = 'seen'"), name)
		assert.EqualValues(t, 8, exec(db, "UPDATE t_order SET status = 'seen' WHERE status = 'both'"), name)
	}
	// The caller gone after the first data source began its part: that
	// part is rolled back all the same, and the connection is clean.
	for name, db := range map[string]*sql.DB{"local transactions": db, "XA": xa} {
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		cctx, cancel := context.WithCancel(ctx)
		tracer.Arm(cancel)
		_, err = conn.ExecContext(cctx, "UPDATE t_order SET amount = amount + 1 WHERE status <> 'none'")
		assert.ErrorIs(t, err, context.Canceled, name)
		assert.True(t, tracer.Fired(), name)
		unchanged(name)
		res, err := conn.ExecContext(ctx, "UPDATE t_order SET status = 'seen' WHERE status = 'seen'")
		require.NoError(t, err, "%s: the connection after the cancelled statement", name)
		n, _ := res.RowsAffected()
		assert.Zero(t, n, name)
		require.NoError(t, conn.Close())
	}
	for _, g := range l.Groups {
		rows, err := g.Primary().Admin().QueryContext(ctx, "XA RECOVER")
		require.NoError(t, err)
		assert.False(t, rows.Next(), "no branch left prepared on %s", g.Name)
		require.NoError(t, rows.Close())
	}

	// Inside the caller's transaction the units are its own: nothing is
	// committed before Commit, a Rollback undoes every node.
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	res, err = tx.ExecContext(ctx, "UPDATE t_order SET status = 'tx' WHERE status = 'seen'")
	require.NoError(t, err)
	n, _ = res.RowsAffected()
	assert.EqualValues(t, 8, n)
	assert.Equal(t, everyNode(0), nodeCounts(t, ctx, l, "status = 'tx'"), "not committed yet")
	require.NoError(t, tx.Rollback())
	assert.Equal(t, everyNode(2), nodeCounts(t, ctx, l, "status = 'seen'"))
}
