package rwshard_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A write whose GTID could not be read (its caller's context ended as it
// returned) does not leave the session with an older GTID that a replica
// lacking the write already has: the next read takes the primary's
// position first. Without that, the read below ran on a replica that has
// the first write and not the second, and found nothing.
func TestLabUnknownGTIDIsNotAnOldOne(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS unknown_gtid (id INT PRIMARY KEY)", "TRUNCATE unknown_gtid")
	tracer := labtest.NewCancelOn("primary")
	db := labtest.OpenTraced(t, labtest.PlainDSN(l, "rwshard.probeInterval=100ms&rwshard.causalWait=fast"), tracer)

	sctx := rwshard.WithSession(ctx)
	_, err := db.ExecContext(sctx, "INSERT INTO unknown_gtid VALUES (1)")
	require.NoError(t, err)
	require.NoError(t, l.Sync(ctx, 10*time.Second))
	for _, r := range l.Replicas() {
		require.NoError(t, l.Lag(ctx, r, 30*time.Second))
		t.Cleanup(func() { _ = l.Lag(context.Background(), r, 0) })
	}
	time.Sleep(500 * time.Millisecond) // the probes see the replicas at the first write
	wctx, cancel := context.WithCancel(sctx)
	tracer.Arm(cancel)
	_, err = db.ExecContext(wctx, "INSERT INTO unknown_gtid VALUES (2)")
	require.NoError(t, err)
	require.True(t, tracer.Fired(), "the context ended as the write returned")

	var n, sid int
	require.NoError(t, db.QueryRowContext(sctx, "SELECT COUNT(*), @@server_id FROM unknown_gtid WHERE id = 2").Scan(&n, &sid))
	assert.Equal(t, 1, n, "stale read on server %d: the session does not see its second write", sid)
	assert.Equal(t, l.Primary().ServerID, sid, "no replica has the second write: the primary")
}

// A write whose outcome its caller does not know is recorded for
// read-your-writes all the same: if it ran, it committed on the primary,
// and the scope's next read must see it. Two such writes, in both
// consistency modes, with the replicas 30 s behind:
//   - an INSERT whose context ends after it was sent: the server goes on
//     running it and commits it (go-sql-driver's TestContextCancelStmtExec
//     reads after it this way);
//   - a COMMIT sent as the primary's network went silent: the caller gets
//     an error once health takes the primary out, and the COMMIT is
//     delivered when the network comes back.
//
// Once the write is on the primary, the scope's next read (the same
// *sql.DB, no rwshard session) finds its row. Before, neither write was
// recorded and that read ran on a replica without it.
func TestLabOutcomeUnknownWriteIsRecorded(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, 2*time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS unsure (id INT PRIMARY KEY)", "TRUNCATE unsure")
	require.NoError(t, l.Sync(ctx, 10*time.Second))
	for _, r := range l.Replicas() {
		require.NoError(t, l.Lag(ctx, r, 30*time.Second))
		t.Cleanup(func() { _ = l.Lag(context.Background(), r, 0) })
	}
	onPrimary := func(t *testing.T, id int) {
		t.Helper()
		require.Eventually(t, func() bool {
			var n int
			err := l.Primary().Admin().QueryRowContext(ctx, "SELECT COUNT(*) FROM app.unsure WHERE id = ?", id).Scan(&n)
			return err == nil && n == 1
		}, 10*time.Second, 10*time.Millisecond, "row %d never reached the primary", id)
	}
	// sees reads id through db, as the write's scope.
	sees := func(t *testing.T, db *sql.DB, id int) {
		t.Helper()
		var n, sid int
		require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*), @@server_id FROM unsure WHERE id = ?", id).Scan(&n, &sid))
		assert.Equal(t, 1, n, "stale read on %s: the write of unknown outcome was not recorded", l.NodeByServerID(int64(sid)))
	}
	id := 0
	for _, mode := range []string{"causal", "session"} {
		params := "rwshard.consistency=" + mode + "&rwshard.causalWait=fast&rwshard.maxReplicaLag=120s"
		t.Run(mode+"/cancelled", func(t *testing.T) {
			db, err := sql.Open("rwshard", labtest.PlainDSN(l, "rwshard.probeInterval=100ms&"+params))
			require.NoError(t, err)
			defer db.Close()
			labtest.WaitReady(t, db)
			id++
			wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			_, err = db.ExecContext(wctx, "INSERT INTO unsure VALUES (? + SLEEP(1))", id)
			require.Error(t, err, "the INSERT outlives its context")
			t.Logf("cancelled INSERT: %v", err)
			onPrimary(t, id)
			sees(t, db, id)
		})
		t.Run(mode+"/commit", func(t *testing.T) {
			p := labtest.Proxy(t, l.Primary().Addr())
			db, events := silentDBAs(t, lab.PlainUser, lab.PlainPassword, []string{p.Addr(), l.Replicas()[0].Addr(), l.Replicas()[1].Addr()}, "&rwshard.writePause=1s&"+params)
			id++
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			_, err = tx.ExecContext(ctx, "INSERT INTO unsure VALUES (?)", id)
			require.NoError(t, err)
			p.Silence()
			err = tx.Commit()
			resumed := time.Now()
			p.Resume()
			require.Error(t, err, "the COMMIT's answer never came")
			t.Logf("COMMIT sent into silence: %v", err)
			onPrimary(t, id)
			events.waitEvent(t, health.NodeUp, "primary", resumed, 5*time.Second)
			sees(t, db, id)
		})
	}
}
