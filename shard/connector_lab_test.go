package shard_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/rwshard/rwshard/shard"
)

// table reads a result as strings ("NULL" for NULL), for comparison.
func table(t *testing.T, rows *sql.Rows) [][]string {
	t.Helper()
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = "NULL"
			if v.Valid {
				row[i] = v.String
			}
		}
		out = append(out, row)
	}
	require.NoError(t, rows.Err())
	return out
}

func TestLabSharding(t *testing.T) {
	l := labtest.Fresh(t, lab.Sharded())
	ctx := labtest.Ctx(t, 3*time.Minute)
	rules := labtest.RulesFile(t, l)
	db, err := sql.Open(rwshard.DriverName, "/app?rwshard.rulesFile="+url.QueryEscape(rules)+"&rwshard.probeInterval=250ms")
	require.NoError(t, err)
	defer db.Close()
	exec := func(q string, args ...any) sql.Result {
		t.Helper()
		res, err := db.ExecContext(ctx, q, args...)
		require.NoError(t, err, q)
		return res
	}

	// DDL on a logical table reaches every data node.
	cols := "(order_id BIGINT PRIMARY KEY, user_id INT NOT NULL, amount DECIMAL(10,2), status VARCHAR(10), note VARCHAR(20) NULL)"
	exec("CREATE TABLE t_order " + cols)
	exec("CREATE TABLE ref_order " + cols)
	exec("CREATE TABLE t_order_item (item_id BIGINT PRIMARY KEY, order_id BIGINT, user_id INT, qty INT)")
	exec("CREATE TABLE t_dict (k INT PRIMARY KEY, v VARCHAR(10))")
	for _, g := range l.Groups {
		for _, tbl := range []string{"t_order_0", "t_order_1", "t_order_item_0", "t_order_item_1", "t_dict"} {
			var n int
			require.NoError(t, labtest.Direct(t, g.Primary(), "").QueryRowContext(ctx,
				"SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'app' AND table_name = ?", tbl).Scan(&n))
			assert.Equal(t, 1, n, "%s missing on %s", tbl, g.Name)
		}
	}

	// The same 400 rows in the sharded table (multi-row INSERTs split per
	// shard, placeholders bound) and in the reference table.
	rng := rand.New(rand.NewPCG(1, 2))
	statuses := []string{"new", "paid", "shipped", "done"}
	for batch := range 8 {
		var ph []string
		var args []any
		for i := range 50 {
			id := batch*50 + i + 1
			var note any
			if rng.IntN(4) > 0 {
				note = fmt.Sprintf("n%d", rng.IntN(5))
			}
			ph = append(ph, "(?, ?, ?, ?, ?)")
			args = append(args, id, 1+rng.IntN(20), fmt.Sprintf("%d.%02d", rng.IntN(500), rng.IntN(100)), statuses[rng.IntN(4)], note)
		}
		for _, tbl := range []string{"t_order", "ref_order"} {
			res := exec("INSERT INTO "+tbl+" (order_id, user_id, amount, status, note) VALUES "+strings.Join(ph, ", "), args...)
			n, _ := res.RowsAffected()
			require.EqualValues(t, 50, n, tbl)
		}
	}
	// INSERT and REPLACE without a column list: the columns come from
	// information_schema (as the application user), each row goes where
	// its keys map to.
	for _, tbl := range []string{"t_order", "ref_order"} {
		exec("INSERT INTO "+tbl+" VALUES (?, ?, '1.25', 'new', NULL), (402, 7, '2.50', 'paid', 'n1')", 401, 4)
		exec("REPLACE INTO " + tbl + " VALUES (403, 5, '3.75', 'done', 'n2'), (404, 6, '0.00', 'new', NULL)")
	}
	placement(t, ctx, l, 404)
	// INSERT without a column list through Query (one row, one unit), and
	// INSERT … SELECT / REPLACE … SELECT without one (from a table, from a
	// derived table): each data node copies its own rows, every row where
	// its keys map to.
	for _, r := range [][]any{{900010, 405, 4, 3}, {900011, 406, 5, 2}, {900012, 407, 6, 4}} {
		rows, err := db.QueryContext(ctx, "INSERT INTO t_order_item VALUES (?, ?, ?, ?)", r...)
		require.NoError(t, err)
		require.NoError(t, rows.Close())
	}
	copied, _ := exec("INSERT INTO t_order SELECT order_id, user_id, qty, 'copied', NULL FROM t_order_item WHERE user_id IN (4, 5) AND order_id IN (405, 406)").RowsAffected()
	assert.EqualValues(t, 2, copied, "INSERT … SELECT rows")
	exec("REPLACE INTO t_order SELECT order_id, user_id, amount + 1, 'replaced', note FROM t_order WHERE user_id = 5 AND order_id = ?", 406)
	exec("INSERT INTO t_order SELECT d.order_id, d.user_id, d.qty, 'derived', NULL FROM (SELECT order_id, user_id, qty FROM t_order_item WHERE user_id = ? AND order_id = ?) d", 6, 407)
	exec("INSERT INTO ref_order VALUES (405, 4, 3, 'copied', NULL), (406, 5, 3, 'replaced', NULL), (407, 6, 4, 'derived', NULL)")
	placement(t, ctx, l, 407)
	// The same as the user most applications get, GRANT ALL ON app.* and
	// nothing more: information_schema shows it the columns (a new
	// connector, so nothing is cached).
	plain, err := sql.Open(rwshard.DriverName, "/app?rwshard.rulesFile="+url.QueryEscape(labtest.PlainRulesFile(t, l)))
	require.NoError(t, err)
	defer plain.Close()
	_, err = plain.ExecContext(ctx, "INSERT INTO t_order_item VALUES (900013, 408, 7, 5)")
	require.NoError(t, err, "INSERT without a column list as %s", lab.PlainUser)
	_, err = plain.ExecContext(ctx, "REPLACE INTO t_order SELECT order_id, user_id, qty, 'plain', NULL FROM t_order_item WHERE user_id = 7 AND order_id = 408")
	require.NoError(t, err, "REPLACE … SELECT without a column list as %s", lab.PlainUser)
	exec("INSERT INTO ref_order VALUES (408, 7, 5, 'plain', NULL)")
	placement(t, ctx, l, 408)
	var user string
	require.NoError(t, plain.QueryRowContext(hint.Primary(ctx), "SELECT CURRENT_USER() FROM t_order WHERE user_id = 7 AND order_id = 408").Scan(&user))
	assert.Equal(t, lab.PlainUser+"@%", user)
	for _, q := range []string{"SELECT * FROM {T} WHERE order_id IN (405, 406, 407, 408) ORDER BY order_id", "SELECT * FROM {T} WHERE user_id = 5 AND order_id = 406"} {
		got, err := db.QueryContext(hint.Primary(ctx), strings.ReplaceAll(q, "{T}", "t_order"))
		require.NoError(t, err)
		want, err := db.QueryContext(hint.Primary(ctx), strings.ReplaceAll(q, "{T}", "ref_order"))
		require.NoError(t, err)
		assert.Equal(t, table(t, want), table(t, got), q)
	}
	exec("DELETE FROM t_order_item WHERE user_id IN (4, 5, 6, 7) AND order_id IN (405, 406, 407, 408)")
	for _, tbl := range []string{"t_order", "ref_order"} {
		exec("DELETE FROM " + tbl + " WHERE user_id IN (4, 5, 6, 7) AND order_id IN (401, 402, 403, 404, 405, 406, 407, 408)")
	}
	placement(t, ctx, l, 400)
	// DDL through rwshard refreshes the columns; physical tables that
	// differ are refused.
	exec("INSERT INTO t_order_item VALUES (900001, 401, 4, 1)")
	exec("ALTER TABLE t_order_item ADD COLUMN extra INT NULL")
	exec("INSERT INTO t_order_item VALUES (900002, 402, 7, 1, 9)")
	_, err = db.ExecContext(ctx, "INSERT INTO t_order_item VALUES (900003, 402, 7, 1)")
	require.ErrorIs(t, err, shard.ErrUnsupported)
	_, err = labtest.Direct(t, l.Groups[1].Primary(), "").ExecContext(ctx, "ALTER TABLE t_order_item_1 DROP COLUMN extra")
	require.NoError(t, err)
	exec("ALTER TABLE t_order_item ADD COLUMN extra2 INT NULL")
	_, err = db.ExecContext(ctx, "INSERT INTO t_order_item VALUES (900004, 402, 7, 1, 9, 9)")
	require.ErrorIs(t, err, shard.ErrColumnsDiffer)
	assert.Contains(t, err.Error(), "t_order_item_1")
	exec("ALTER TABLE t_order_item DROP COLUMN extra2")
	for _, g := range l.Groups {
		_, err = labtest.Direct(t, g.Primary(), "").ExecContext(ctx, "ALTER TABLE t_order_item_0 DROP COLUMN IF EXISTS extra")
		require.NoError(t, err)
		_, err = labtest.Direct(t, g.Primary(), "").ExecContext(ctx, "ALTER TABLE t_order_item_1 DROP COLUMN IF EXISTS extra")
		require.NoError(t, err)
	}
	exec("DELETE FROM t_order_item WHERE user_id = 4 AND order_id = 401")
	exec("DELETE FROM t_order_item WHERE user_id = 7 AND order_id = 402")

	// Reads: ≥ 100 queries, each compared with the same query on the
	// unsharded reference table.
	require.NoError(t, l.Sync(ctx, 20*time.Second))
	queries := shardQueries(rng)
	require.GreaterOrEqual(t, len(queries), 100)
	for _, q := range queries {
		sharded := strings.ReplaceAll(q.sql, "{T}", "t_order")
		ref := strings.ReplaceAll(q.sql, "{T}", "ref_order")
		got, err := db.QueryContext(ctx, sharded, q.args...)
		require.NoError(t, err, sharded)
		want, err := db.QueryContext(ctx, ref, q.args...)
		require.NoError(t, err, ref)
		g, w := table(t, got), table(t, want)
		if !q.ordered {
			sortRows(g)
			sortRows(w)
		}
		assert.Equal(t, w, g, "%s %v", sharded, q.args)
	}
	t.Logf("%d queries on the sharded table matched the reference table", len(queries))

	// Text in the tables' case-insensitive collation (latin1_swedish_ci
	// here): across shards "apple", "Apple" and "APPLE" sort together and
	// are one group and one DISTINCT value, as on one server.
	collationOrder(t, ctx, l, db, exec)

	// A single-shard read runs on that shard's replica.
	var sid int64
	require.NoError(t, db.QueryRowContext(ctx, "SELECT @@server_id FROM t_order WHERE user_id = 3 AND order_id = ? LIMIT 1",
		firstOrder(t, ctx, db, 3)).Scan(&sid))
	assert.Equal(t, "ds_1-replica1", l.NodeByServerID(sid))

	// Writes with the key land in the right physical table only.
	exec("UPDATE t_order SET status = 'x' WHERE user_id = 4 AND order_id = ?", firstOrder(t, ctx, db, 4))
	res := exec("DELETE FROM t_order WHERE user_id = 5")
	n, _ := res.RowsAffected()
	var refN int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM ref_order WHERE user_id = 5").Scan(&refN))
	assert.EqualValues(t, refN, n, "deleted rows")
	exec("DELETE FROM ref_order WHERE user_id = 5")
	placement(t, ctx, l, 400-refN)

	// A generated key: the INSERT omits order_id; LastInsertId returns it
	// and the row is where that key and user 7 say.
	res = exec("INSERT INTO t_order (user_id, amount, status) VALUES (?, ?, ?)", 7, "1.00", "new")
	key, err := res.LastInsertId()
	require.NoError(t, err)
	assert.Greater(t, key, int64(1_000_000), "a snowflake key")
	var owner int
	require.NoError(t, labtest.Direct(t, l.Groups[1].Primary(), "").QueryRowContext(ctx,
		fmt.Sprintf("SELECT user_id FROM t_order_%d WHERE order_id = ?", key%2), key).Scan(&owner))
	assert.Equal(t, 7, owner)

	// Refusals: a write without the key, a key update, a cross-shard join.
	_, err = db.ExecContext(ctx, "UPDATE t_order SET status = 'y' WHERE status = 'new'")
	assert.ErrorIs(t, err, shard.ErrNoShardKey)
	_, err = db.ExecContext(ctx, "UPDATE t_order SET user_id = 3 WHERE user_id = 4")
	assert.ErrorIs(t, err, shard.ErrShardKeyUpdate)
	_, err = db.QueryContext(ctx, "SELECT * FROM t_order o JOIN ref_order r ON o.order_id = r.order_id")
	assert.ErrorIs(t, err, shard.ErrCrossShardJoin)
	// A subquery whose rows may be on another data node.
	_, err = db.QueryContext(ctx, "SELECT * FROM t_order WHERE user_id = 1 AND status IN (SELECT status FROM t_order_item WHERE user_id = 2)")
	assert.ErrorIs(t, err, shard.ErrUnsupported)
	var re *shard.RouteError
	if assert.ErrorAs(t, err, &re) {
		assert.Equal(t, "t_order_item", re.Table)
	}

	// Binding tables join within a shard; broadcast tables everywhere.
	exec("INSERT INTO t_order_item (item_id, order_id, user_id, qty) VALUES (1, ?, 3, 2)", firstOrder(t, ctx, db, 3))
	exec("INSERT INTO t_dict VALUES (1, 'one')")
	require.NoError(t, l.Sync(ctx, 20*time.Second))
	var qty int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT i.qty FROM t_order o JOIN t_order_item i ON o.order_id = i.order_id "+
		"WHERE o.user_id = 3 AND o.order_id = ?", firstOrder(t, ctx, db, 3)).Scan(&qty))
	assert.Equal(t, 2, qty)
	for _, g := range l.Groups {
		var v string
		require.NoError(t, labtest.Direct(t, g.Primary(), "").QueryRowContext(ctx, "SELECT v FROM t_dict WHERE k = 1").Scan(&v))
		assert.Equal(t, "one", v, g.Name)
	}

	// A transaction over both shards commits both, or neither.
	for _, commit := range []bool{true, false} {
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, "INSERT INTO t_order (order_id, user_id, amount, status) VALUES (9001, 1, 1, 'tx'), (9002, 2, 1, 'tx')")
		require.NoError(t, err)
		var inTx int
		require.NoError(t, tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM t_order WHERE status = 'tx'").Scan(&inTx))
		assert.Equal(t, 2, inTx, "the transaction sees its own rows on both shards")
		if commit {
			require.NoError(t, tx.Commit())
		} else {
			require.NoError(t, tx.Rollback())
			_, err = db.ExecContext(ctx, "DELETE FROM t_order WHERE user_id IN (1, 2) AND status = 'tx'") // nothing to delete
			require.NoError(t, err)
		}
		var have int
		for _, g := range l.Groups {
			var n int
			require.NoError(t, labtest.Direct(t, g.Primary(), "").QueryRowContext(ctx,
				"SELECT (SELECT COUNT(*) FROM t_order_0 WHERE status = 'tx') + (SELECT COUNT(*) FROM t_order_1 WHERE status = 'tx')").Scan(&n))
			have += n
		}
		if commit {
			assert.Equal(t, 2, have, "committed rows")
			exec("DELETE FROM t_order WHERE user_id IN (1, 2) AND status = 'tx'")
		} else {
			assert.Equal(t, 0, have, "rolled back rows")
		}
	}

	// The same with XA: both branches prepare before either commits.
	xa, err := sql.Open(rwshard.DriverName, "/app?rwshard.xa=true&rwshard.rulesFile="+url.QueryEscape(rules))
	require.NoError(t, err)
	defer xa.Close()
	xaPrepares := func() (n int64) {
		for _, g := range l.Groups {
			n += labtest.StatusCounter(t, g.Primary(), "Com_xa_prepare")
		}
		return n
	}
	for _, commit := range []bool{true, false} {
		before := xaPrepares()
		tx, err := xa.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, "INSERT INTO t_order (order_id, user_id, amount, status) VALUES (9101, 1, 1, 'xa'), (9102, 2, 1, 'xa')")
		require.NoError(t, err)
		if commit {
			require.NoError(t, tx.Commit())
			assert.Equal(t, before+2, xaPrepares(), "both branches prepared")
		} else {
			require.NoError(t, tx.Rollback())
		}
		var have int
		require.NoError(t, db.QueryRowContext(hint.Primary(ctx), "SELECT COUNT(*) FROM t_order WHERE status = 'xa'").Scan(&have))
		if commit {
			assert.Equal(t, 2, have, "XA-committed rows")
			exec("DELETE FROM t_order WHERE user_id IN (1, 2) AND status = 'xa'")
		} else {
			assert.Equal(t, 0, have, "XA-rolled-back rows")
		}
	}
	for _, g := range l.Groups { // no branch left prepared
		rows, err := g.Primary().Admin().QueryContext(ctx, "XA RECOVER")
		require.NoError(t, err)
		assert.False(t, rows.Next(), "a prepared XA branch was left on %s", g.Name)
		rows.Close()
	}

	// Explain shows the units.
	p, err := rwshard.Explain(ctx, db, "SELECT * FROM t_order WHERE user_id = ? ORDER BY order_id LIMIT 5", 6)
	require.NoError(t, err)
	// user 6 is in ds_0; without order_id both of its tables are read.
	assert.Equal(t, "multi-shard", p.Reason)
	require.Len(t, p.Units, 2)
	for i, u := range p.Units {
		assert.Equal(t, "ds_0", u.DataSource)
		assert.Contains(t, u.Plan.SQL, fmt.Sprintf("t_order_%d", i))
		assert.Equal(t, []string{"ds_0-replica1"}, u.Plan.Targets)
	}

	// Reload: new rules swap in while a statement runs on the old ones.
	c, err := rwshard.ConnectorOf(ctx, db)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		var x int
		done <- db.QueryRowContext(ctx, "SELECT SLEEP(1) FROM t_order WHERE user_id = 1 LIMIT 1").Scan(&x)
	}()
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, c.ReloadFile(ctx, rules))
	require.NoError(t, <-done, "a statement in flight during the reload failed")
	var total int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM t_order").Scan(&total))
	assert.Equal(t, 400-refN+1, total)
	st := c.Stats()
	assert.Len(t, st.Nodes, 4, "%+v", st.Nodes)
}

