package rwshard_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
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

// statsOf is the Stats of db's connector.
func statsOf(t testing.TB, db *sql.DB) rwshard.Stats {
	t.Helper()
	c, err := rwshard.ConnectorOf(context.Background(), db)
	require.NoError(t, err)
	return c.Stats()
}

// writerOf is the node db's connector takes as the Galera writer.
func writerOf(t testing.TB, db *sql.DB) string {
	t.Helper()
	for _, n := range statsOf(t, db).Nodes {
		if n.Primary {
			return n.Name
		}
	}
	return ""
}

// nodeStats is node name's entry of db's Stats.
func nodeStats(t testing.TB, db *sql.DB, name string) rwshard.NodeStats {
	t.Helper()
	for _, n := range statsOf(t, db).Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %s", name)
	return rwshard.NodeStats{}
}

// routesOf is db's count of statements by route reason.
func routesOf(t testing.TB, db *sql.DB) map[string]uint64 {
	t.Helper()
	return statsOf(t, db).Routes
}

// waitsOf says, for a failure message, each node's lag and causal waits
// as db's connector sees them.
func waitsOf(t testing.TB, db *sql.DB) string {
	t.Helper()
	var b strings.Builder
	for _, n := range statsOf(t, db).Nodes {
		fmt.Fprintf(&b, "%s: lag %s (known %t), %d waits, %d timed out; ", n.Name, n.Lag, n.LagKnown, n.Waits, n.WaitTimeouts)
	}
	return b.String()
}

// readsOn runs n plain reads through db and counts where they ran.
func readsOn(t testing.TB, ctx context.Context, l *lab.Lab, db *sql.DB, n int) map[string]int {
	t.Helper()
	return readsOf(t, ctx, l, db, "SELECT @@port", n)
}

// readsOf runs the read q, which returns @@port, n times through db and
// counts where it ran.
func readsOf(t testing.TB, ctx context.Context, l *lab.Lab, db *sql.DB, q string, n int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for range n {
		var port int64
		require.NoError(t, db.QueryRowContext(ctx, q).Scan(&port), q)
		seen[nodeByPort(l, port)]++
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
	_, err := db.ExecContext(ctx, "INSERT INTO "+table+" (sid) VALUES (@@port)")
	require.NoError(t, err)
	var sid int64
	require.NoError(t, db.QueryRowContext(ctx, "SELECT /* rwshard:primary */ sid FROM "+table+" ORDER BY id DESC LIMIT 1").Scan(&sid))
	return nodeByPort(l, sid)
}

// nodeByPort names the lab node whose client port is port. Writes record
// @@port to say where they ran, not @@server_id: with wsrep_gtid_mode a
// connection that wrote reads the cluster's GTID server_id there.
func nodeByPort(l *lab.Lab, port int64) string {
	for _, n := range l.Nodes() {
		if int64(n.Port) == port {
			return n.Name
		}
	}
	return fmt.Sprintf("port %d", port)
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
	assert.Zero(t, seen[w.Name], "no read on the writer while others serve: %v; routes %v; %s", seen, routesOf(t, db), waitsOf(t, db))

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

// galeraLoad is 8 writers and 8 readers through one handle, recording
// every write's id, start and outcome and every read's time.
type galeraLoad struct {
	mu     sync.Mutex
	starts map[int64]time.Time // every write attempt by id
	acked  map[int64]time.Time // acknowledged writes: when the ack came
	wErrs  []error
	reads  []time.Time // successful reads
	rErrs  []error
	next   atomic.Int64
	stop   chan struct{}
	wg     sync.WaitGroup
}

func startGaleraLoad(t testing.TB, db *sql.DB, table string) *galeraLoad {
	g := &galeraLoad{starts: map[int64]time.Time{}, acked: map[int64]time.Time{}, stop: make(chan struct{})}
	ctx := context.Background()
	for range 8 {
		g.wg.Go(func() {
			for {
				select {
				case <-g.stop:
					return
				default:
				}
				id := g.next.Add(1)
				start := time.Now()
				g.mu.Lock()
				g.starts[id] = start
				g.mu.Unlock()
				wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				_, err := db.ExecContext(wctx, "INSERT INTO "+table+" (id, sid) VALUES (?, @@port)", id)
				cancel()
				g.mu.Lock()
				if err == nil {
					g.acked[id] = time.Now()
				} else {
					g.wErrs = append(g.wErrs, err)
				}
				g.mu.Unlock()
			}
		})
		g.wg.Go(func() {
			for {
				select {
				case <-g.stop:
					return
				default:
				}
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				var n int64
				err := db.QueryRowContext(rctx, "SELECT @@server_id").Scan(&n)
				cancel()
				g.mu.Lock()
				if err == nil {
					g.reads = append(g.reads, time.Now())
				} else {
					g.rErrs = append(g.rErrs, err)
				}
				g.mu.Unlock()
			}
		})
	}
	t.Cleanup(g.end)
	return g
}

func (g *galeraLoad) end() {
	select {
	case <-g.stop:
	default:
		close(g.stop)
	}
	g.wg.Wait()
}

// readsBetween counts the successful reads in [from, to).
func (g *galeraLoad) readsBetween(from, to time.Time) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, r := range g.reads {
		if !r.Before(from) && r.Before(to) {
			n++
		}
	}
	return n
}

// maxReadGap is the longest time without a successful read in [from, to].
func (g *galeraLoad) maxReadGap(from, to time.Time) time.Duration {
	g.mu.Lock()
	times := slices.Clone(g.reads)
	g.mu.Unlock()
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	last, gap := from, time.Duration(0)
	for _, r := range times {
		if r.Before(from) || r.After(to) {
			continue
		}
		gap = max(gap, r.Sub(last))
		last = r
	}
	return max(gap, to.Sub(last))
}

// rowsBySID reads table's id → sid (the port of the node that wrote the
// row) on node n.
func rowsBySID(t testing.TB, ctx context.Context, n *lab.Node, table string) map[int64]int64 {
	t.Helper()
	rows, err := direct(t, n, "").QueryContext(ctx, "SELECT id, sid FROM "+table)
	require.NoError(t, err)
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var id, sid int64
		require.NoError(t, rows.Scan(&id, &sid))
		out[id] = sid
	}
	require.NoError(t, rows.Err())
	return out
}

