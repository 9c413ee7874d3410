package rwshard_test

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// Where each class of statement runs, proven by @@server_id.
func TestLabRouting(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS where_ran (id INT AUTO_INCREMENT PRIMARY KEY, sid INT, tag VARCHAR(40))",
		fmt.Sprintf("INSERT INTO where_ran (sid, tag) VALUES (%d, 'setup')", l.Primary().ServerID))
	db := openLab(t, l, "")
	replicas := map[string]bool{"replica1": true, "replica2": true}

	seen := map[string]int{}
	for range 10 {
		seen[ranOn(t, l, db, ctx, "SELECT @@server_id")]++
	}
	assert.Equal(t, map[string]int{"replica1": 5, "replica2": 5}, seen, "round robin over both replicas")

	for _, tc := range []struct {
		name, query string
		ctx         context.Context
		want        string // a node name, or "replica"
	}{
		{"plain read", "SELECT @@server_id", ctx, "replica"},
		{"cte read", "WITH x AS (SELECT 1 AS one) SELECT @@server_id FROM x", ctx, "replica"},
		{"leading comment", "/* report */ SELECT @@server_id", ctx, "replica"},
		{"for update", "SELECT @@server_id FROM where_ran LIMIT 1 FOR UPDATE", ctx, "primary"},
		{"lock in share mode", "SELECT @@server_id FROM where_ran LIMIT 1 LOCK IN SHARE MODE", ctx, "primary"},
		{"last_insert_id", "SELECT @@server_id + 0 * LAST_INSERT_ID()", ctx, "primary"},
		{"found_rows", "SELECT @@server_id + 0 * FOUND_ROWS()", ctx, "primary"},
		{"comment hint primary", "/* rwshard:primary */ SELECT @@server_id", ctx, "primary"},
		{"shardingsphere hint", "/* SHARDINGSPHERE_HINT: WRITE_ROUTE_ONLY=true */ SELECT @@server_id", ctx, "primary"},
		{"comment hint node", "/* rwshard:node=replica2 */ SELECT @@server_id", ctx, "replica2"},
		{"context hint primary", "SELECT @@server_id", hint.Primary(ctx), "primary"},
		{"context hint node", "SELECT @@server_id", hint.Node(ctx, "replica1"), "replica1"},
		{"insert returning via Query", "INSERT INTO where_ran (sid, tag) VALUES (@@server_id, 'returning') RETURNING sid", ctx, "primary"},
	} {
		got := ranOn(t, l, db, tc.ctx, tc.query)
		if tc.want == "replica" {
			assert.True(t, replicas[got], "%s: ran on %s", tc.name, got)
		} else {
			assert.Equal(t, tc.want, got, tc.name)
		}
	}

	// Writes through Exec: the row records the server that executed it.
	for _, q := range []string{
		"INSERT INTO where_ran (sid, tag) VALUES (@@server_id, 'insert')",
		"REPLACE INTO where_ran (id, sid, tag) VALUES (1000, @@server_id, 'replace')",
		"INSERT INTO where_ran (sid, tag) SELECT @@server_id, 'insert-select'",
	} {
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	_, err := db.ExecContext(ctx, "UPDATE where_ran SET sid = @@server_id, tag = 'update' WHERE id = 1000")
	require.NoError(t, err)
	rows, err := direct(t, l.Primary(), "").QueryContext(ctx, "SELECT DISTINCT sid FROM where_ran")
	require.NoError(t, err)
	var sids []int
	for rows.Next() {
		var sid int
		require.NoError(t, rows.Scan(&sid))
		sids = append(sids, sid)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []int{l.Primary().ServerID}, sids, "every write ran on the primary")

	// A multi-statement string of reads may use a replica; one with a
	// write may not.
	multi := openLab(t, l, "multiStatements=true")
	assert.True(t, replicas[ranOn(t, l, multi, ctx, "SELECT @@server_id; SELECT 2")])
	assert.Equal(t, "primary", ranOn(t, l, multi, ctx, "SELECT @@server_id; DELETE FROM where_ran WHERE id < 0"))
}

