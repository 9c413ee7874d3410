package rwshard_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/assert"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/rwshard/rwshard/internal/require"
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
	cfg, err := rwshard.ParseDSN(labtest.PlainDSN(l, "rwshard.probeInterval=100ms&rwshard.causalWait=fast"))
	require.NoError(t, err)
	tracer := labtest.NewCancelOn("primary")
	cfg.Tracer = tracer
	c, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(c)
	defer db.Close()
	labtest.WaitReady(t, db)

	sctx := rwshard.WithSession(ctx)
	_, err = db.ExecContext(sctx, "INSERT INTO unknown_gtid VALUES (1)")
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
