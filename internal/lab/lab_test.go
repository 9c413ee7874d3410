package lab_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

var shared = labtest.NewShared(lab.RW())

func TestMain(m *testing.M) { labtest.Main(m, shared) }

// appDB opens the node as the application user.
func appDB(t testing.TB, n *lab.Node, params string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", n.DSN(params))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// whereRan returns the node a query ran on, by @@server_id.
func whereRan(t testing.TB, l *lab.Lab, db *sql.DB) string {
	t.Helper()
	var id int64
	require.NoError(t, db.QueryRow("SELECT @@server_id").Scan(&id))
	return l.NodeByServerID(id)
}

func TestStartTime(t *testing.T) {
	begin := time.Now()
	l := labtest.Fresh(t, lab.RW())
	took := time.Since(begin)
	t.Logf("rw lab (1 primary + 2 replicas) up and replicating in %s", took.Round(100*time.Millisecond))
	require.Len(t, l.Nodes(), 3)
	for _, n := range l.Nodes() {
		assert.Equal(t, n.Name, whereRan(t, l, appDB(t, n, "")))
	}
}

func TestReplicationFlows(t *testing.T) {
	l := shared.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	p := appDB(t, l.Primary(), "")
	_, err := p.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS flows (id INT PRIMARY KEY, v VARCHAR(20))")
	require.NoError(t, err)
	_, err = p.ExecContext(ctx, "REPLACE INTO flows VALUES (1, 'hello')")
	require.NoError(t, err)
	require.NoError(t, l.Sync(ctx, 10*time.Second))
	for _, r := range l.Replicas() {
		db := appDB(t, r, "")
		var v string
		require.NoError(t, db.QueryRowContext(ctx, "SELECT v FROM flows WHERE id = 1").Scan(&v), r.Name)
		assert.Equal(t, "hello", v, r.Name)
		assert.Equal(t, r.Name, whereRan(t, l, db))
	}
}

func TestReplicaRejectsAppWrites(t *testing.T) {
	l := shared.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	_, err := appDB(t, l.Primary(), "").ExecContext(ctx, "CREATE TABLE IF NOT EXISTS ro (id INT PRIMARY KEY)")
	require.NoError(t, err)
	require.NoError(t, l.Sync(ctx, 10*time.Second))
	for _, r := range l.Replicas() {
		_, err := appDB(t, r, "").ExecContext(ctx, "INSERT INTO ro VALUES (1)")
		var me *mysql.MySQLError
		require.True(t, errors.As(err, &me), "%s accepted a write: %v", r.Name, err)
		assert.EqualValues(t, 1290, me.Number, r.Name)
	}
}

func TestLagMakesReplicaStale(t *testing.T) {
	l := shared.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	p := appDB(t, l.Primary(), "")
	_, err := p.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS lagged (id INT PRIMARY KEY)")
	require.NoError(t, err)
	_, err = p.ExecContext(ctx, "DELETE FROM lagged") // the test may run twice on one lab
	require.NoError(t, err)
	require.NoError(t, l.Sync(ctx, 10*time.Second))

	slow, fast := l.Replicas()[0], l.Replicas()[1]
	require.NoError(t, l.Lag(ctx, slow, 3*time.Second))
	t.Cleanup(func() { _ = l.Lag(context.Background(), slow, 0) })

	_, err = p.ExecContext(ctx, "INSERT INTO lagged VALUES (1)")
	require.NoError(t, err)
	count := func(n *lab.Node) (c int) {
		require.NoError(t, appDB(t, n, "").QueryRowContext(ctx, "SELECT COUNT(*) FROM lagged").Scan(&c))
		return c
	}
	// The undelayed replica gets the row; the delayed one does not, yet.
	require.Eventually(t, func() bool { return count(fast) == 1 }, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, 0, count(slow), "delayed replica already has the row")
	// And it arrives once the delay has passed.
	require.Eventually(t, func() bool { return count(slow) == 1 }, 15*time.Second, 100*time.Millisecond)
}

func TestStopReplication(t *testing.T) {
	l := shared.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	r := l.Replicas()[1]
	require.NoError(t, l.StopReplication(ctx, r))
	var io, sqlRunning string
	scanStatus(t, r, &io, &sqlRunning)
	assert.Equal(t, "No", io)
	assert.Equal(t, "No", sqlRunning)
	require.NoError(t, l.StartReplication(ctx, r))
	require.NoError(t, l.StopSQLThread(ctx, r))
	scanStatus(t, r, &io, &sqlRunning)
	assert.Equal(t, "No", sqlRunning)
	require.NoError(t, l.StartReplication(ctx, r))
	require.NoError(t, l.Sync(ctx, 10*time.Second))
}

// scanStatus reads the replication thread states of n.
func scanStatus(t testing.TB, n *lab.Node, io, sqlRunning *string) {
	t.Helper()
	rows, err := n.Admin().Query("SHOW SLAVE STATUS")
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	require.True(t, rows.Next(), "%s is not a replica", n.Name)
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	require.NoError(t, rows.Scan(ptrs...))
	for i, c := range cols {
		switch c {
		case "Slave_IO_Running":
			*io = string(vals[i])
		case "Slave_SQL_Running":
			*sqlRunning = string(vals[i])
		}
	}
}

func TestKillRestart(t *testing.T) {
	l := shared.Get(t)
	ctx := labtest.Ctx(t, 2*time.Minute)
	p := appDB(t, l.Primary(), "")
	_, err := p.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS crash (id INT PRIMARY KEY)")
	require.NoError(t, err)
	victim := l.Replicas()[0]
	require.NoError(t, l.Kill(victim))
	assert.False(t, victim.Running())
	db := appDB(t, victim, "timeout=1s")
	require.Error(t, db.PingContext(ctx), "a killed node still answers")

	// Writes made while it is down reach it after the restart.
	_, err = p.ExecContext(ctx, "REPLACE INTO crash VALUES (1), (2), (3)")
	require.NoError(t, err)
	require.NoError(t, l.Restart(ctx, victim))
	require.NoError(t, l.Sync(ctx, 20*time.Second))
	var c int
	require.NoError(t, appDB(t, victim, "").QueryRowContext(ctx, "SELECT COUNT(*) FROM crash").Scan(&c))
	assert.Equal(t, 3, c)
}

func TestPauseResume(t *testing.T) {
	l := shared.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	r := l.Replicas()[1]
	db := appDB(t, r, "readTimeout=500ms")
	require.NoError(t, db.PingContext(ctx))
	require.NoError(t, l.Pause(r))
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = l.Resume(r)
		}
	})
	var one int
	err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
	require.Error(t, err, "a paused node answered")
	require.NoError(t, l.Resume(r))
	resumed = true
	require.Eventually(t, func() bool { return db.QueryRowContext(ctx, "SELECT 1").Scan(&one) == nil },
		10*time.Second, 50*time.Millisecond)
}

