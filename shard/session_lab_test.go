package shard_test

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/rwshard/rwshard/shard"
)

// openSharded opens rwshard over the lab's rules and waits for the first
// probes.
func openSharded(t *testing.T, l *lab.Lab, params string) *sql.DB {
	t.Helper()
	dsn := "/app?rwshard.rulesFile=" + url.QueryEscape(labtest.RulesFile(t, l)) + "&rwshard.probeInterval=250ms"
	if params != "" {
		dsn += "&" + params
	}
	db, err := sql.Open(rwshard.DriverName, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	labtest.WaitReady(t, db)
	return db
}

// rowsOn counts the rows of t_order with order_id id on data source ds,
// read on its primary directly.
func rowsOn(t *testing.T, l *lab.Lab, ds string, id int) int {
	t.Helper()
	for _, g := range l.Groups {
		if g.Name != ds {
			continue
		}
		var n int
		require.NoError(t, labtest.Direct(t, g.Primary(), "").QueryRow(
			"SELECT (SELECT COUNT(*) FROM t_order_0 WHERE order_id = ?) + (SELECT COUNT(*) FROM t_order_1 WHERE order_id = ?)", id, id).Scan(&n))
		return n
	}
	t.Fatalf("no data source %s", ds)
	return 0
}

// The session of a sharded connection is one, over every data source it
// uses: text transactions, autocommit=0 and SET reach every shard; state
// that cannot is refused; hints, server errors and column types are as
// without sharding.
func TestLabShardedSession(t *testing.T) {
	l := labtest.Fresh(t, lab.Sharded())
	ctx := labtest.Ctx(t, 2*time.Minute)
	db := openSharded(t, l, "")
	_, err := db.ExecContext(ctx, "CREATE TABLE t_dict (k INT PRIMARY KEY, v VARCHAR(10))")
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "CREATE TABLE t_order (order_id BIGINT PRIMARY KEY, user_id INT NOT NULL, amount DECIMAL(10,2), "+
		"status VARCHAR(10), note VARCHAR(20) NULL, k INT NULL, CONSTRAINT fk_dict FOREIGN KEY (k) REFERENCES t_dict (k))")
	require.NoError(t, err, "a named constraint on both tables of a data source (renamed per table)")
	insert := func(c *sql.Conn, id, user int) error {
		_, err := c.ExecContext(ctx, "INSERT INTO t_order (order_id, user_id, amount, status) VALUES (?, ?, 1.50, 'new')", id, user)
		return err
	}
	conn := func() *sql.Conn {
		c, err := db.Conn(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}

	t.Run("text transaction across shards", func(t *testing.T) {
		c := conn()
		for _, end := range []string{"ROLLBACK", "COMMIT"} {
			base := map[string]int{"ROLLBACK": 10, "COMMIT": 20}[end]
			_, err := c.ExecContext(ctx, "BEGIN")
			require.NoError(t, err)
			require.NoError(t, insert(c, base, 0)) // ds_0
			require.NoError(t, insert(c, base+1, 1))
			assert.Equal(t, 0, rowsOn(t, l, "ds_1", base+1), "the insert on the second shard is inside the transaction")
			_, err = c.ExecContext(ctx, end)
			require.NoError(t, err)
			want := map[string]int{"ROLLBACK": 0, "COMMIT": 1}[end]
			assert.Equal(t, want, rowsOn(t, l, "ds_0", base), end)
			assert.Equal(t, want, rowsOn(t, l, "ds_1", base+1), end)
		}
	})

	t.Run("autocommit=0 across shards", func(t *testing.T) {
		c := conn()
		_, err := c.ExecContext(ctx, "SET autocommit = 0")
		require.NoError(t, err)
		require.NoError(t, insert(c, 30, 0))
		require.NoError(t, insert(c, 31, 1))
		_, err = c.ExecContext(ctx, "ROLLBACK")
		require.NoError(t, err)
		assert.Equal(t, 0, rowsOn(t, l, "ds_0", 30)+rowsOn(t, l, "ds_1", 31), "rolled back on both")
		require.NoError(t, insert(c, 32, 0))
		require.NoError(t, insert(c, 33, 1))
		assert.Equal(t, 0, rowsOn(t, l, "ds_1", 33), "still in the implicit transaction")
		_, err = c.ExecContext(ctx, "COMMIT")
		require.NoError(t, err)
		assert.Equal(t, 2, rowsOn(t, l, "ds_0", 32)+rowsOn(t, l, "ds_1", 33), "committed on both")
		_, err = c.ExecContext(ctx, "SET autocommit = 1")
		require.NoError(t, err)
		require.NoError(t, insert(c, 34, 1))
		assert.Equal(t, 1, rowsOn(t, l, "ds_1", 34), "autocommit again")
	})

	t.Run("SET reaches every shard", func(t *testing.T) {
		c := conn()
		_, err := c.ExecContext(ctx, "SET @x = 42")
		require.NoError(t, err)
		for _, user := range []int{0, 1} {
			var x int
			var sid int64
			require.NoError(t, c.QueryRowContext(ctx, "SELECT @x, @@server_id FROM t_order WHERE user_id = ? AND order_id = ?",
				user, 20+user).Scan(&x, &sid))
			assert.Equal(t, 42, x, "user %d", user)
		}
	})

	t.Run("session state that cannot span shards is refused", func(t *testing.T) {
		c := conn()
		for _, q := range []string{"CREATE TEMPORARY TABLE tmp (a INT)", "USE app", "LOCK TABLES t_order READ", "SELECT GET_LOCK('a', 1)"} {
			_, err := c.ExecContext(ctx, q)
			assert.ErrorIs(t, err, shard.ErrUnsupported, q)
			var re *shard.RouteError
			if assert.ErrorAs(t, err, &re, q) {
				assert.Equal(t, q, re.SQL)
			}
		}
	})

	t.Run("comment and context hints on a sharded table", func(t *testing.T) {
		q := "SELECT @@server_id FROM t_order WHERE user_id = 1 AND order_id = 21"
		require.NoError(t, l.Sync(ctx, 20*time.Second))
		assert.Equal(t, "ds_1-replica1", labtest.RanOn(t, l, db, ctx, q))
		assert.Equal(t, "ds_1-primary", labtest.RanOn(t, l, db, ctx, "/* rwshard:primary */ "+q))
		assert.Equal(t, "ds_1-primary", labtest.RanOn(t, l, db, ctx, "/* SHARDINGSPHERE_HINT: WRITE_ROUTE_ONLY=true */ "+q))
		assert.Equal(t, "ds_1-primary", labtest.RanOn(t, l, db, hint.Primary(ctx), q))
	})

	t.Run("server errors are *mysql.MySQLError", func(t *testing.T) {
		_, err := db.ExecContext(ctx, "INSERT INTO t_order (order_id, user_id) VALUES (21, 1)")
		me, ok := err.(*mysql.MySQLError) // as GORM's error translator asserts it
		require.True(t, ok, "%T: %v", err, err)
		assert.EqualValues(t, 1062, me.Number)
		_, err = db.QueryContext(ctx, "SELECT nope FROM t_order ORDER BY order_id") // every shard
		me, ok = err.(*mysql.MySQLError)
		require.True(t, ok, "%T: %v", err, err)
		assert.EqualValues(t, 1054, me.Number)
	})

	t.Run("column types as without sharding", func(t *testing.T) {
		ds1 := l.Groups[1].Primary()
		want := columnTypes(t, labtest.Direct(t, ds1, ""), "SELECT order_id, amount, status, note FROM t_order_1 WHERE order_id = 21")
		for _, q := range []string{
			"SELECT order_id, amount, status, note FROM t_order WHERE user_id = 1 AND order_id = 21", // one shard
			"SELECT order_id, amount, status, note FROM t_order ORDER BY order_id",                   // merged
		} {
			assert.Equal(t, want, columnTypes(t, db, q), q)
		}
	})

	t.Run("ExplainConn sees the transaction", func(t *testing.T) {
		c := conn()
		tx, err := c.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer tx.Rollback()
		p, err := rwshard.ExplainConn(ctx, c, "SELECT * FROM t_order WHERE user_id = 1 AND order_id = 21")
		require.NoError(t, err)
		require.Len(t, p.Units, 1)
		assert.Equal(t, "in-transaction", p.Units[0].Plan.Reason)
		assert.Equal(t, []string{"ds_1-primary"}, p.Units[0].Plan.Targets)
	})

	t.Run("INSERT … SELECT runs on the rows' own data node", func(t *testing.T) {
		c := conn()
		require.NoError(t, insert(c, 71, 3))
		res, err := c.ExecContext(ctx, "INSERT INTO t_order (order_id, user_id, amount, status) "+
			"SELECT order_id, user_id, amount, status FROM t_order WHERE user_id = 3 AND order_id = 71 "+
			"ON DUPLICATE KEY UPDATE status = 'copied'")
		require.NoError(t, err)
		n, _ := res.RowsAffected()
		assert.Equal(t, int64(2), n, "the row updated in place (2: ON DUPLICATE KEY UPDATE changed it)")
		for _, g := range l.Groups {
			var status string
			err := labtest.Direct(t, g.Primary(), "").QueryRowContext(ctx, "SELECT status FROM t_order_1 WHERE order_id = 71").Scan(&status)
			if g.Name == "ds_1" {
				require.NoError(t, err, "user_id 3 → ds_1, order_id 71 → t_order_1")
				assert.Equal(t, "copied", status)
			} else {
				assert.ErrorIs(t, err, sql.ErrNoRows, "%s has no copy", g.Name)
			}
		}
	})

	t.Run("extra arguments are refused", func(t *testing.T) {
		_, err := db.QueryContext(ctx, "SELECT * FROM t_order WHERE user_id = 100", 5)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "0 placeholders, got 1 arguments")
	})

	t.Run("the tracer sees every unit", func(t *testing.T) {
		cfg, err := rwshard.ParseDSN("/app?rwshard.rulesFile=" + url.QueryEscape(labtest.RulesFile(t, l)))
		require.NoError(t, err)
		rec := &unitRecorder{}
		cfg.Tracer = rec
		c, err := rwshard.NewConnector(cfg)
		require.NoError(t, err)
		tdb := sql.OpenDB(c)
		defer tdb.Close()
		require.NoError(t, c.Ready(ctx))
		rows, err := tdb.QueryContext(ctx, "SELECT order_id FROM t_order")
		require.NoError(t, err)
		for rows.Next() {
		}
		require.NoError(t, rows.Err())
		rows.Close()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var tables, nodes []string
		for _, e := range rec.ends {
			tables = append(tables, e.Redacted)
			nodes = append(nodes, e.Node)
		}
		// Four physical tables on two data sources: a span per unit, each
		// on the data source's own node.
		require.Len(t, rec.ends, 4, "%v", tables)
		assert.ElementsMatch(t, []string{"ds_0-replica1", "ds_0-replica1", "ds_1-replica1", "ds_1-replica1"}, nodes, "%v", tables)
		assert.Contains(t, strings.Join(tables, " "), "t_order_1")
	})
}