// waitWriter polls db's writer until it is not old, and returns it and
// when the test saw it: the connector saw it at that time or before.
func waitWriter(t testing.TB, db *sql.DB, old string) (string, time.Time) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if w := writerOf(t, db); w != old && w != "" {
			return w, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the writer is still %s after 30s", old)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestGaleraWriterFailover: under 8 writers and 8 readers, the writer
// moves twice. First it desyncs and stays up, still accepting writes from
// anyone: no write that began after rwshard saw the change reaches it.
// Then it is killed: no acknowledged write is lost, reads go on, and the
// test reports how long until the first write on the new writer.
func TestGaleraWriterFailover(t *testing.T) {
	l := galeraLab.Get(t)
	ctx := labtest.Ctx(t, 4*time.Minute)
	setupGalera(t, ctx, l, "DROP TABLE IF EXISTS gfail", "CREATE TABLE gfail (id BIGINT PRIMARY KEY, sid INT NOT NULL)")
	db := openGalera(t, l, "rwshard.writePause=30s&rwshard.driverLog=off")
	db.SetMaxOpenConns(64)
	old := writerOf(t, db)
	oldNode := l.Node(old)
	oldSID := int64(oldNode.Port)
	load := startGaleraLoad(t, db, "gfail")
	time.Sleep(time.Second)

	// The writer desyncs: alive and writable, but no longer the writer.
	require.NoError(t, l.Desync(ctx, oldNode, true))
	moved, seen := waitWriter(t, db, old)
	time.Sleep(time.Second)
	resync := time.Now() // the failback cannot come before
	require.NoError(t, l.Desync(ctx, oldNode, false))
	require.Eventually(t, func() bool { return writerOf(t, db) == old }, 20*time.Second, 5*time.Millisecond, "failback")
	time.Sleep(500 * time.Millisecond)

	// The writer is killed.
	killed := time.Now()
	require.NoError(t, l.Kill(oldNode))
	t.Cleanup(func() {
		if !oldNode.Running() {
			assert.NoError(t, l.Restart(context.Background(), oldNode))
		}
	})
	after, _ := waitWriter(t, db, old)
	time.Sleep(2 * time.Second)
	stopped := time.Now()
	load.end()

	survivor := l.Node(after)
	rows := rowsBySID(t, ctx, survivor, "gfail")
	load.mu.Lock()
	defer load.mu.Unlock()
	late, during := 0, 0
	for id, sid := range rows {
		if st := load.starts[id]; st.After(seen) && st.Before(resync) {
			during++
			if sid == oldSID {
				late++
			}
		}
	}
	assert.Positive(t, during, "writes while %s was the writer", moved)
	assert.Zero(t, late, "writes begun after the move to %s was seen reached %s (of %d)", moved, old, during)
	lost := 0
	for id := range load.acked {
		if _, ok := rows[id]; !ok {
			lost++
		}
	}
	assert.Zero(t, lost, "acknowledged writes lost (of %d)", len(load.acked))
	var first time.Time
	newSID := int64(survivor.Port)
	for id, at := range load.acked {
		if rows[id] == newSID && load.starts[id].After(killed) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	require.False(t, first.IsZero(), "no write on the new writer %s after the kill", after)
	readsAfter := 0
	for _, r := range load.reads {
		if r.After(killed) {
			readsAfter++
		}
	}
	assert.Positive(t, readsAfter, "reads after the kill")
	load.mu.Unlock()
	gap := load.maxReadGap(killed, stopped)
	load.mu.Lock()
	t.Logf("writes acknowledged %d, failed %d (in flight at the kill: outcome unknown); reads %d, failed %d",
		len(load.acked), len(load.wErrs), len(load.reads), len(load.rErrs))
	t.Logf("kill of %s: new writer %s, first write acknowledged there %s after the kill; longest gap between reads %s",
		old, after, first.Sub(killed).Round(time.Millisecond), gap.Round(time.Millisecond))
	assert.Less(t, gap, 10*time.Second, "reads keep flowing")
}

// TestGaleraTxWriterMoved: a transaction open on the writer when the
// writer moves sends nothing more there. Without txReplay its next
// statement fails with ErrSessionLost and nothing of it is committed;
// with txReplay it moves to the new writer and commits there.
func TestGaleraTxWriterMoved(t *testing.T) {
	l := galeraLab.Get(t)
	ctx := labtest.Ctx(t, 2*time.Minute)
	setupGalera(t, ctx, l, "DROP TABLE IF EXISTS gtx", "CREATE TABLE gtx (id INT PRIMARY KEY, sid INT NOT NULL)")
	for _, replay := range []bool{false, true} {
		t.Run(fmt.Sprintf("txReplay=%v", replay), func(t *testing.T) {
			db := openGalera(t, l, fmt.Sprintf("rwshard.txReplay=%v&rwshard.driverLog=off", replay))
			old := writerOf(t, db)
			oldNode := l.Node(old)
			base := 10
			if replay {
				base = 20
			}
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			_, err = tx.ExecContext(ctx, "INSERT INTO gtx VALUES (?, @@port)", base+1)
			require.NoError(t, err)
			require.NoError(t, l.Desync(ctx, oldNode, true))
			t.Cleanup(func() { _ = l.Desync(context.Background(), oldNode, false) })
			moved, _ := waitWriter(t, db, old)
			_, err = tx.ExecContext(ctx, "INSERT INTO gtx VALUES (?, @@port)", base+2)
			if !replay {
				require.ErrorIs(t, err, rwshard.ErrSessionLost)
				assert.ErrorContains(t, err, "no longer the Galera writer")
				assert.Error(t, tx.Commit())
				assert.Zero(t, galeraRows(t, ctx, l.Node(moved), "SELECT COUNT(*) FROM gtx WHERE id > ? AND id < ?", base, base+10),
					"nothing of the lost transaction committed")
				return
			}
			require.NoError(t, err)
			require.NoError(t, tx.Commit())
			rows := rowsBySID(t, ctx, l.Node(moved), "gtx")
			sid := int64(l.Node(moved).Port)
			assert.Equal(t, map[int64]int64{int64(base + 1): sid, int64(base + 2): sid},
				map[int64]int64{int64(base + 1): rows[int64(base+1)], int64(base + 2): rows[int64(base+2)]},
				"the whole transaction replayed and committed on the new writer %s", moved)
		})
	}
}

// TestGaleraCertificationFailure: a transaction through rwshard loses
// certification to a write on another node (error 1213). Under txReplay
// it is replayed and commits; without, the caller gets the server's 1213.
func TestGaleraCertificationFailure(t *testing.T) {
	l := galeraLab.Get(t)
	ctx := labtest.Ctx(t, 2*time.Minute)
	setupGalera(t, ctx, l, "DROP TABLE IF EXISTS gcert", "CREATE TABLE gcert (id INT PRIMARY KEY, v INT NOT NULL)",
		"INSERT INTO gcert VALUES (1, 0)")
	for _, replay := range []bool{false, true} {
		t.Run(fmt.Sprintf("txReplay=%v", replay), func(t *testing.T) {
			db := openGalera(t, l, fmt.Sprintf("rwshard.txReplay=%v", replay))
			w := writerOf(t, db)
			var other *lab.Node
			for _, n := range l.Nodes() {
				if n.Name != w {
					other = n
					break
				}
			}
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			_, err = tx.ExecContext(ctx, "UPDATE gcert SET v = v + 1 WHERE id = 1")
			require.NoError(t, err)
			// Another node commits a conflicting write first: the
			// transaction on the writer fails certification at COMMIT
			// (or is aborted by the applier before it).
			_, err = direct(t, other, "").ExecContext(ctx, "UPDATE gcert SET v = v + 100 WHERE id = 1")
			require.NoError(t, err)
			before := galeraRows(t, ctx, other, "SELECT v FROM gcert WHERE id = 1")
			err = tx.Commit()
			if !replay {
				var me *mysql.MySQLError
				require.ErrorAs(t, err, &me)
				assert.Equal(t, uint16(1213), me.Number)
				assert.Equal(t, before, galeraRows(t, ctx, other, "SELECT v FROM gcert WHERE id = 1"))
				return
			}
			require.NoError(t, err)
			c, err := rwshard.ConnectorOf(ctx, db)
			require.NoError(t, err)
			assert.Equal(t, uint64(1), c.Stats().Replays)
			require.Eventually(t, func() bool {
				return galeraRows(t, ctx, other, "SELECT v FROM gcert WHERE id = 1") == before+1
			}, 5*time.Second, 10*time.Millisecond, "the replayed increment committed")
		})
	}
}

// totalWaits is the number of causal waits db's connector made.
func totalWaits(t testing.TB, db *sql.DB) uint64 {
	t.Helper()
	var w uint64
	for _, n := range statsOf(t, db).Nodes {
		w += n.Waits
	}
	return w
}

// TestGaleraReadYourWrites: every read right after a write through the
// same handle sees it, though reads run on other nodes than the writer.
// RWSHARD_GALERA_PAIRS sets the number of pairs (default 1000).
func TestGaleraReadYourWrites(t *testing.T) {
	l := galeraLab.Get(t)
	ctx := labtest.Ctx(t, 10*time.Minute)
	setupGalera(t, ctx, l, "DROP TABLE IF EXISTS gryw", "CREATE TABLE gryw (id INT PRIMARY KEY, v INT NOT NULL)")
	pairs := 1000
	if s := os.Getenv("RWSHARD_GALERA_PAIRS"); s != "" {
		var err error
		pairs, err = strconv.Atoi(s)
		require.NoError(t, err)
	}
	db := openGalera(t, l, "")
	w := writerOf(t, db)
	stale, onReaders := 0, 0
	begin := time.Now()
	for i := range pairs {
		_, err := db.ExecContext(ctx, "INSERT INTO gryw VALUES (?, ?)", i, i*7)
		require.NoError(t, err)
		var v, sid int64
		w0 := totalWaits(t, db)
		err = db.QueryRowContext(ctx, "SELECT v, @@port FROM gryw WHERE id = ?", i).Scan(&v, &sid)
		if errors.Is(err, sql.ErrNoRows) {
			stale++
			t.Logf("stale read of pair %d (causal waits during it: %d)", i, totalWaits(t, db)-w0)
			continue
		}
		require.NoError(t, err)
		if v != int64(i*7) {
			stale++
		}
		if nodeByPort(l, sid) != w {
			onReaders++
		}
	}
	took := time.Since(begin)
	c, err := rwshard.ConnectorOf(ctx, db)
	require.NoError(t, err)
	var waits, timeouts uint64
	for _, n := range c.Stats().Nodes {
		waits += n.Waits
		timeouts += n.WaitTimeouts
	}
	t.Logf("%d write/read pairs in %s: %d stale, %d reads on other nodes than the writer %s, %d causal waits (%d timed out)",
		pairs, took.Round(time.Millisecond), stale, onReaders, w, waits, timeouts)
	assert.Zero(t, stale)
	assert.Greater(t, onReaders, pairs/2, "reads ran on the other nodes")
}

// TestGaleraWaitsOnReaderOfUnknownLag: a read right after a write waits
// on a serving reader even when no probe has seen its receive queue empty
// (its lag unknown): it has certified the write, and applies it once its
// applier moves. Both readers' appliers are held from before the
// connector opened and let go while the read waits.
func TestGaleraWaitsOnReaderOfUnknownLag(t *testing.T) {
	l := galeraLab.Get(t)
	ctx := labtest.Ctx(t, 2*time.Minute)
	setupGalera(t, ctx, l, "DROP TABLE IF EXISTS gunknown", "CREATE TABLE gunknown (id INT AUTO_INCREMENT PRIMARY KEY, sid INT)")
	w := lowestIndex(t, ctx, l)
	var readers []*lab.Node
	var releases []func() error
	for _, n := range l.Nodes() {
		if n == w {
			continue
		}
		release, err := l.StallApply(ctx, n, lab.AppDatabase+".gunknown")
		require.NoError(t, err)
		t.Cleanup(func() { _ = release() })
		readers, releases = append(readers, n), append(releases, release)
	}
	// The first write-set holds each applier; those after it queue.
	ins := "INSERT INTO gunknown (sid) VALUES (0)"
	setupGalera(t, ctx, l, ins, ins, ins)
	for _, n := range readers {
		require.Eventually(t, func() bool {
			ws, err := n.Wsrep(ctx)
			return err == nil && ws.RecvQueue > 0 && ws.LocalState == 4
		}, 10*time.Second, 20*time.Millisecond, "write-sets queue on %s", n.Name)
	}

	// A wait long enough that a slow machine's appliers catch up in it.
	db := openGalera(t, l, "rwshard.causalTimeout=5s")
	assert.Equal(t, w.Name, writerOf(t, db))
	for _, n := range readers {
		require.Eventually(t, func() bool { s := nodeStats(t, db, n.Name); return s.Up && !s.Fenced }, 10*time.Second, 20*time.Millisecond)
		s := nodeStats(t, db, n.Name)
		require.False(t, s.LagKnown, "%s: no probe saw its queue empty: lag unknown", n.Name)
	}
	_, err := db.ExecContext(ctx, "INSERT INTO gunknown (sid) VALUES (@@port)")
	require.NoError(t, err)
	released := make(chan error, len(releases))
	go func() {
		time.Sleep(300 * time.Millisecond)
		for _, release := range releases {
			released <- release()
		}
	}()
	var port int64
	require.NoError(t, db.QueryRowContext(ctx, "SELECT @@port").Scan(&port))
	for range releases {
		require.NoError(t, <-released)
	}
	on := nodeByPort(l, port)
	assert.NotEqual(t, w.Name, on, "the read waited on a reader, not the writer; routes %v; %s", routesOf(t, db), waitsOf(t, db))
	assert.Equal(t, uint64(1), totalWaits(t, db), "one causal wait")
}

// TestGaleraWriterAgreedAcrossProcesses: this process and a child process
// of its own, each with its own connector and probes, name the same
// writer, before and after the writer is killed (a hard-killed writer is
// where independent routers have been seen to disagree).
func TestGaleraWriterAgreedAcrossProcesses(t *testing.T) {
	if dsn := os.Getenv("RWSHARD_GALERA_CHILD_DSN"); dsn != "" {
		galeraChild(t, dsn, os.Getenv("RWSHARD_GALERA_CHILD_OUT"))
		return
	}
	l := galeraLab.Get(t)
	ctx := labtest.Ctx(t, 3*time.Minute)
	out := filepath.Join(t.TempDir(), "writer")
	cmd := exec.Command(os.Args[0], "-test.run=^TestGaleraWriterAgreedAcrossProcesses$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "RWSHARD_GALERA_CHILD_DSN="+labDSN(l, galeraParams+"&rwshard.driverLog=off"),
		"RWSHARD_GALERA_CHILD_OUT="+out)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	var childOut strings.Builder
	cmd.Stdout, cmd.Stderr = &childOut, &childOut
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		stdin.Close() // the child ends when its stdin does
		if err := cmd.Wait(); err != nil {
			t.Errorf("child: %v\n%s", err, childOut.String())
		}
	})
	db := openGalera(t, l, "rwshard.driverLog=off")
	child := func() string {
		b, _ := os.ReadFile(out)
		return string(b)
	}
	agree := func(not string) string {
		t.Helper()
		var mine, theirs string
		require.Eventually(t, func() bool {
			mine, theirs = writerOf(t, db), child()
			return mine != "" && mine != not && mine == theirs
		}, 30*time.Second, 5*time.Millisecond, "this process: %s, the child: %s", mine, theirs)
		return mine
	}
	w := agree("")
	assert.Equal(t, lowestIndex(t, ctx, l).Name, w)
	killed := l.Node(w)
	require.NoError(t, l.Kill(killed))
	t.Cleanup(func() { assert.NoError(t, l.Restart(context.Background(), killed)) })
	next := agree(w)
	assert.Equal(t, lowestIndex(t, ctx, l).Name, next)
	t.Logf("both processes: writer %s, after its kill %s", w, next)
}