func TestBlackholeTimesOut(t *testing.T) {
	b, err := lab.NewBlackhole()
	require.NoError(t, err)
	defer b.Close()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = "app", "x", "tcp", b.Addr()
	const timeout = 300 * time.Millisecond
	// go-sql-driver's timeout bounds only the TCP dial, which succeeds
	// here; the handshake read is bounded by the context alone. The bound a
	// caller sets is the context deadline.
	cfg.Timeout = timeout
	c, err := mysql.NewConnector(cfg)
	require.NoError(t, err)
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	_, err = c.Connect(ctx)
	gaveUp := time.Now()
	took := gaveUp.Sub(begin)
	require.Error(t, err)
	var ne net.Error
	timedOut := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
	require.True(t, timedOut, "want a timeout, got %v", err)
	// Against the context's own deadline: a clock started after it (as
	// this test once did) can read less than the timeout.
	assert.False(t, gaveUp.Before(deadline), "gave up %v before the deadline", deadline.Sub(gaveUp))
	// Generous upper bound: the point is that it does not hang.
	assert.Less(t, took, 10*timeout, "hung past the timeout")
	assert.Equal(t, 1, b.Accepted(), "the TCP connection was accepted")
}

func TestSwitchover(t *testing.T) {
	l := labtest.Fresh(t, lab.RW())
	ctx := labtest.Ctx(t, 2*time.Minute)
	oldPrimary, newPrimary := l.Primary(), l.Replicas()[1]
	_, err := appDB(t, oldPrimary, "").ExecContext(ctx, "CREATE TABLE sw (id INT PRIMARY KEY, at VARCHAR(20))")
	require.NoError(t, err)
	_, err = appDB(t, oldPrimary, "").ExecContext(ctx, "INSERT INTO sw VALUES (1, 'before')")
	require.NoError(t, err)

	require.NoError(t, l.Switchover(ctx, newPrimary))
	require.Equal(t, newPrimary, l.Primary())

	// Exactly one node accepts the application user's writes.
	var writable []string
	for i, n := range l.Nodes() {
		_, err := appDB(t, n, "").ExecContext(ctx, fmt.Sprintf("INSERT INTO sw VALUES (%d, 'after')", 10+i))
		if err == nil {
			writable = append(writable, n.Name)
			continue
		}
		var me *mysql.MySQLError
		require.True(t, errors.As(err, &me), "%s: %v", n.Name, err)
		require.EqualValues(t, 1290, me.Number, n.Name)
	}
	require.Equal(t, []string{newPrimary.Name}, writable)

	// Replication flows from the new primary to every other node.
	require.NoError(t, l.Sync(ctx, 20*time.Second))
	for _, n := range l.Nodes() {
		var c int
		require.NoError(t, appDB(t, n, "").QueryRowContext(ctx, "SELECT COUNT(*) FROM sw").Scan(&c))
		assert.Equal(t, 2, c, n.Name)
	}
}

