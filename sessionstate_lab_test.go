package rwshard_test

import (
	"database/sql"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Session state that does not drag reads onto the primary, tested as a
// new user would meet it: a plain *sql.DB, default settings, the user with
// GRANT ALL ON app.* only. Each of these statements moved every later read
// of a pooled logical connection to the primary for good.
var stateStatements = []struct {
	name, sql string
	query     bool
}{
	{"user variable from a SELECT", "SELECT @x := 1", true},
	{"named lock", "SELECT GET_LOCK('rw49', 1)", true},
	{"user variable SET", "SET @a = 1", false},
	{"sql_mode from an expression", "SET sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')", false},
	{"temporary table", "CREATE TEMPORARY TABLE IF NOT EXISTS tmp49 (a INT)", false},
}

// readsOnPrimary runs n reads of @@server_id in each of g goroutines and
// counts those the primary served.
func readsOnPrimary(t *testing.T, db *sql.DB, primaryID int64, g, n int) (primary int64) {
	t.Helper()
	ctx := labtest.Ctx(t, time.Minute)
	var count atomic.Int64
	var wg sync.WaitGroup
	for range g {
		wg.Go(func() {
			for range n {
				var id int64
				if err := db.QueryRowContext(ctx, "SELECT @@server_id").Scan(&id); err != nil {
					t.Errorf("read: %v", err)
					return
				}
				if id == primaryID {
					count.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return count.Load()
}

func TestLabStatementsDoNotPinReads(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, 2*time.Minute)
	for _, s := range stateStatements {
		for _, g := range []int{1, 8} {
			db := labtest.OpenPlain(t, l, "")
			db.SetMaxIdleConns(8)
			if s.query {
				rows, err := db.QueryContext(ctx, s.sql)
				require.NoError(t, err, s.sql)
				require.NoError(t, rows.Close())
			} else {
				_, err := db.ExecContext(ctx, s.sql)
				require.NoError(t, err, s.sql)
			}
			const reads = 400
			got := readsOnPrimary(t, db, int64(l.Primary().ServerID), g, reads/g)
			t.Logf("%s, %d goroutine(s): %d of %d later reads on the primary", s.name, g, got, reads)
			assert.Zero(t, got, "%s, %d goroutine(s): later reads on the primary", s.name, g)
			c, err := rwshard.ConnectorOf(ctx, db)
			require.NoError(t, err)
			assert.Zero(t, c.Stats().Pinned, "%s: no logical connection pinned", s.name)
			require.NoError(t, db.Close())
		}
	}
}

// On a *sql.Conn the state lives as long as the program holds it: a named
// lock stays held, and is released by RELEASE_LOCK or when the connection
// goes back to database/sql's pool; a temporary table answers the
// statements that name it; user variables, set to a value or from an
// expression, and a sql_mode set from an expression are seen by reads on
// the replicas; and the reads go to the replicas all along.
func TestLabSessionStateOnConn(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	db := labtest.OpenPlain(t, l, "")
	other := direct(t, l.Primary(), "")
	used := func(name string) bool {
		var owner sql.NullInt64
		require.NoError(t, other.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", name).Scan(&owner))
		return owner.Valid
	}
	onReplica := func(sc *sql.Conn) {
		t.Helper()
		assert.NotEqual(t, "primary", ranOn(t, l, sc, ctx, "SELECT @@server_id"), "a plain read on a replica")
	}

	sc, err := db.Conn(ctx)
	require.NoError(t, err)
	var got int
	require.NoError(t, sc.QueryRowContext(ctx, "SELECT GET_LOCK('rw49c', 1)").Scan(&got))
	require.Equal(t, 1, got)
	onReplica(sc)
	assert.True(t, used("rw49c"), "the lock is held while the *sql.Conn holds it")
	require.NoError(t, sc.QueryRowContext(ctx, "SELECT RELEASE_LOCK('rw49c')").Scan(&got))
	assert.Equal(t, 1, got, "released by its own connection")
	assert.False(t, used("rw49c"))
	require.NoError(t, sc.QueryRowContext(ctx, "SELECT GET_LOCK('rw49d', 1)").Scan(&got))
	require.NoError(t, sc.Close())
	// As on a go-sql-driver connection, a lock not released stays with the
	// pooled logical connection, which keeps its primary connection; its
	// next user's reads go to the replicas, and its RELEASE_LOCK reaches
	// the lock.
	db.SetMaxIdleConns(1)
	assert.NotEqual(t, "primary", ranOn(t, l, db, ctx, "SELECT @@server_id"))
	assert.True(t, used("rw49d"), "held until released, or until the logical connection is closed")
	require.NoError(t, db.QueryRowContext(ctx, "SELECT RELEASE_LOCK('rw49d')").Scan(&got))
	assert.Equal(t, 1, got)
	assert.False(t, used("rw49d"))

	sc, err = db.Conn(ctx)
	require.NoError(t, err)
	defer sc.Close()
	_, err = sc.ExecContext(ctx, "CREATE TEMPORARY TABLE tmp49c (a INT)")
	require.NoError(t, err)
	_, err = sc.ExecContext(ctx, "INSERT INTO tmp49c VALUES (1), (2)")
	require.NoError(t, err)
	var n int
	require.NoError(t, sc.QueryRowContext(ctx, "SELECT COUNT(*) FROM tmp49c").Scan(&n))
	assert.Equal(t, 2, n, "the temporary table answers on its connection")
	onReplica(sc)

	_, err = sc.ExecContext(ctx, "SET @a = 5, @s = 'x\u00e9'")
	require.NoError(t, err)
	var a int
	var s string
	var id int64
	require.NoError(t, sc.QueryRowContext(ctx, "SELECT @a, @s, @@server_id").Scan(&a, &s, &id))
	assert.Equal(t, 5, a)
	assert.Equal(t, "x\u00e9", s)
	assert.NotEqual(t, "primary", l.NodeByServerID(id))
	var at string
	require.NoError(t, sc.QueryRowContext(ctx, "SELECT @t := CONCAT('at ', UUID())").Scan(&at))
	var seen string
	require.NoError(t, sc.QueryRowContext(ctx, "SELECT @t, @@server_id").Scan(&seen, &id))
	assert.Equal(t, at, seen, "an expression's value, read back and replayed")
	assert.NotEqual(t, "primary", l.NodeByServerID(id))
	_, err = sc.ExecContext(ctx, "SET sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')")
	require.NoError(t, err)
	var mode string
	require.NoError(t, sc.QueryRowContext(ctx, "SELECT @@sql_mode, @@server_id").Scan(&mode, &id))
	assert.Contains(t, mode, "ANSI_QUOTES")
	assert.NotEqual(t, "primary", l.NodeByServerID(id))
}

// With rwshard.resetSession=false the state stays with the pooled
// connection, as go-sql-driver keeps it, and it is visible: Explain says
// the statement pins and where later statements run, Stats counts the
// pinned connection, and an event names the statement that pinned it.
func TestLabKeptPinIsVisible(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	cfg, err := rwshard.ParseDSN(labtest.PlainDSN(l, "rwshard.resetSession=false"))
	require.NoError(t, err)
	log := &eventLog{}
	cfg.Observer = log
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(c)
	defer db.Close()
	db.SetMaxIdleConns(1)
	db.SetMaxOpenConns(1)
	require.NoError(t, c.Ready(ctx))
	plan, err := c.Explain(ctx, "USE app")
	require.NoError(t, err)
	assert.Contains(t, plan.Pins, "every later statement of this connection runs on primary")
	_, err = db.ExecContext(ctx, "USE app")
	require.NoError(t, err)
	assert.Equal(t, "primary", ranOn(t, l, db, ctx, "SELECT @@server_id"), "kept: reads on the primary")
	assert.Equal(t, int64(1), c.Stats().Pinned)
	require.Eventually(t, func() bool { return log.count(health.SessionPinned) > 0 }, 5*time.Second, 10*time.Millisecond)
	for _, e := range log.all() {
		if e.Kind == health.SessionPinned {
			assert.True(t, strings.Contains(e.Detail, "USE app"), "the event names the statement: %s", e.Detail)
		}
	}
}

// Right after sql.Open, 64 goroutines reading at once: the first
// statements wait for the first round of probes (at most
// connectTimeout) instead of reading from the primary as "starting".
func TestLabColdStartReads(t *testing.T) {
	l := rwLab.Get(t)
	db, err := sql.Open(rwshard.DriverName, labtest.PlainDSN(l, ""))
	require.NoError(t, err)
	defer db.Close()
	ctx := labtest.Ctx(t, time.Minute)
	const readers, each = 64, 16 // the first 1,024 reads
	var primary, failed atomic.Int64
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			for range each {
				var id int64
				if err := db.QueryRowContext(ctx, "SELECT @@server_id").Scan(&id); err != nil {
					failed.Add(1)
					continue
				}
				if id == int64(l.Primary().ServerID) {
					primary.Add(1)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("cold start: %d of %d reads on the primary, %d failed", primary.Load(), readers*each, failed.Load())
	assert.Zero(t, failed.Load())
	assert.LessOrEqual(t, primary.Load(), int64(readers*each/100), "at most 1 % on the primary")
}

// Two *sql.Conns with different time zones reading in turn over the same
// replica connections: the pool hands each the connections already set as
// it needs, so the SETs do not follow every switch.
func TestLabSessionVarsAffinity(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	db := labtest.OpenPlain(t, l, "")
	a, err := db.Conn(ctx)
	require.NoError(t, err)
	defer a.Close()
	b, err := db.Conn(ctx)
	require.NoError(t, err)
	defer b.Close()
	_, err = a.ExecContext(ctx, "SET time_zone = '+05:00'")
	require.NoError(t, err)
	_, err = b.ExecContext(ctx, "SET time_zone = '+01:00'")
	require.NoError(t, err)
	sets := func() int64 {
		var n int64
		for _, r := range l.Replicas() {
			st := labtest.Status(t, r, "Com_set_option", "Connections")
			n += st["Com_set_option"] - st["Connections"] // one SET per new connection: session tracking
		}
		return n
	}
	before := sets()
	const reads = 200
	for i := range reads {
		sc, want := a, "+05:00"
		if i%2 == 1 {
			sc, want = b, "+01:00"
		}
		var tz string
		require.NoError(t, sc.QueryRowContext(ctx, "SELECT @@time_zone").Scan(&tz))
		require.Equal(t, want, tz)
	}
	n := sets() - before
	t.Logf("%d SETs for %d interleaved reads", n, reads)
	assert.LessOrEqual(t, n, int64(8), "SETs for %d reads", reads)
}
