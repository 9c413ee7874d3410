package rwshard_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// galeraParams point rwshard at the Galera lab's nodes by their names,
// probed often so that state changes are seen within a fraction of a
// second.
const galeraParams = "rwshard.topology=galera&rwshard.names=node1,node2,node3&rwshard.probeInterval=100ms"

// openGalera opens rwshard over the Galera lab with galeraParams and
// extra (may be empty).
func openGalera(t testing.TB, l *lab.Lab, extra string) *sql.DB {
	t.Helper()
	params := galeraParams
	if extra != "" {
		params += "&" + extra
	}
	return openLab(t, l, params)
}

// lowestIndex is the running node with the lowest wsrep_local_index among
// those that serve (Synced, not desynced): the writer rwshard must choose.
func lowestIndex(t testing.TB, ctx context.Context, l *lab.Lab, except ...*lab.Node) *lab.Node {
	t.Helper()
	var best *lab.Node
	bestIdx := 1 << 30
	for _, n := range l.Nodes() {
		if !n.Running() || slices.Contains(except, n) {
			continue
		}
		s, err := n.Wsrep(ctx)
		require.NoError(t, err)
		if s.Ready && s.LocalState == 4 && !s.Desync && s.LocalIndex < bestIdx {
			best, bestIdx = n, s.LocalIndex
		}
	}
	require.NotNil(t, best, "no serving node")
	return best
}

// writerOf is the node db's connector takes as the Galera writer.
func writerOf(t testing.TB, db *sql.DB) string {
	t.Helper()
	c, err := rwshard.ConnectorOf(context.Background(), db)
	require.NoError(t, err)
	for _, n := range c.Stats().Nodes {
		if n.Primary {
			return n.Name
		}
	}
	return ""
}

// nodeStats is node name's entry of db's Stats.
func nodeStats(t testing.TB, db *sql.DB, name string) rwshard.NodeStats {
	t.Helper()
	c, err := rwshard.ConnectorOf(context.Background(), db)
	require.NoError(t, err)
	for _, n := range c.Stats().Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %s", name)
	return rwshard.NodeStats{}
}

// readsOn runs n plain reads through db and counts where they ran.
func readsOn(t testing.TB, ctx context.Context, l *lab.Lab, db *sql.DB, n int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for range n {
		seen[ranOn(t, l, db, ctx, "SELECT @@server_id")]++
	}
	return seen
}

