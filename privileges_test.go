package rwshard_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An application user with GRANT ALL ON app.* and nothing more (no
// REPLICA MONITOR, PROCESS, BINLOG MONITOR): SHOW REPLICA STATUS is denied,
// and that is not a node down. Roles come from @@read_only and the GTID
// positions, lag from GTID sampling; writes go to the primary at once,
// reads to the replicas, with one host as with three.
func TestLabApplicationUser(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, time.Minute)
	setup(t, l, "CREATE TABLE IF NOT EXISTS plain_user (id INT PRIMARY KEY, v INT)", "DELETE FROM plain_user")
	for _, hosts := range []string{"three hosts", "one host"} {
		dsn := labtest.PlainDSN(l, "rwshard.probeInterval=100ms&rwshard.writePause=10s")
		if hosts == "one host" {
			dsn = "appdb:appdb-secret@tcp(" + l.Primary().Addr() + ")/app?rwshard.probeInterval=100ms&rwshard.writePause=10s"
		}
		db, err := sql.Open(rwshard.DriverName, dsn)
		require.NoError(t, err)
		labtest.WaitReady(t, db)
		c, err := rwshard.ConnectorOf(ctx, db)
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, "INSERT INTO plain_user VALUES (?, 1)", len(hosts))
		require.NoError(t, err, hosts)
		for _, n := range c.Stats().Nodes {
			assert.True(t, n.Up, "%s: %s is up: %+v", hosts, n.Name, n)
		}
		if hosts == "three hosts" {
			require.NoError(t, l.Sync(ctx, 10*time.Second))
			time.Sleep(300 * time.Millisecond) // a probe after the sync
			assert.Contains(t, []string{"replica1", "replica2"}, ranOn(t, l, db, ctx, "SELECT @@server_id"), "reads on replicas")
			st := c.Stats()
			for _, n := range st.Nodes[1:] {
				assert.True(t, n.LagKnown, "%s: lag from GTID sampling: %+v", n.Name, n)
			}
		}
		db.Close()
	}
}
