package shard_test

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
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

// parityRules: the tests' sharding (t_order, t_order_item by user_id then
// order_id, bound) plus t_order_view, a sharded view bound with them; t_dict
// broadcast; t_user in ds_0.
const parityRules = `
dataSources:
  ds_0: {primary: "%s"}
  ds_1: {primary: "%s"}
defaultDataSource: ds_0
tables:
  t_order:
    dataNodes: ds_${0..1}.t_order_${0..1}
    databaseStrategy: {column: user_id, algorithm: db_mod}
    tableStrategy: {column: order_id, algorithm: t_mod}
  t_order_item:
    dataNodes: ds_${0..1}.t_order_item_${0..1}
    databaseStrategy: {column: user_id, algorithm: db_mod}
    tableStrategy: {column: order_id, algorithm: t_mod}
  t_order_view:
    dataNodes: ds_${0..1}.t_order_view_${0..1}
    databaseStrategy: {column: user_id, algorithm: db_mod}
    tableStrategy: {column: order_id, algorithm: t_mod}
bindingTables: [[t_order, t_order_item, t_order_view]]
broadcastTables: [t_dict]
algorithms:
  db_mod: {type: MOD, props: {sharding-count: 2}}
  t_mod: {type: MOD, props: {sharding-count: 2}}
`