// A transaction and a pinned session each stay on one backend connection.
func TestLabPinnedConnections(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	db := openLab(t, l, "")

	where := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) (connID int64, node string) {
		var sid int64
		require.NoError(t, q.QueryRowContext(ctx, "SELECT CONNECTION_ID(), @@server_id").Scan(&connID, &sid))
		return connID, l.NodeByServerID(sid)
	}

	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	require.NoError(t, err)
	id0, node := where(tx)
	assert.Equal(t, "primary", node)
	for range 5 {
		id, node := where(tx)
		assert.Equal(t, id0, id, "transaction moved to another connection")
		assert.Equal(t, "primary", node)
	}
	var iso string
	require.NoError(t, tx.QueryRowContext(ctx, "SELECT @@tx_isolation").Scan(&iso))
	require.NoError(t, tx.Commit())
	// The level was set for that transaction only, on the primary.
	assert.Equal(t, "REPEATABLE-READ", iso)

	// A SQL-level prepared statement lives on one server connection: it
	// pins the session there.
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "PREPARE s FROM 'SELECT 42, @@server_id, CONNECTION_ID()'")
	require.NoError(t, err)
	var v int
	var sid, connID, firstID int64
	for i := range 5 {
		require.NoError(t, conn.QueryRowContext(ctx, "EXECUTE s").Scan(&v, &sid, &connID))
		assert.Equal(t, 42, v)
		assert.Equal(t, "primary", l.NodeByServerID(sid))
		if i == 0 {
			firstID = connID
		}
		assert.Equal(t, firstID, connID, "pinned session moved to another connection")
	}
	require.NoError(t, conn.Close())

	// By default (rwshard.resetSession) the next user of the logical
	// connection starts afresh: database/sql promises no affinity between
	// one use of the pool and the next.
	db.SetMaxIdleConns(1)
	_, err = db.ExecContext(ctx, "EXECUTE s")
	assert.Equal(t, uint16(1243), serverErr(err), "the prepared statement did not reach the next user: %v", err)

	// rwshard.resetSession=false: as with go-sql-driver, the session stays
	// with the logical connection when it goes back to the pool: the next
	// user of that connection (the pool has one idle) sees it, on the same
	// server connection.
	kdb := openLab(t, l, "rwshard.resetSession=false")
	kdb.SetMaxIdleConns(1)
	kc, err := kdb.Conn(ctx)
	require.NoError(t, err)
	_, err = kc.ExecContext(ctx, "PREPARE s FROM 'SELECT 42, CONNECTION_ID()'")
	require.NoError(t, err)
	require.NoError(t, kc.QueryRowContext(ctx, "EXECUTE s").Scan(&v, &firstID))
	require.NoError(t, kc.Close())
	var again int64
	require.NoError(t, kdb.QueryRowContext(ctx, "EXECUTE s").Scan(&v, &again))
	assert.Equal(t, 42, v, "the session carried over, as on one go-sql-driver connection")
	assert.Equal(t, firstID, again)
}

// LAST_INSERT_ID() on a *sql.Conn sees that connection's insert, also
// when many connections insert at once.
func TestLabLastInsertID(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS auto (id BIGINT AUTO_INCREMENT PRIMARY KEY, w INT)")
	db := openLab(t, l, "")
	var wg sync.WaitGroup
	errs := make(chan error, 8*20)
	for w := range 8 {
		wg.Go(func() {
			for range 20 {
				conn, err := db.Conn(ctx)
				if err != nil {
					errs <- err
					return
				}
				res, err := conn.ExecContext(ctx, "INSERT INTO auto (w) VALUES (?)", w)
				if err != nil {
					errs <- err
					conn.Close()
					return
				}
				want, _ := res.LastInsertId()
				var got int64
				if err := conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&got); err != nil {
					errs <- err
				} else if got != want {
					errs <- fmt.Errorf("LAST_INSERT_ID() = %d, insert said %d", got, want)
				}
				conn.Close()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestLabTemporaryTableAndLocks(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	db := openLab(t, l, "")

	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "CREATE TEMPORARY TABLE scratch (n INT)")
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "INSERT INTO scratch VALUES (1), (2), (3)")
	require.NoError(t, err)
	var n int
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM scratch").Scan(&n))
	assert.Equal(t, 3, n)

	// GET_LOCK is held by the session across statements.
	var got int
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT GET_LOCK('rwshard-test', 0)").Scan(&got))
	require.Equal(t, 1, got)
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT IS_USED_LOCK('rwshard-test') = CONNECTION_ID()").Scan(&got))
	assert.Equal(t, 1, got, "the lock is not held by this session's connection")
	other, err := db.Conn(ctx)
	require.NoError(t, err)
	defer other.Close()
	require.NoError(t, other.QueryRowContext(ctx, "SELECT GET_LOCK('rwshard-test', 0)").Scan(&got))
	assert.Equal(t, 0, got, "another session took a held lock")
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK('rwshard-test')").Scan(&got))
	assert.Equal(t, 1, got)
}

// Text transactions and autocommit=0 keep the session on its connection
// until they end.
func TestLabTextTransactions(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS texttx (id INT PRIMARY KEY)", "DELETE FROM texttx")
	db := openLab(t, l, "")
	count := func() (n int) {
		require.NoError(t, direct(t, l.Primary(), "").QueryRowContext(ctx, "SELECT COUNT(*) FROM texttx").Scan(&n))
		return n
	}

	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "INSERT INTO texttx VALUES (1)")
	require.NoError(t, err)
	var n int
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM texttx").Scan(&n))
	assert.Equal(t, 1, n, "the read inside the transaction did not see its own insert")
	_, err = conn.ExecContext(ctx, "ROLLBACK")
	require.NoError(t, err)
	assert.Equal(t, 0, count())

	_, err = conn.ExecContext(ctx, "SET autocommit = 0")
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, "INSERT INTO texttx VALUES (2)")
	require.NoError(t, err)
	assert.Equal(t, 0, count(), "uncommitted row visible")
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM texttx").Scan(&n))
	assert.Equal(t, 1, n, "autocommit=0 session read left its connection")
	_, err = conn.ExecContext(ctx, "COMMIT")
	require.NoError(t, err)
	assert.Equal(t, 1, count())
	_, err = conn.ExecContext(ctx, "SET autocommit = 1")
	require.NoError(t, err)
}