// unitRecorder records the StatementEnds it is given.
type unitRecorder struct {
	mu   sync.Mutex
	ends []rwshard.StatementEnd
}

func (r *unitRecorder) StatementStart(ctx context.Context, _ rwshard.StatementStart) context.Context {
	return ctx
}

func (r *unitRecorder) StatementEnd(_ context.Context, e rwshard.StatementEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends = append(r.ends, e)
}

// columnType is what database/sql reports of a column.
type columnType struct {
	Name, DatabaseType string
	ScanType           string
	Nullable, HasNull  bool
	Length             int64
	HasLength          bool
	Precision, Scale   int64
	HasDecimal         bool
}

func columnTypes(t *testing.T, db *sql.DB, q string) []columnType {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q)
	require.NoError(t, err, q)
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	require.NoError(t, err)
	var out []columnType
	for _, ct := range cts {
		c := columnType{Name: ct.Name(), DatabaseType: ct.DatabaseTypeName(), ScanType: ct.ScanType().String()}
		c.Nullable, c.HasNull = ct.Nullable()
		c.Length, c.HasLength = ct.Length()
		c.Precision, c.Scale, c.HasDecimal = ct.DecimalSize()
		out = append(out, c)
	}
	for rows.Next() {
	}
	require.NoError(t, rows.Err())
	return out
}

