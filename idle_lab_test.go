package rwshard_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// Servers with wait_timeout=3 and bursts of traffic separated by quiet
// gaps longer than it: no statement fails, and the pools close their idle
// connections before the servers do (no "Aborted connection … Got
// timeout reading" of the application user in the servers' error logs,
// which a connection left idle past wait_timeout produces).
// The capped rwshard.connMaxIdleTime (1m by default) is reported once per
// node.
//
// Without db.SetConnMaxIdleTime the 2 logical connections database/sql
// keeps idle by default hold a primary connection each through the gaps:
// the server closes those, and their liveness check on reuse drops them
// (statements still do not fail).
func TestIdleConnectionsCloseBeforeWaitTimeout(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, 3*time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS app.idle_burst (id BIGINT AUTO_INCREMENT PRIMARY KEY, v INT)")

	// The servers' settings and counters through connections opened
	// before wait_timeout changes, held to the end: their sessions keep
	// the old value, and no admin connection of the test idles out.
	nodes := l.Nodes()
	admins := make([]*sql.Conn, len(nodes))
	for i, n := range nodes {
		c, err := n.Admin().Conn(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		var old int
		require.NoError(t, c.QueryRowContext(ctx, "SELECT @@global.wait_timeout").Scan(&old))
		_, err = c.ExecContext(ctx, "SET GLOBAL wait_timeout = 3")
		require.NoError(t, err)
		t.Cleanup(func() {
			_, err := c.ExecContext(context.Background(), fmt.Sprintf("SET GLOBAL wait_timeout = %d", old))
			assert.NoError(t, err, "restore wait_timeout on %s", n.Name)
		})
		admins[i] = c
	}
	aborted := func() []int64 {
		out := make([]int64, len(admins))
		for i, c := range admins {
			var k string
			require.NoError(t, c.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Aborted_clients'").Scan(&k, &out[i]))
		}
		return out
	}
	// Aborted_clients counts every client that went without COM_QUIT,
	// other tests' too; the servers' error logs say which were the
	// application user's connections closed at wait_timeout.
	timedOut := func() []int {
		out := make([]int, len(nodes))
		for i, n := range nodes {
			b, err := os.ReadFile(filepath.Join(n.Dir, "error.log"))
			require.NoError(t, err)
			for _, line := range strings.Split(string(b), "\n") {
				if strings.Contains(line, "Aborted connection") && strings.Contains(line, "user: '"+lab.AppUser+"'") &&
					strings.Contains(line, "Got timeout reading") {
					out[i]++
				}
			}
		}
		return out
	}
	timedOutBefore := timedOut()
	before := aborted()

	cn, db, logs := loggedDB(t, labDSN(l, ""))
	// A logical connection idle in database/sql's pool keeps the primary
	// connection it last used, as a go-sql-driver connection would be
	// kept (docs/performance.md): database/sql's own idle limit bounds it.
	db.SetConnMaxIdleTime(time.Second)
	require.NoError(t, cn.Ready(ctx))

	// 5 bursts of 16 clients × 20 statements (a write, then a read),
	// each followed by 4.5 s of silence: every connection a burst opened
	// sits idle past the servers' wait_timeout before the next.
	var stmts, failed atomic.Int64
	var firstErr atomic.Value
	begin := time.Now()
	for burst := range 5 {
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Go(func() {
				for i := range 20 {
					var err error
					if i%2 == 0 {
						_, err = db.ExecContext(ctx, "INSERT INTO app.idle_burst (v) VALUES (?)", burst*1000+w)
					} else {
						var n int
						err = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM app.idle_burst WHERE v = ?", w).Scan(&n)
					}
					stmts.Add(1)
					if err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err)
					}
				}
			})
		}
		wg.Wait()
		time.Sleep(4500 * time.Millisecond) // the quiet gap under test
	}
	took := time.Since(begin)

	var idleClosed, opened int64
	for _, n := range cn.Stats().Nodes {
		idleClosed += n.Pool.MaxIdleTimeClosed
		opened += int64(n.Pool.OpenConnections)
	}
	after, timedOutAfter := aborted(), timedOut()
	t.Logf("%d statements in 5 bursts over %s: %d failed; pools closed %d idle connections, %d open at the end; "+
		"Aborted_clients before %v, after %v; the application user's connections closed at wait_timeout before %v, after %v",
		stmts.Load(), took.Round(time.Millisecond), failed.Load(), idleClosed, opened, before, after, timedOutBefore, timedOutAfter)
	assert.Zero(t, failed.Load(), "statements failed; first: %v", firstErr.Load())
	assert.Positive(t, idleClosed, "the pools closed idle connections themselves")
	for i, n := range nodes {
		assert.Equal(t, timedOutBefore[i], timedOutAfter[i], "%s closed connections at wait_timeout", n.Name)
	}

	reports := strings.Count(logs.String(), "closed sooner than rwshard.connMaxIdleTime")
	seen := map[string]bool{}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "closed sooner than rwshard.connMaxIdleTime") {
			assert.Contains(t, line, "wait_timeout=3s")
			assert.Contains(t, line, "idle_limit=2s")
			for _, n := range nodes {
				if strings.Contains(line, "node="+n.Name+" ") {
					assert.False(t, seen[n.Name], "reported twice for %s:\n%s", n.Name, logs.String())
					seen[n.Name] = true
				}
			}
		}
	}
	assert.Positive(t, reports, "the cap was reported:\n%s", logs.String())
	assert.Equal(t, reports, len(seen), "one report per node:\n%s", logs.String())

	// The measure can fail: a go-sql-driver pool without an idle limit
	// leaves its connection to the server's wait_timeout, which counts it.
	ctl := labtest.Direct(t, l.Primary(), "")
	ctl.SetConnMaxIdleTime(0)
	require.NoError(t, ctl.PingContext(ctx))
	deadline := time.Now().Add(30 * time.Second)
	for timedOut()[0] == timedOutAfter[0] || aborted()[0] == after[0] {
		require.True(t, time.Now().Before(deadline), "neither the error log nor Aborted_clients saw a connection left idle past wait_timeout")
		time.Sleep(200 * time.Millisecond)
	}
}