// A prepared read is prepared once per backend connection, then costs one
// round trip per execution; so is a parameterized query without Prepare.
func TestLabPreparedReuse(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS prep (id INT PRIMARY KEY, v VARCHAR(10))",
		"REPLACE INTO prep VALUES (1, 'one'), (2, 'two')")
	db := openLab(t, l, "")
	db.SetMaxOpenConns(1) // one logical connection: one backend per replica

	prepares := func() (n int64) {
		for _, r := range l.Replicas() {
			n += statusCounter(t, r, "Com_stmt_prepare")
		}
		return n
	}
	executes := func() (n int64) {
		for _, r := range l.Replicas() {
			n += statusCounter(t, r, "Com_stmt_execute")
		}
		return n
	}
	p0, e0 := prepares(), executes()
	st, err := db.PrepareContext(ctx, "SELECT v FROM prep WHERE id = ?")
	require.NoError(t, err)
	defer st.Close()
	const runs = 50
	for i := range runs {
		var v string
		require.NoError(t, st.QueryRowContext(ctx, 1+i%2).Scan(&v))
		assert.Equal(t, []string{"one", "two"}[i%2], v)
		require.NoError(t, db.QueryRowContext(ctx, "SELECT v FROM prep WHERE id = ? AND ? > 0", 1, i+1).Scan(&v))
	}
	p1, e1 := prepares(), executes()
	assert.Equal(t, int64(2*runs), e1-e0, "executions")
	// Two statements, each prepared once on each replica's connection.
	assert.LessOrEqual(t, p1-p0, int64(4), "statements were prepared again per execution")
	assert.GreaterOrEqual(t, p1-p0, int64(2))
}

// One prepared statement, used as go-tpc and most applications use one
// (prepared once on a *sql.Conn, run in autocommit, inside a transaction
// open on that connection, and after it, with and without a context
// hint), runs where its text would every time: the statement remembers
// its routing decision per connection state. As the user with GRANT ALL
// ON app.* only; each answer is the server's own @@server_id.
func TestLabPreparedStatementFollowsState(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	db := openWithT(t, rwshard.DriverName, labtest.PlainDSN(l, ""))
	labtest.WaitReady(t, db)
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	read, err := conn.PrepareContext(ctx, "SELECT @@server_id FROM DUAL WHERE ? = 1")
	require.NoError(t, err)
	locking, err := conn.PrepareContext(ctx, "SELECT @@server_id FROM DUAL WHERE ? = 1 FOR UPDATE")
	require.NoError(t, err)
	on := func(ctx context.Context, st *sql.Stmt) string {
		t.Helper()
		var id int64
		require.NoError(t, st.QueryRowContext(ctx, 1).Scan(&id))
		return l.NodeByServerID(id)
	}
	primary := l.Primary().Name
	replica := func(name string) bool { return name != primary && name != "" }
	for round := range 2 {
		assert.True(t, replica(on(ctx, read)), "round %d: a read in autocommit", round)
		assert.Equal(t, primary, on(hint.Primary(ctx), read), "round %d: hinted to the primary", round)
		assert.True(t, replica(on(ctx, read)), "round %d: the hint does not stay", round)
		assert.Equal(t, primary, on(ctx, locking), "round %d: a locking read", round)
		tx, err := conn.BeginTx(ctx, nil)
		require.NoError(t, err)
		assert.Equal(t, primary, on(ctx, read), "round %d: in a transaction", round)
		assert.Equal(t, primary, on(hint.Replica(ctx), read), "round %d: a hint cannot take it out of the transaction", round)
		require.NoError(t, tx.Commit())
	}
}

// A million-row result streams: the live heap does not grow with the rows.
func TestLabStreamsLargeResults(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, 2*time.Minute)
	db := openLab(t, l, "")
	liveHeap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	rows, err := db.QueryContext(ctx, "SELECT seq, REPEAT('x', 32) FROM seq_1_to_1000000")
	require.NoError(t, err)
	defer rows.Close()
	base := liveHeap()
	var peak uint64
	var n, sum int64
	var pad []byte
	for rows.Next() {
		var seq int64
		require.NoError(t, rows.Scan(&seq, &pad))
		n++
		sum += seq
		if n%200_000 == 0 {
			peak = max(peak, liveHeap())
		}
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, int64(1_000_000), n)
	assert.Equal(t, int64(1_000_000*1_000_001/2), sum)
	growth := int64(peak) - int64(base)
	t.Logf("live heap: %d KiB at start, peak %d KiB while streaming 1M rows", base>>10, peak>>10)
	// Buffering the rows would take well over 40 MB.
	assert.Less(t, growth, int64(8<<20), "live heap grew by %d bytes", growth)
}