// placement checks every row of t_order sits in ds_(user_id%2).t_order_(order_id%2),
// and that there are want rows in all.
func placement(t *testing.T, ctx context.Context, l *lab.Lab, want int) {
	t.Helper()
	total := 0
	for gi, g := range l.Groups {
		for ti := range 2 {
			rows, err := labtest.Direct(t, g.Primary(), "").QueryContext(ctx, fmt.Sprintf("SELECT order_id, user_id FROM t_order_%d", ti))
			require.NoError(t, err)
			for rows.Next() {
				var id, user int64
				require.NoError(t, rows.Scan(&id, &user))
				total++
				if user%2 != int64(gi) || id%2 != int64(ti) {
					t.Errorf("order %d of user %d is in %s.t_order_%d", id, user, g.Name, ti)
				}
			}
			require.NoError(t, rows.Err())
		}
	}
	assert.Equal(t, want, total, "rows in all physical tables")
}

func firstOrder(t *testing.T, ctx context.Context, db *sql.DB, user int) int64 {
	t.Helper()
	var id int64
	require.NoError(t, db.QueryRowContext(ctx, "SELECT MIN(order_id) FROM ref_order WHERE user_id = ?", user).Scan(&id))
	return id
}

// collationOrder adds mixed-case notes to both tables, compares ORDER BY,
// GROUP BY and DISTINCT on them with the reference table, and removes
// them. A group's or DISTINCT row's spelling is whichever row the server
// (or the merge) met first, so those compare in lower case.
func collationOrder(t *testing.T, ctx context.Context, l *lab.Lab, db *sql.DB, exec func(string, ...any) sql.Result) {
	t.Helper()
	notes := []string{"apple", "Banana", "APPLE", "b", "cherry", "B", "Apple", "banana", "a", "Cherry", "A", "BANANA"}
	for i, n := range notes {
		for _, tbl := range []string{"t_order", "ref_order"} {
			exec("INSERT INTO "+tbl+" (order_id, user_id, amount, status, note) VALUES (?, ?, 1, 'new', ?)", 100001+i, 1+i%4, n)
		}
	}
	require.NoError(t, l.Sync(ctx, 20*time.Second)) // the reads go to the replicas
	lower := func(rows [][]string) [][]string {
		for _, r := range rows {
			for i := range r {
				r[i] = strings.ToLower(r[i])
			}
		}
		return rows
	}
	for _, q := range []struct {
		sql          string
		exact, order bool
	}{
		{"SELECT note, order_id FROM {T} WHERE order_id > 100000 ORDER BY note, order_id", true, true},
		{"SELECT order_id, note FROM {T} WHERE order_id > 100000 ORDER BY note DESC, order_id DESC LIMIT 3, 5", true, true},
		{"SELECT note, COUNT(*) FROM {T} WHERE order_id > 100000 GROUP BY note ORDER BY note", false, true},
		{"SELECT COUNT(*), note FROM {T} WHERE order_id > 100000 GROUP BY note", false, false},
		{"SELECT DISTINCT note FROM {T} WHERE order_id > 100000 ORDER BY note DESC", false, true},
		{"SELECT DISTINCT note FROM {T} WHERE order_id > 100000", false, false},
		{"SELECT COUNT(DISTINCT note), COUNT(*) FROM {T} WHERE order_id > 100000", true, true},
		{"SELECT status, COUNT(DISTINCT note) FROM {T} WHERE order_id > 90 GROUP BY status ORDER BY status", true, true},
	} {
		sharded := strings.ReplaceAll(q.sql, "{T}", "t_order")
		got, err := db.QueryContext(ctx, sharded)
		require.NoError(t, err, sharded)
		want, err := db.QueryContext(ctx, strings.ReplaceAll(q.sql, "{T}", "ref_order"))
		require.NoError(t, err, q.sql)
		g, w := table(t, got), table(t, want)
		if !q.exact {
			g, w = lower(g), lower(w)
		}
		if !q.order {
			sortRows(g)
			sortRows(w)
		}
		assert.Equal(t, w, g, sharded)
	}
	for i := range notes {
		for _, tbl := range []string{"t_order", "ref_order"} {
			exec("DELETE FROM "+tbl+" WHERE user_id = ? AND order_id = ?", 1+i%4, 100001+i)
		}
	}
}