// galeraChild is the child of TestGaleraWriterAgreedAcrossProcesses: it
// writes the writer its connector takes to out whenever it changes, until
// its stdin closes.
func galeraChild(t *testing.T, dsn, out string) {
	db, err := sql.Open(rwshard.DriverName, dsn)
	require.NoError(t, err)
	defer db.Close()
	labtest.WaitReady(t, db)
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	last := ""
	for {
		if w := writerOf(t, db); w != last {
			tmp := out + ".tmp"
			require.NoError(t, os.WriteFile(tmp, []byte(w), 0o644))
			require.NoError(t, os.Rename(tmp, out))
			last = w
		}
		select {
		case <-done:
			return
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// TestGaleraIsolatedBetweenProbes: a node that leaves the Primary
// component between two probes answers reads with error 1047; they run
// on another node instead, and the caller sees no error.
func TestGaleraIsolatedBetweenProbes(t *testing.T) {
	l := galeraLab.Get(t)
	ctx := labtest.Ctx(t, 2*time.Minute)
	setupGalera(t, ctx, l, "DROP TABLE IF EXISTS gisol", "CREATE TABLE gisol (id INT PRIMARY KEY)", "INSERT INTO gisol VALUES (1)")
	db := openLab(t, l, "rwshard.topology=galera&rwshard.names=node1,node2,node3&rwshard.probeInterval=1m&rwshard.driverLog=off")
	w := writerOf(t, db)
	var r *lab.Node
	for _, n := range l.Nodes() {
		if n.Name != w {
			r = n
			break
		}
	}
	require.NoError(t, l.Isolate(ctx, r, true))
	t.Cleanup(func() { assert.NoError(t, l.Isolate(context.Background(), r, false)) })
	require.True(t, nodeStats(t, db, r.Name).Up, "no probe has seen it yet")
	// A statement that reads a table gets 1047 there (one that reads
	// only variables is still answered).
	seen := map[string]int{}
	for range 40 {
		var port int64
		require.NoError(t, db.QueryRowContext(ctx, "SELECT @@port FROM gisol WHERE id = 1").Scan(&port))
		seen[nodeByPort(l, port)]++
	}
	assert.Zero(t, seen[r.Name], "no read answered by the isolated node: %v", seen)
	c, err := rwshard.ConnectorOf(ctx, db)
	require.NoError(t, err)
	assert.Positive(t, c.Stats().Events["read-retried"], "reads retried elsewhere")
}

// TestGaleraDonorGetsNoReads: a node that is a state-transfer donor
// (wsrep_local_state 2, wsrep_desync OFF) gets no reads, unless
// rwshard.galeraDonor allows it.
func TestGaleraDonorGetsNoReads(t *testing.T) {
	l := galeraLab.Get(t)
	ctx := labtest.Ctx(t, 3*time.Minute)
	setupGalera(t, ctx, l, "DROP TABLE IF EXISTS gdonor", "CREATE TABLE gdonor (id INT PRIMARY KEY)", "INSERT INTO gdonor VALUES (1)")
	strict := openGalera(t, l, "rwshard.driverLog=off")
	allowed := openGalera(t, l, "rwshard.driverLog=off&rwshard.galeraDonor=true")
	w := l.Node(writerOf(t, strict))
	var donor, joiner *lab.Node
	for _, n := range l.Nodes() {
		if n != w && donor == nil {
			donor = n
		}
	}
	for _, n := range l.Nodes() {
		if n != w && n != donor && n != l.Nodes()[0] {
			joiner = n
		}
	}
	require.NotNil(t, joiner, "writer %s, donor %s", w.Name, donor.Name)
	release, err := l.Donor(ctx, donor, joiner)
	require.NoError(t, err)
	released := false
	t.Cleanup(func() {
		if !released {
			assert.NoError(t, release(context.Background()))
		}
	})
	require.Eventually(t, func() bool { return nodeStats(t, strict, donor.Name).Fenced }, 10*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return !nodeStats(t, allowed, joiner.Name).Up }, 10*time.Second, 20*time.Millisecond)
	tableReads := func(db *sql.DB, n int) map[string]int {
		return readsOf(t, ctx, l, db, "SELECT @@port FROM gdonor WHERE id = 1", n)
	}
	seen := tableReads(strict, 30)
	assert.Zero(t, seen[donor.Name], "no read on the donor: %v", seen)
	assert.Equal(t, 30, seen[w.Name], "the writer reads when no other node serves: %v", seen)
	assert.False(t, nodeStats(t, allowed, donor.Name).Fenced, "galeraDonor: the donor serves")
	assert.Positive(t, tableReads(allowed, 30)[donor.Name], "galeraDonor: reads on the donor")
	released = true
	require.NoError(t, release(ctx))
	require.Eventually(t, func() bool { return !nodeStats(t, strict, donor.Name).Fenced }, 10*time.Second, 20*time.Millisecond)
}

// TestGaleraMaxWriters: with rwshard.galeraMaxWriters=2, concurrent
// writes land on the two serving nodes with the lowest wsrep_local_index
// and nowhere else; reads go to the third.
func TestGaleraMaxWriters(t *testing.T) {
	l := galeraLab.Get(t)
	ctx := labtest.Ctx(t, 2*time.Minute)
	setupGalera(t, ctx, l, "DROP TABLE IF EXISTS gmw", "CREATE TABLE gmw (id INT PRIMARY KEY, sid INT NOT NULL)")
	// Eventual: right after the writes, read-your-writes may rightly send
	// a read to a writer while the third node applies them, which is not
	// what this test is about.
	db := openGalera(t, l, "rwshard.galeraMaxWriters=2&rwshard.consistency=eventual")
	first := lowestIndex(t, ctx, l)
	second := lowestIndex(t, ctx, l, first)
	var third string
	for _, n := range l.Nodes() {
		if n != first && n != second {
			third = n.Name
		}
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 8 {
		wg.Go(func() {
			for range 50 {
				_, err := db.ExecContext(ctx, "INSERT INTO gmw VALUES (?, @@port)", next.Add(1))
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	by := map[string]int{}
	for _, sid := range rowsBySID(t, ctx, first, "gmw") {
		by[nodeByPort(l, sid)]++
	}
	assert.Equal(t, 400, by[first.Name]+by[second.Name], "every write on the two writers: %v", by)
	assert.Positive(t, by[second.Name], "writes on the second writer: %v", by)
	// The third node may still be finishing a state transfer of an
	// earlier test: while it does not serve, the writers rightly serve
	// the reads.
	require.Eventually(t, func() bool { s := nodeStats(t, db, third); return s.Up && !s.Fenced }, 30*time.Second, 20*time.Millisecond)
	seen := readsReach(t, ctx, l, db, []string{third})
	assert.Zero(t, seen[first.Name]+seen[second.Name], "no read on the writers: %v", seen)
}

// TestGaleraRecvQueueFence: a reader whose applier falls behind, its
// receive queue over rwshard.galeraMaxRecvQueue while it stays Synced,
// gets no reads until it has applied the queue. Without the limit it
// serves, with a known lag that grows from the last time its queue was
// empty.
func TestGaleraRecvQueueFence(t *testing.T) {
	l := galeraLab.Get(t)
	ctx := labtest.Ctx(t, 2*time.Minute)
	setupGalera(t, ctx, l, "DROP TABLE IF EXISTS gqueue", "CREATE TABLE gqueue (id INT AUTO_INCREMENT PRIMARY KEY, sid INT)")
	fenced := openGalera(t, l, "rwshard.galeraMaxRecvQueue=2&rwshard.consistency=eventual")
	plain := openGalera(t, l, "")
	w := lowestIndex(t, ctx, l)
	assert.Equal(t, w.Name, writtenOn(t, ctx, l, fenced, "gqueue"))
	assert.Equal(t, w.Name, writtenOn(t, ctx, l, plain, "gqueue"))
	var others []string
	for _, n := range l.Nodes() {
		if n != w {
			others = append(others, n.Name)
		}
	}
	r, other := others[0], others[1]
	require.Eventually(t, func() bool { s := nodeStats(t, plain, r); return s.LagKnown && s.Lag == 0 },
		10*time.Second, 20*time.Millisecond, "the reader's queue seen empty")

	release, err := l.StallApply(ctx, l.Node(r), lab.AppDatabase+".gqueue")
	require.NoError(t, err)
	t.Cleanup(func() { _ = release() })
	for range 4 {
		_, err := fenced.ExecContext(ctx, "INSERT INTO gqueue (sid) VALUES (@@port)")
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		ws, err := l.Node(r).Wsrep(ctx)
		return err == nil && ws.RecvQueue > 2 && ws.LocalState == 4 && !ws.Desync
	}, 10*time.Second, 20*time.Millisecond, "write-sets queue on the stalled reader, which stays Synced")

	require.Eventually(t, func() bool { return nodeStats(t, fenced, r).Fenced }, 10*time.Second, 20*time.Millisecond)
	assert.True(t, nodeStats(t, fenced, r).Up, "fenced for reads, not down")
	assert.Equal(t, map[string]int{other: 40}, readsOn(t, ctx, l, fenced, 40), "reads on the reader that keeps up")
	require.Eventually(t, func() bool {
		s := nodeStats(t, plain, r)
		return s.LagKnown && s.Lag >= 300*time.Millisecond && !s.Fenced
	}, 10*time.Second, 20*time.Millisecond, "no limit: serving, lag since the queue was last empty")

	require.NoError(t, release())
	require.Eventually(t, func() bool { return !nodeStats(t, fenced, r).Fenced }, 10*time.Second, 20*time.Millisecond)
	assert.Positive(t, readsReach(t, ctx, l, fenced, others)[r], "reads on the reader again")
	assert.Equal(t, 6, galeraRows(t, ctx, l.Node(r), "SELECT COUNT(*) FROM gqueue"), "the reader applied the queue")
	require.Eventually(t, func() bool { s := nodeStats(t, plain, r); return s.LagKnown && s.Lag == 0 },
		10*time.Second, 20*time.Millisecond, "lag 0 once the queue is empty")
}
