package rwshard_test

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// staleReads writes rows with write and reads each back at once through
// db, n times; it returns the reads that did not find their row and
// those a replica served.
func staleReads(t *testing.T, l *lab.Lab, db *sql.DB, n int, write func(ctx context.Context, id int) error) (stale, onReplica int) {
	t.Helper()
	ctx := labtest.Ctx(t, 2*time.Minute)
	for id := 1; id <= n; id++ {
		require.NoError(t, write(ctx, id))
		var found, sid int64
		require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*), @@server_id FROM scope52 WHERE id = ?", id).Scan(&found, &sid))
		if found == 0 {
			stale++
		}
		if sid != int64(l.Primary().ServerID) {
			onReplica++
		}
	}
	return stale, onReplica
}

// Every handle a process opens on a cluster reads the writes of the
// others, as a second gorm.Open or a migration tool beside the service
// expects: they share one read-your-writes scope, found by the primary's
// identity and not by the DSN's text (the third handle's differs). Before,
// most reads through the second handle right after a write through the
// first were stale, with the replicas under a millisecond behind.
func TestLabHandlesShareTheirScope(t *testing.T) {
	l := rwLab.Get(t)
	setup(t, l, "CREATE TABLE IF NOT EXISTS scope52 (id INT PRIMARY KEY)", "TRUNCATE scope52")
	dsn := labtest.PlainDSN(l, "")
	first, err := sql.Open(rwshard.DriverName, dsn)
	require.NoError(t, err)
	defer first.Close()
	second, err := sql.Open(rwshard.DriverName, dsn)
	require.NoError(t, err)
	defer second.Close()
	third, err := sql.Open(rwshard.DriverName, labtest.PlainDSN(l, "rwshard.probeInterval=500ms&parseTime=true"))
	require.NoError(t, err)
	defer third.Close()

	write := func(ctx context.Context, id int) error {
		_, err := first.ExecContext(ctx, "INSERT INTO scope52 VALUES (?)", id)
		return err
	}
	stale, onReplica := staleReads(t, l, second, 300, write)
	assert.Equal(t, 0, stale, "stale reads through the second handle")
	t.Logf("second handle: %d of 300 reads on a replica", onReplica)

	setup(t, l, "TRUNCATE scope52")
	stale, _ = staleReads(t, l, third, 100, write)
	assert.Equal(t, 0, stale, "stale reads through a handle with another DSN")
}

// ConsistencyUniversal: a read sees every write acknowledged before it
// began, by any program. The writer here is go-sql-driver on the primary
// alone, as another service would be; the replicas apply two seconds
// late. Causal reads through rwshard know nothing of those writes: those a
// replica serves read stale rows. Universal reads wait for the primary's
// position on a replica, or go to the primary, and find each row.
func TestLabUniversalSeesOtherWriters(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, 2*time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS scope52 (id INT PRIMARY KEY)", "TRUNCATE scope52")
	other, err := sql.Open("mysql", l.Primary().DSN(""))
	require.NoError(t, err)
	defer other.Close()
	id := 0
	write := func(ctx context.Context, _ int) error {
		id++
		_, err := other.ExecContext(ctx, "INSERT INTO scope52 VALUES (?)", id)
		return err
	}
	read := func(db *sql.DB, n int) (stale, onReplica int) {
		for range n {
			require.NoError(t, write(ctx, 0))
			var found, sid int
			require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*), @@server_id FROM scope52 WHERE id = ?", id).Scan(&found, &sid))
			if found == 0 {
				stale++
			}
			if sid != l.Primary().ServerID {
				onReplica++
			}
		}
		return stale, onReplica
	}
	universal := labtest.OpenPlain(t, l, "rwshard.consistency=universal")
	causal := labtest.OpenPlain(t, l, "")

	stale, _ := read(universal, 300)
	assert.Equal(t, 0, stale, "universal reads right after another program's writes, replicas current")

	require.NoError(t, l.Sync(ctx, 10*time.Second))
	for _, r := range l.Replicas() {
		// Two seconds: far more than a read is from its write, so a read
		// a replica serves cannot have the row unless the delay failed.
		require.NoError(t, l.Lag(ctx, r, 2*time.Second))
		t.Cleanup(func() { _ = l.Lag(context.Background(), r, 0) })
	}
	stale, _ = read(universal, 10)
	assert.Equal(t, 0, stale, "universal reads with the replicas behind")
	stale, onReplica := read(causal, 10)
	assert.Positive(t, onReplica, "causal reads on the replicas")
	assert.Equal(t, onReplica, stale, "causal reads with the replicas behind: the other program's writes are not the scope's, so each replica read misses its row (routes %v)",
		routesOf(t, causal))
}

// Universal reads that arrive together share the primary's position: at
// 32 readers the primary sees far fewer position queries than reads.
func TestLabUniversalSharesPositionFetches(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	cfg, err := rwshard.ParseDSN(labtest.PlainDSN(l, "rwshard.consistency=universal"))
	require.NoError(t, err)
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(c)
	defer db.Close()
	var reads atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 50 {
				var one int
				if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
					t.Errorf("read: %v", err)
					return
				}
				reads.Add(1)
			}
		})
	}
	wg.Wait()
	fetches := int64(c.Stats().PositionQueries)
	t.Logf("%d position queries for %d reads", fetches, reads.Load())
	assert.True(t, fetches > 0 && fetches*2 < reads.Load(), "%d position queries for %d reads", fetches, reads.Load())
}

// A process's scope of a cluster lives while a connector uses it: once
// every handle on the cluster is closed, the next one starts empty, so a
// cluster rebuilt at the same address (a lab on the same ports, a
// container recreated) does not inherit GTIDs it will never reach.
func TestLabScopeEndsWithItsConnectors(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS scope52 (id INT PRIMARY KEY)", "TRUNCATE scope52")
	consistency := func(db *sql.DB) string {
		t.Helper()
		p, err := rwshard.Explain(ctx, db, "SELECT id FROM scope52")
		require.NoError(t, err)
		return p.Consistency
	}
	// The primary behind a proxy of this test's own: an address, and so a
	// scope, no other test's handle shares.
	hosts := []string{"tcp(" + labtest.Proxy(t, l.Primary().Addr()).Addr() + ")"}
	for _, r := range l.Replicas() {
		hosts = append(hosts, "tcp("+r.Addr()+")")
	}
	dsn := lab.PlainUser + ":" + lab.PlainPassword + "@" + strings.Join(hosts, ",") + "/" + lab.AppDatabase
	open := func() *sql.DB {
		db, err := sql.Open(rwshard.DriverName, dsn)
		require.NoError(t, err)
		labtest.WaitReady(t, db)
		return db
	}
	first, second := open(), open()
	_, err := first.ExecContext(ctx, "INSERT INTO scope52 VALUES (1)")
	require.NoError(t, err)
	assert.Contains(t, consistency(second), "replicas that applied GTID", "the second handle shares the first's write")
	require.NoError(t, first.Close())
	assert.Contains(t, consistency(second), "replicas that applied GTID", "a handle still open keeps the scope")
	require.NoError(t, second.Close())

	third := open()
	defer third.Close()
	assert.Contains(t, consistency(third), "no write in this session", "a scope no connector uses is gone")
}