func sortRows(rows [][]string) {
	slices.SortFunc(rows, func(a, b []string) int { return strings.Compare(strings.Join(a, "\x00"), strings.Join(b, "\x00")) })
}

type shardQuery struct {
	sql     string
	args    []any
	ordered bool // ORDER BY defines the whole order
}

// shardQueries builds the comparison queries: keys by =, IN, BETWEEN and
// none (all shards); ORDER BY with mixed directions and NULLs; LIMIT and
// OFFSET; COUNT/SUM/MIN/MAX/AVG with and without GROUP BY; DISTINCT;
// COUNT/SUM/AVG(DISTINCT); HAVING.
func shardQueries(rng *rand.Rand) []shardQuery {
	var qs []shardQuery
	u := func() int { return 1 + rng.IntN(20) }
	for range 12 {
		a := 1 + rng.IntN(350)
		b := a + rng.IntN(60)
		lim, off := 1+rng.IntN(15), rng.IntN(30)
		amt := rng.IntN(500)
		qs = append(qs,
			shardQuery{"SELECT order_id, user_id, amount, status, note FROM {T} WHERE user_id = ? ORDER BY order_id", []any{u()}, true},
			shardQuery{"SELECT order_id, amount FROM {T} WHERE user_id IN (?, ?, ?) ORDER BY amount DESC, order_id", []any{u(), u(), u()}, true},
			shardQuery{fmt.Sprintf("SELECT order_id, status FROM {T} WHERE order_id BETWEEN %d AND %d ORDER BY order_id LIMIT %d OFFSET %d", a, b, lim, off), nil, true},
			shardQuery{fmt.Sprintf("SELECT order_id, amount FROM {T} ORDER BY amount, order_id DESC LIMIT %d, %d", off, lim), nil, true},
			shardQuery{"SELECT COUNT(*), SUM(amount), MIN(amount), MAX(amount), AVG(amount) FROM {T} WHERE amount > ?", []any{amt}, true},
			shardQuery{"SELECT status, COUNT(*), SUM(amount), AVG(amount) FROM {T} WHERE user_id IN (?, ?) OR amount < ? GROUP BY status ORDER BY status", []any{u(), u(), amt}, true},
			shardQuery{"SELECT user_id, COUNT(*) AS n FROM {T} GROUP BY user_id ORDER BY n DESC, user_id LIMIT 5", nil, true},
			shardQuery{"SELECT DISTINCT status FROM {T} WHERE user_id <> ? ORDER BY status", []any{u()}, true},
			shardQuery{fmt.Sprintf("SELECT DISTINCT user_id FROM {T} WHERE amount > %d", amt), nil, false},
			shardQuery{"SELECT order_id, note FROM {T} ORDER BY note DESC, order_id LIMIT 25", nil, true},
			shardQuery{fmt.Sprintf("SELECT * FROM {T} WHERE order_id > %d AND user_id BETWEEN ? AND ?", b), []any{3, 9}, false},
			shardQuery{"SELECT COUNT(DISTINCT user_id), SUM(DISTINCT user_id), AVG(DISTINCT amount), COUNT(DISTINCT note), COUNT(*) FROM {T} WHERE amount > ?", []any{amt}, true},
			shardQuery{fmt.Sprintf("SELECT status, COUNT(DISTINCT user_id), SUM(DISTINCT amount), AVG(DISTINCT user_id) FROM {T} WHERE order_id > %d GROUP BY status ORDER BY status LIMIT 1, 2", a), nil, true},
			shardQuery{"SELECT user_id, COUNT(DISTINCT note) AS n FROM {T} WHERE amount < ? GROUP BY user_id ORDER BY n DESC, user_id LIMIT 5", []any{amt}, true},
			shardQuery{"SELECT user_id, COUNT(*), SUM(amount) FROM {T} GROUP BY user_id HAVING COUNT(*) > ? AND SUM(amount) < ? ORDER BY user_id", []any{15 + rng.IntN(10), 4000 + rng.IntN(6000)}, true},
			shardQuery{fmt.Sprintf("SELECT status, AVG(amount) AS a FROM {T} WHERE order_id > %d GROUP BY status HAVING a > 240 OR MIN(amount) IS NULL OR COUNT(DISTINCT user_id) >= 20 ORDER BY a DESC LIMIT 1, 2", a), nil, true},
			shardQuery{fmt.Sprintf("SELECT user_id FROM {T} GROUP BY user_id HAVING MAX(amount) >= %d AND user_id <> ? ORDER BY COUNT(*) DESC, user_id LIMIT %d", amt, lim), []any{u()}, true},
			shardQuery{"SELECT COUNT(*) FROM {T} WHERE user_id = ? HAVING COUNT(*) > 20", []any{u()}, true},
		)
	}
	// Subqueries and derived tables (the same table at both levels: t_order
	// is in a binding group and order_id is its key, so its rows with one
	// order_id are on one node): linked by order_id on any number of
	// nodes, or not linked on the statement's one node.
	for range 6 {
		a := 1 + rng.IntN(300)
		b := a + 2*rng.IntN(20)
		usr := u()
		other := usr%2 + 2*rng.IntN(9) // same data source as usr
		amt := rng.IntN(500)
		qs = append(qs,
			shardQuery{"SELECT order_id, amount FROM {T} WHERE order_id IN (SELECT order_id FROM {T} WHERE user_id = ? AND amount > ?) ORDER BY order_id", []any{usr, amt}, true},
			shardQuery{"SELECT COUNT(*), SUM(amount) FROM {T} WHERE order_id IN (SELECT order_id FROM {T} WHERE user_id IN (?, ?))", []any{usr, u()}, true},
			shardQuery{"SELECT o.order_id, o.status FROM {T} o WHERE o.user_id IN (?, ?) AND EXISTS (SELECT 1 FROM {T} x WHERE x.order_id = o.order_id AND x.note IS NOT NULL) ORDER BY o.order_id", []any{usr, u()}, true},
			shardQuery{"SELECT o.order_id FROM {T} o WHERE o.user_id = ? AND NOT EXISTS (SELECT 1 FROM {T} x WHERE x.order_id = o.order_id AND x.amount < ?)", []any{usr, amt}, false},
			shardQuery{"SELECT o.order_id, (SELECT x.amount FROM {T} x WHERE x.order_id = o.order_id) AS a FROM {T} o WHERE o.user_id = ? ORDER BY o.order_id LIMIT 7", []any{usr}, true},
			shardQuery{"SELECT d.status, COUNT(*), SUM(d.amount) FROM (SELECT status, amount, user_id AS u FROM {T} WHERE amount > ?) d WHERE d.u IN (?, ?) GROUP BY d.status ORDER BY d.status", []any{amt, usr, u()}, true},
			shardQuery{"SELECT * FROM (SELECT order_id AS id, user_id, note FROM {T}) AS d WHERE d.user_id = ? AND d.id BETWEEN ? AND ?", []any{usr, a, b + 40}, false},
			shardQuery{"SELECT COUNT(*), MAX(n) FROM (SELECT status, COUNT(*) AS n FROM {T} WHERE user_id = ? AND order_id IN (?, ?, ?) GROUP BY status) d", []any{usr, a, a + 2, a + 4}, true},
			shardQuery{"SELECT order_id, status FROM {T} WHERE user_id = ? AND order_id IN (?, ?, ?) AND status IN (SELECT status FROM {T} WHERE user_id = ? AND order_id IN (?, ?))",
				[]any{usr, a, a + 2, a + 4, other, b, b + 2}, false},
		)
	}
	qs = append(qs,
		shardQuery{"SELECT COUNT(note), COUNT(*), MIN(note), MAX(note) FROM {T}", nil, true},
		shardQuery{"SELECT note, COUNT(*) FROM {T} GROUP BY note", nil, false},
		shardQuery{"SELECT AVG(amount) FROM {T} WHERE user_id = 999", nil, true},
	)
	return qs
}