// An XA transaction whose branch the server rolled back (a deadlock)
// fails its commit with a *shard.CommitError that reports every branch
// as the servers left it: both rolled back, none committed or prepared.
func TestLabShardedXACommitError(t *testing.T) {
	l := labtest.Fresh(t, lab.Sharded())
	ctx := labtest.Ctx(t, 2*time.Minute)
	db := openSharded(t, l, "rwshard.xa=true")
	_, err := db.ExecContext(ctx, "CREATE TABLE t_order (order_id BIGINT PRIMARY KEY, user_id INT NOT NULL, amount DECIMAL(10,2), status VARCHAR(10), note VARCHAR(20))")
	require.NoError(t, err)
	// order 1 on ds_0; orders 3 and 5 on ds_1 (user 1), in t_order_1.
	_, err = db.ExecContext(ctx, "INSERT INTO t_order (order_id, user_id, amount) VALUES (2, 0, 1), (3, 1, 1), (5, 1, 1)")
	require.NoError(t, err)

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "UPDATE t_order SET amount = 2 WHERE user_id = 0 AND order_id = 2")
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, "UPDATE t_order SET amount = 2 WHERE user_id = 1 AND order_id = 3")
	require.NoError(t, err)

	// Another client on ds_1 takes order 5, does more work, then waits
	// for order 3: the transaction asking for order 5 next closes a
	// deadlock, and InnoDB rolls back the smaller one, the XA branch.
	other := labtest.Direct(t, l.Groups[1].Primary(), "")
	otx, err := other.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer otx.Rollback()
	_, err = otx.ExecContext(ctx, "UPDATE t_order_1 SET amount = 3 WHERE order_id = 5")
	require.NoError(t, err)
	_, err = otx.ExecContext(ctx, "CREATE TEMPORARY TABLE heavy (a INT) ENGINE=InnoDB")
	require.NoError(t, err)
	_, err = otx.ExecContext(ctx, "INSERT INTO t_order_1 (order_id, user_id, amount) SELECT 1000 + seq, 1, 0 FROM seq_1_to_500")
	require.NoError(t, err)
	waiting := make(chan error, 1)
	go func() {
		_, err := otx.ExecContext(ctx, "UPDATE t_order_1 SET amount = 3 WHERE order_id = 3")
		waiting <- err
	}()
	time.Sleep(300 * time.Millisecond) // the other client waits for order 3's lock
	_, err = tx.ExecContext(ctx, "UPDATE t_order SET amount = 2 WHERE user_id = 1 AND order_id = 5")
	me, ok := err.(*mysql.MySQLError)
	require.True(t, ok, "%T: %v", err, err)
	require.EqualValues(t, 1213, me.Number, "the XA branch is the deadlock's victim")
	require.NoError(t, <-waiting)
	require.NoError(t, otx.Rollback())

	err = tx.Commit()
	var ce *shard.CommitError
	require.ErrorAs(t, err, &ce)
	t.Logf("commit: %v", err)
	assert.Equal(t, "ds_1", ce.Failed)
	assert.Empty(t, ce.Committed)
	assert.ElementsMatch(t, []string{"ds_0", "ds_1"}, ce.RolledBack, "%v", err)
	assert.Empty(t, ce.Prepared)
	for _, g := range l.Groups {
		var n int
		require.NoError(t, labtest.Direct(t, g.Primary(), "").QueryRowContext(ctx, "SELECT COUNT(*) FROM t_order_0 WHERE amount = 2").Scan(&n))
		assert.Zero(t, n, g.Name)
		rows, err := g.Primary().Admin().QueryContext(ctx, "XA RECOVER")
		require.NoError(t, err)
		assert.False(t, rows.Next(), "no branch left prepared on %s", g.Name)
		rows.Close()
	}
}