func TestShardedTopology(t *testing.T) {
	l := labtest.Fresh(t, lab.Sharded())
	ctx := labtest.Ctx(t, time.Minute)
	require.Len(t, l.Groups, 2)
	for _, g := range l.Groups {
		require.Len(t, g.Nodes, 2, g.Name)
		_, err := appDB(t, g.Primary(), "").ExecContext(ctx, "CREATE TABLE owner (g VARCHAR(10))")
		require.NoError(t, err)
		_, err = appDB(t, g.Primary(), "").ExecContext(ctx, "INSERT INTO owner VALUES (?)", g.Name)
		require.NoError(t, err)
	}
	require.NoError(t, l.Sync(ctx, 10*time.Second))
	// Each group replicates only its own primary's rows.
	for _, g := range l.Groups {
		for _, n := range g.Nodes {
			var owners []string
			rows, err := appDB(t, n, "").QueryContext(ctx, "SELECT g FROM owner")
			require.NoError(t, err)
			for rows.Next() {
				var s string
				require.NoError(t, rows.Scan(&s))
				owners = append(owners, s)
			}
			require.NoError(t, rows.Err())
			assert.Equal(t, []string{g.Name}, owners, n.Name)
			assert.Equal(t, n.Name, whereRan(t, l, appDB(t, n, "")))
		}
	}
}

// A new node whose port another process binds between the port's check
// and mariadbd's start comes up on another port.
func TestStartPortTaken(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer held.Close()
	taken := held.Addr().(*net.TCPAddr).Port
	var picks atomic.Int32
	defer lab.SetPickPort(func() (int, error) {
		if picks.Add(1) == 1 {
			return taken, nil
		}
		return lab.FreePort()
	})()
	l := labtest.Fresh(t, lab.Options{Replicas: 0})
	p := l.Primary()
	assert.True(t, p.Port != taken, "the primary kept the taken port %d", taken)
	assert.Equal(t, int32(2), picks.Load(), "ports chosen")
	var id int64
	require.NoError(t, appDB(t, p, "").QueryRowContext(labtest.Ctx(t, time.Minute), "SELECT @@server_id").Scan(&id))
	assert.Equal(t, int64(1), id)
}
