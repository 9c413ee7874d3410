package lab_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// TestGaleraFaults starts the Galera lab and injects each of its faults.
func TestGaleraFaults(t *testing.T) {
	begin := time.Now()
	l := labtest.Fresh(t, lab.Galera())
	t.Logf("galera lab (3 nodes) up and Synced in %s", time.Since(begin).Round(100*time.Millisecond))
	ctx := labtest.Ctx(t, 3*time.Minute)
	nodes := l.Nodes()
	require.Len(t, nodes, 3)
	seen := map[int]bool{}
	for _, n := range nodes {
		s, err := n.Wsrep(ctx)
		require.NoError(t, err)
		assert.Equal(t, lab.WsrepState{Ready: true, LocalState: 4, ClusterStatus: "Primary", ClusterSize: 3, LocalIndex: s.LocalIndex}, s, n.Name)
		seen[s.LocalIndex] = true
		assert.Equal(t, n.Name, whereRan(t, l, appDB(t, n, "")))
	}
	assert.Len(t, seen, 3, "local indexes")

	// A write on any node is on every other.
	db1 := appDB(t, nodes[0], "")
	_, err := db1.ExecContext(ctx, "CREATE TABLE g (id INT PRIMARY KEY, v INT)")
	require.NoError(t, err)
	_, err = appDB(t, nodes[1], "").ExecContext(ctx, "INSERT INTO g VALUES (1, 1)")
	require.NoError(t, err)
	var gtid string
	require.NoError(t, nodes[2].Admin().QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&gtid))
	t.Logf("gtid_binlog_pos on node3: %s", gtid)

	require.NoError(t, l.Desync(ctx, nodes[1], true))
	s, err := nodes[1].Wsrep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, s.LocalState)
	assert.True(t, s.Desync)
	require.NoError(t, l.Desync(ctx, nodes[1], false))

	require.NoError(t, l.Isolate(ctx, nodes[2], true))
	_, err = appDB(t, nodes[2], "").ExecContext(ctx, "SELECT * FROM g")
	assert.ErrorContains(t, err, "1047")
	s, err = nodes[0].Wsrep(ctx)
	require.NoError(t, err)
	assert.Equal(t, "Primary", s.ClusterStatus)
	require.NoError(t, l.Isolate(ctx, nodes[2], false))

	require.NoError(t, l.Kill(nodes[0]))
	_, err = appDB(t, nodes[1], "").ExecContext(ctx, "INSERT INTO g VALUES (2, 2)")
	require.NoError(t, err)
	begin = time.Now()
	require.NoError(t, l.Restart(ctx, nodes[0]))
	t.Logf("killed node rejoined in %s", time.Since(begin).Round(100*time.Millisecond))
	var n int
	require.NoError(t, db1.QueryRowContext(ctx, "SELECT COUNT(*) FROM g").Scan(&n))
	assert.Equal(t, 2, n)

	// A held snapshot transfer: node1 donates to node3.
	release, err := l.Donor(ctx, nodes[0], nodes[2])
	require.NoError(t, err)
	s, err = nodes[0].Wsrep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, s.LocalState, "Donor/Desynced")
	assert.False(t, s.Desync, "a donor, not desynced")
	assert.True(t, s.Ready)
	time.Sleep(time.Second)
	s, err = nodes[0].Wsrep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, s.LocalState, "still a donor until released")
	require.NoError(t, release(ctx))
	for _, n := range nodes {
		s, err := n.Wsrep(ctx)
		require.NoError(t, err)
		assert.Equal(t, 4, s.LocalState, n.Name)
		assert.Equal(t, 3, s.ClusterSize, n.Name)
	}
}