// Idle connections of the pool that the server closed anyway (killed
// here) are dropped at checkout by go-sql-driver's liveness check: no
// statement gets one.
func TestIdlePoolConnectionsClosedByServerAreNotUsed(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	cn, db, logs := loggedDB(t, labDSN(l, "rwshard.driverLog=slog"))
	db.SetMaxIdleConns(0) // every logical connection gives its backend connection back to the pool
	require.NoError(t, cn.Ready(ctx))

	const n = 6
	txs := make([]*sql.Tx, n)
	ids := make([]int64, n)
	for i := range txs {
		var err error
		txs[i], err = db.BeginTx(ctx, nil)
		require.NoError(t, err)
		require.NoError(t, txs[i].QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&ids[i]))
	}
	for _, tx := range txs {
		require.NoError(t, tx.Commit())
	}
	admin := l.Primary().Admin()
	for _, id := range ids {
		_, err := admin.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		var left int
		require.NoError(t, admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID IN ("+
			strings.Trim(strings.Join(strings.Fields(fmt.Sprint(ids)), ","), "[]")+")").Scan(&left))
		return left == 0
	}, 10*time.Second, 20*time.Millisecond, "the killed connections are gone")

	var failed atomic.Int64
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			for i := range 10 {
				tx, err := db.BeginTx(ctx, nil)
				if err == nil {
					_, err = tx.ExecContext(ctx, "DO ?", w*10+i)
					if err == nil {
						err = tx.Commit()
					} else {
						tx.Rollback()
					}
				}
				if err != nil {
					failed.Add(1)
					t.Log(err)
				}
			}
		})
	}
	wg.Wait()
	dropped := strings.Count(logs.String(), "closing bad idle connection")
	t.Logf("%d idle connections killed; %d found dead at checkout and dropped; %d of %d transactions failed", n, dropped, failed.Load(), n*10)
	assert.Zero(t, failed.Load())
	assert.Positive(t, dropped, "the killed connections were met at checkout:\n%s", logs.String())
}

// loggedDB opens dsn with rwshard's log in logs, closed when the test
// ends.
func loggedDB(t testing.TB, dsn string) (*rwshard.Connector, *sql.DB, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg, err := rwshard.ParseDSN(dsn)
	require.NoError(t, err)
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	cn, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(cn)
	t.Cleanup(func() { db.Close() })
	return cn, db, logs
}