// TestLabParity runs the ShardingSphere shapes of issue 14 on real
// servers: foreign keys to the paired and broadcast tables, UPDATE of a
// sharding column to its own value, BINARY keys, the maintenance
// statements and their merged rows, a sharded view, DROP TABLE of several
// kinds of tables, the logical database qualifier.
func TestLabParity(t *testing.T) {
	l := labtest.Fresh(t, lab.Options{Shards: 2})
	ctx := labtest.Ctx(t, 3*time.Minute)
	path := filepath.Join(t.TempDir(), "rules.yaml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(parityRules, l.Groups[0].Primary().DSN(""), l.Groups[1].Primary().DSN(""))), 0o600))
	db, err := sql.Open(rwshard.DriverName, "/app?rwshard.rulesFile="+url.QueryEscape(path))
	require.NoError(t, err)
	defer db.Close()
	exec := func(q string, args ...any) sql.Result {
		t.Helper()
		res, err := db.ExecContext(ctx, q, args...)
		require.NoError(t, err, q)
		return res
	}
	tablesOn := func(g *lab.Group) []string {
		t.Helper()
		rows, err := labtest.Direct(t, g.Primary(), "").QueryContext(ctx,
			"SELECT table_name FROM information_schema.tables WHERE table_schema = 'app' ORDER BY table_name")
		require.NoError(t, err)
		var out []string
		for _, r := range table(t, rows) {
			out = append(out, r[0])
		}
		return out
	}

	// Foreign keys: to the broadcast table, and from each t_order_item
	// table to its paired t_order table.
	exec("CREATE TABLE t_dict (k INT PRIMARY KEY, v VARCHAR(10))")
	exec("CREATE TABLE t_user (id INT PRIMARY KEY)")
	exec("CREATE TABLE t_order (order_id BIGINT PRIMARY KEY, user_id INT NOT NULL, status INT, " +
		"CONSTRAINT fk_status FOREIGN KEY (status) REFERENCES t_dict (k))")
	exec("CREATE TABLE t_order_item (item_id BIGINT PRIMARY KEY, order_id BIGINT NOT NULL, user_id INT NOT NULL)")
	exec("ALTER TABLE t_order_item ADD CONSTRAINT fk_order FOREIGN KEY (order_id) REFERENCES t_order (order_id) ON DELETE CASCADE")
	exec("INSERT INTO t_dict VALUES (1, 'ok'), (2, 'bad')")
	for u := 1; u <= 4; u++ {
		for o := 1; o <= 4; o++ {
			exec("INSERT INTO t_order (order_id, user_id, status) VALUES (?, ?, ?)", u*10+o, u, 1+o%2)
			exec("INSERT INTO t_order_item (item_id, order_id, user_id) VALUES (?, ?, ?)", u*100+o, u*10+o, u)
		}
	}
	var me *mysql.MySQLError
	_, err = db.ExecContext(ctx, "INSERT INTO t_order_item (item_id, order_id, user_id) VALUES (999, 99, 1)")
	require.True(t, errors.As(err, &me), "%v", err)
	assert.Equal(t, uint16(1452), me.Number, "no order 99 on its node: the key refers to the paired table")
	_, err = db.ExecContext(ctx, "INSERT INTO t_order (order_id, user_id, status) VALUES (99, 1, 7)")
	require.True(t, errors.As(err, &me), "%v", err)
	assert.Equal(t, uint16(1452), me.Number, "no status 7 in t_dict")
	var fks int
	require.NoError(t, labtest.Direct(t, l.Groups[1].Primary(), "").QueryRowContext(ctx,
		"SELECT COUNT(*) FROM information_schema.referential_constraints WHERE constraint_schema = 'app' AND "+
			"((constraint_name = 'fk_order_t_order_item_1' AND referenced_table_name = 't_order_1') OR "+
			"(constraint_name = 'fk_status_t_order_0' AND referenced_table_name = 't_dict'))").Scan(&fks))
	assert.Equal(t, 2, fks, "constraints named per physical table, referring to the paired and the broadcast table")

	// UPDATE of a sharding column to the value the WHERE clause pins.
	res := exec("UPDATE t_order SET user_id = ?, status = 1 WHERE user_id = ? AND order_id = ?", 3, 3, 31)
	n, _ := res.RowsAffected()
	assert.EqualValues(t, 1, n)
	_, err = db.ExecContext(ctx, "UPDATE t_order SET user_id = ? WHERE user_id = ? AND order_id = ?", 4, 3, 31)
	assert.ErrorIs(t, err, shard.ErrShardKeyUpdate)

	// BINARY keys: one node, the right row.
	var status int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT status FROM t_order WHERE BINARY user_id = ? AND order_id = BINARY ?", "3", "31").Scan(&status))
	assert.Equal(t, 1, status)
	plan, err := rwshard.Explain(ctx, db, "SELECT status FROM t_order WHERE BINARY user_id = ? AND order_id = BINARY ?", "3", "31")
	require.NoError(t, err)
	assert.Len(t, plan.Units, 1, "one node")

	// Maintenance: one row per physical table, naming it.
	rows, err := db.QueryContext(ctx, "ANALYZE TABLE t_order, t_dict, t_user")
	require.NoError(t, err)
	var analyzed []string
	for _, r := range table(t, rows) {
		analyzed = append(analyzed, r[0]+" "+r[1])
		assert.NotEqual(t, "Error", r[2], r)
	}
	sort.Strings(analyzed)
	assert.Equal(t, []string{
		"app.t_dict analyze", "app.t_dict analyze",
		"app.t_order_0 analyze", "app.t_order_0 analyze", "app.t_order_1 analyze", "app.t_order_1 analyze",
		"app.t_user analyze",
	}, analyzed)
	rows, err = db.QueryContext(ctx, "CHECKSUM TABLE t_dict")
	require.NoError(t, err)
	sums := table(t, rows)
	require.Len(t, sums, 2, "one per data source")
	assert.Equal(t, sums[0], sums[1], "the broadcast table is the same everywhere")
	rows, err = db.QueryContext(ctx, "CHECK TABLE t_order_item QUICK")
	require.NoError(t, err)
	checked := table(t, rows)
	assert.Len(t, checked, 4)
	for _, r := range checked {
		assert.Equal(t, "OK", r[3], r)
	}
	exec("OPTIMIZE TABLE t_order_item")
	_, err = db.ExecContext(ctx, "ANALYZE TABLE t_order UPDATE HISTOGRAM ON status")
	assert.ErrorIs(t, err, shard.ErrUnsupported)

	// A view per data node, queried as a sharded table.
	exec("CREATE VIEW t_order_view AS SELECT order_id, user_id FROM t_order WHERE status = 1")
	var direct, viewed int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM t_order WHERE status = 1").Scan(&direct))
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM t_order_view").Scan(&viewed))
	assert.Equal(t, direct, viewed)
	assert.Equal(t, 9, viewed)
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM t_order_view WHERE user_id = 2 AND order_id = 22").Scan(&viewed))
	assert.Equal(t, 1, viewed)
	exec("DROP VIEW t_order_view")

	// The logical database qualifier goes.
	res = exec("DELETE FROM logic_db.t_order WHERE user_id = ? AND order_id = ?", 1, 11)
	n, _ = res.RowsAffected()
	assert.EqualValues(t, 1, n)
	var items int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM t_order_item WHERE user_id = 1 AND order_id = 11").Scan(&items))
	assert.Equal(t, 0, items, "ON DELETE CASCADE on the paired table")

	// DROP TABLE of sharded, broadcast and default tables: nothing left.
	exec("DROP TABLE t_order_item, t_order, t_dict, t_user")
	for _, g := range l.Groups {
		assert.Empty(t, tablesOn(g), g.Name)
	}
}