// readsReach runs reads through db until every node of want served one,
// up to 10s, and returns where they ran.
func readsReach(t testing.TB, ctx context.Context, l *lab.Lab, db *sql.DB, want []string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	deadline := time.Now().Add(10 * time.Second)
	for {
		for k, v := range readsOn(t, ctx, l, db, 10) {
			seen[k] += v
		}
		missing := false
		for _, n := range want {
			missing = missing || seen[n] == 0
		}
		if !missing {
			return seen
		}
		if time.Now().After(deadline) {
			t.Fatalf("reads did not reach every node of %v in 10s: %v", want, seen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writtenOn inserts a row through db recording the server it ran on, and
// returns that server's node name.
func writtenOn(t testing.TB, ctx context.Context, l *lab.Lab, db *sql.DB, table string) string {
	t.Helper()
	_, err := db.ExecContext(ctx, "INSERT INTO "+table+" (sid) VALUES (@@server_id)")
	require.NoError(t, err)
	var sid int64
	require.NoError(t, db.QueryRowContext(ctx, "SELECT /* rwshard:primary */ sid FROM "+table+" ORDER BY id DESC LIMIT 1").Scan(&sid))
	return l.NodeByServerID(sid)
}

// TestGaleraRoutesByNodeState: writes go to the serving node with the
// lowest wsrep_local_index, reads to the other serving nodes; a desynced
// node gets neither, an isolated one (non-Primary, 1047) is down, and
// each comes back when it serves again.
func TestGaleraRoutesByNodeState(t *testing.T) {
	l := galeraLab.Get(t)
	ctx := labtest.Ctx(t, 3*time.Minute)
	setupGalera(t, ctx, l, "DROP TABLE IF EXISTS gstate", "CREATE TABLE gstate (id INT AUTO_INCREMENT PRIMARY KEY, sid INT)")
	db := openGalera(t, l, "")

	w := lowestIndex(t, ctx, l)
	assert.Equal(t, w.Name, writerOf(t, db), "the writer is the lowest wsrep_local_index")
	assert.Equal(t, w.Name, writtenOn(t, ctx, l, db, "gstate"))
	var others []string
	for _, n := range l.Nodes() {
		if n != w {
			others = append(others, n.Name)
		}
	}
	// Right after a write, reads go where it is known to be applied
	// (read-your-writes): each reader in turn once its probe shows it.
	seen := readsReach(t, ctx, l, db, others)
	assert.Zero(t, seen[w.Name], "no read on the writer while others serve: %v", seen)

	// A desynced reader is fenced: no reads; back in sync, reads again.
	r := l.Node(others[0])
	require.NoError(t, l.Desync(ctx, r, true))
	require.Eventually(t, func() bool { return nodeStats(t, db, r.Name).Fenced }, 10*time.Second, 20*time.Millisecond)
	seen = readsOn(t, ctx, l, db, 40)
	assert.Zero(t, seen[r.Name], "no read on the desynced node: %v", seen)
	assert.Equal(t, 40, seen[others[1]], "reads on the one other reader: %v", seen)
	require.NoError(t, l.Desync(ctx, r, false))
	require.Eventually(t, func() bool { return !nodeStats(t, db, r.Name).Fenced }, 10*time.Second, 20*time.Millisecond)
	assert.Zero(t, readsReach(t, ctx, l, db, others)[w.Name], "reads on both readers again once Synced")

	// Both readers out of service: the writer serves the reads too.
	require.NoError(t, l.Desync(ctx, l.Node(others[0]), true))
	require.NoError(t, l.Desync(ctx, l.Node(others[1]), true))
	require.Eventually(t, func() bool {
		return nodeStats(t, db, others[0]).Fenced && nodeStats(t, db, others[1]).Fenced
	}, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, map[string]int{w.Name: 20}, readsOn(t, ctx, l, db, 20), "the writer reads when no other node serves")
	require.NoError(t, l.Desync(ctx, l.Node(others[0]), false))
	require.NoError(t, l.Desync(ctx, l.Node(others[1]), false))

	// An isolated node is out of the Primary component: down, no reads,
	// and no errors for the reads that avoid it.
	require.NoError(t, l.Isolate(ctx, r, true))
	require.Eventually(t, func() bool { return !nodeStats(t, db, r.Name).Up }, 10*time.Second, 20*time.Millisecond)
	seen = readsOn(t, ctx, l, db, 40)
	assert.Zero(t, seen[r.Name], "no read on the isolated node: %v", seen)
	require.NoError(t, l.Isolate(ctx, r, false))
	require.Eventually(t, func() bool { n := nodeStats(t, db, r.Name); return n.Up && !n.Fenced }, 20*time.Second, 20*time.Millisecond)

	// The writer desyncs: the next lowest index writes; in sync again, it
	// is the writer again (failback).
	require.NoError(t, l.Desync(ctx, w, true))
	next := lowestIndex(t, ctx, l, w)
	require.Eventually(t, func() bool { return writerOf(t, db) == next.Name }, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, next.Name, writtenOn(t, ctx, l, db, "gstate"))
	require.NoError(t, l.Desync(ctx, w, false))
	require.Eventually(t, func() bool { return writerOf(t, db) == w.Name }, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, w.Name, writtenOn(t, ctx, l, db, "gstate"))
}

// TestGaleraWriterPriority: rwshard.galeraWriters overrides the index
// order; rwshard.galeraNoFailback keeps the writer that took over.
func TestGaleraWriterPriority(t *testing.T) {
	l := galeraLab.Get(t)
	ctx := labtest.Ctx(t, 2*time.Minute)
	db := openGalera(t, l, "rwshard.galeraWriters=node3,node2&rwshard.galeraNoFailback=true")
	assert.Equal(t, "node3", writerOf(t, db))
	n3 := l.Node("node3")
	require.NoError(t, l.Desync(ctx, n3, true))
	require.Eventually(t, func() bool { return writerOf(t, db) == "node2" }, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, l.Desync(ctx, n3, false))
	require.Eventually(t, func() bool { return !nodeStats(t, db, "node3").Fenced }, 10*time.Second, 20*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // a few probes: the writer must stay
	assert.Equal(t, "node2", writerOf(t, db), "no failback")
}

// setupGalera runs statements on the first node directly.
func setupGalera(t testing.TB, ctx context.Context, l *lab.Lab, stmts ...string) {
	t.Helper()
	db := direct(t, l.Nodes()[0], "")
	for _, s := range stmts {
		_, err := db.ExecContext(ctx, s)
		require.NoError(t, err, s)
	}
}

// galeraRows counts table's rows on node n directly.
func galeraRows(t testing.TB, ctx context.Context, n *lab.Node, q string, args ...any) int {
	t.Helper()
	var c int
	require.NoError(t, direct(t, n, "").QueryRowContext(ctx, q, args...).Scan(&c), q)
	return c
}

var _ = fmt.Sprint
