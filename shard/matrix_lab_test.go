package shard_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
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

// The cross-feature fault matrix: defects live where features meet, so
// the statement path runs under each fault with each consistency mode,
// transaction replay on and off, plain read/write splitting and sharded,
// 8 writers and 8 readers, as the GRANT ALL ON app.* user, and asserts
// the invariants:
//
//   - no acknowledged write lost, none applied twice;
//   - every failed write typed (ErrPrimaryUnavailable, ErrOutcomeUnknown,
//     ErrSessionLost, ErrReplayRefused), never a bare driver, server or
//     context error;
//   - no failed read (a replica is up in every cell);
//   - no stale read where read-your-writes is provable (causal and
//     session modes, the primary reachable);
//   - no write run on a node taken as a replica;
//   - every read ran where its plan said (Explain's targets) or on its
//     plan's fallback.
//
// The full product (3 × 2 × 2 × 4 = 48 cells) would take CI's time; the
// 12 cells below cover every pair of two features' values (each
// consistency mode with each fault, and every other pair at least once).
// The per-node counts against the servers' Com_* counters are checked
// where the servers' counters are rwshard's alone, without faults
// (TestLabMetricsCountFailedReads in the driver's module).

type cell struct {
	consistency string // causal, session, eventual
	replay      bool
	sharded     bool
	fault       string // kill, switchover, silent, lag
}

func (c cell) name() string {
	topo := "split"
	if c.sharded {
		topo = "sharded"
	}
	return fmt.Sprintf("%s/replay=%v/%s/%s", c.consistency, c.replay, topo, c.fault)
}

// matrixCells is a pairwise cover of the four factors.
func matrixCells() []cell {
	faults := []string{"kill", "switchover", "silent", "lag"}
	// replay and sharded by consistency (row) and fault (column).
	plan := [3][4][2]bool{
		{{false, false}, {true, true}, {false, true}, {true, false}}, // causal
		{{true, false}, {false, true}, {true, true}, {false, false}}, // session
		{{false, true}, {true, false}, {false, false}, {true, true}}, // eventual
	}
	var out []cell
	for i, cons := range []string{"causal", "session", "eventual"} {
		for j, f := range faults {
			out = append(out, cell{consistency: cons, replay: plan[i][j][0], sharded: plan[i][j][1], fault: f})
		}
	}
	return out
}

func TestMatrixCellsArePairwise(t *testing.T) {
	cells := matrixCells()
	seen := map[string]bool{}
	for _, c := range cells {
		vals := []string{"c=" + c.consistency, fmt.Sprint("r=", c.replay), fmt.Sprint("s=", c.sharded), "f=" + c.fault}
		for i := range vals {
			for j := i + 1; j < len(vals); j++ {
				seen[vals[i]+","+vals[j]] = true
			}
		}
	}
	// 3×2 + 3×2 + 3×4 + 2×2 + 2×4 + 2×4 pairs.
	assert.Len(t, seen, 6+6+12+4+8+8)
	assert.Len(t, cells, 12)
}

func TestLabFaultMatrix(t *testing.T) {
	for _, c := range matrixCells() {
		t.Run(c.name(), func(t *testing.T) { runCell(t, c) })
	}
}

// statements records what the tracer saw.
type statements struct {
	mu         sync.Mutex
	violations []string
	reads      int
	fallback   int
	degraded   int
}

func (s *statements) StatementStart(ctx context.Context, _ rwshard.StatementStart) context.Context {
	return ctx
}

// readProbe, in a read's context, receives the read's record.
type readProbe struct{ reason, node string }

type probeKey struct{}

var fallbackReasons = map[string]bool{"read-your-writes": true, "no-healthy-replica": true, "max-lag": true,
	"primary-away": true, "starting": true, "stored-function": true}

func (s *statements) StatementEnd(ctx context.Context, e rwshard.StatementEnd) {
	if p, ok := ctx.Value(probeKey{}).(*readProbe); ok && e.Kind == "read" {
		p.reason, p.node = e.Reason, e.Node
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case e.Kind == "write" && e.Err == nil && e.Role == "replica":
		s.violations = append(s.violations, fmt.Sprintf("a write ran on %s, a replica: %s", e.Node, e.Redacted))
	case e.Kind == "read" && e.Err == nil && len(e.Targets) > 0:
		s.reads++
		in := false
		for _, n := range e.Targets {
			in = in || n == e.Node
		}
		switch {
		case in:
		case fallbackReasons[e.Reason]:
			s.fallback++
		default:
			s.violations = append(s.violations, fmt.Sprintf("a read ran on %s (%s), outside its plan's targets %v", e.Node, e.Reason, e.Targets))
		}
		if e.Reason == "primary-away" {
			s.degraded++
		}
	}
}

func (s *statements) add(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.violations) < 50 {
		s.violations = append(s.violations, fmt.Sprintf(format, args...))
	}
}

// typed reports a write error of one of rwshard's own kinds.
func typed(err error) bool {
	return errors.Is(err, rwshard.ErrPrimaryUnavailable) || errors.Is(err, rwshard.ErrOutcomeUnknown) ||
		errors.Is(err, rwshard.ErrSessionLost) || errors.Is(err, rwshard.ErrReplayRefused)
}

// rowKey identifies one row a writer wrote.
type rowKey struct{ w, seq int }

func runCell(t *testing.T, c cell) {
	o := lab.RW()
	if c.sharded {
		o = lab.Sharded()
	}
	l := labtest.Fresh(t, o)
	ctx := labtest.Ctx(t, 3*time.Minute)
	g := l.Groups[0] // the faulted group
	victimReplica := g.Replicas()[0]

	addr := map[*lab.Node]string{}
	var proxy *lab.Proxy
	if c.fault == "silent" {
		proxy = labtest.Proxy(t, victimReplica.Addr())
		addr[victimReplica] = proxy.Addr()
	}
	dsnOf := func(n *lab.Node) string {
		a := n.Addr()
		if p, ok := addr[n]; ok {
			a = p
		}
		return fmt.Sprintf("%s:%s@tcp(%s)/%s", lab.PlainUser, lab.PlainPassword, a, lab.AppDatabase)
	}
	params := "rwshard.driverLog=off&rwshard.probeInterval=250ms&rwshard.probeTimeout=200ms&rwshard.connectTimeout=1s&rwshard.writePause=4s" +
		"&rwshard.causalTimeout=500ms&rwshard.consistency=" + c.consistency + fmt.Sprintf("&rwshard.txReplay=%v", c.replay)
	var dsn, table, insert, check string
	if c.sharded {
		rules := filepath.Join(t.TempDir(), "rules.yaml")
		var ds []string
		for _, gr := range l.Groups {
			ds = append(ds, fmt.Sprintf("  %s: {primary: %q, replicas: [%q]}", gr.Name, dsnOf(gr.Primary()), dsnOf(gr.Replicas()[0])))
		}
		require.NoError(t, os.WriteFile(rules, []byte("dataSources:\n"+strings.Join(ds, "\n")+`
defaultDataSource: ds_0
tables:
  mx:
    dataNodes: ds_${0..1}.mx
    databaseStrategy: {column: w, algorithm: by_w}
algorithms:
  by_w: {type: MOD, props: {sharding-count: 2}}
`), 0o600))
		dsn = "/app?rwshard.rulesFile=" + url.QueryEscape(rules) + "&" + params
	} else {
		hosts := []string{"tcp(" + g.Primary().Addr() + ")"}
		for _, r := range g.Replicas() {
			a := r.Addr()
			if p, ok := addr[r]; ok {
				a = p
			}
			hosts = append(hosts, "tcp("+a+")")
		}
		dsn = fmt.Sprintf("%s:%s@%s/%s?%s", lab.PlainUser, lab.PlainPassword, strings.Join(hosts, ","), lab.AppDatabase, params)
	}
	table = "CREATE TABLE mx (id BIGINT AUTO_INCREMENT PRIMARY KEY, w INT NOT NULL, seq INT NOT NULL, KEY (w, seq))"
	insert = "INSERT INTO mx (w, seq) VALUES (?, ?)"
	check = "SELECT COUNT(*) FROM mx WHERE w = ? AND seq = ?"

	rec := &statements{}
	cfg, err := rwshard.ParseDSN(dsn)
	require.NoError(t, err)
	cfg.Tracer = rec
	cn, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(cn)
	defer db.Close()
	require.NoError(t, cn.Ready(ctx))
	_, err = db.ExecContext(ctx, table)
	require.NoError(t, err)
	require.NoError(t, l.Sync(ctx, 10*time.Second))
	if c.fault == "lag" {
		require.NoError(t, l.Lag(ctx, victimReplica, 2*time.Second))
		time.Sleep(600 * time.Millisecond) // the probes see it
	}

	var (
		mu         sync.Mutex
		acked      = map[rowKey]bool{}
		unknown    = map[rowKey]bool{}
		writes     atomic.Int64
		failed     atomic.Int64
		reads      atomic.Int64
		staleCheck atomic.Int64
	)
	ack := func(keys ...rowKey) {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			acked[k] = true
		}
	}
	maybe := func(keys ...rowKey) {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			unknown[k] = true
		}
	}
	failedWrite := func(err error, keys ...rowKey) {
		failed.Add(1)
		if !typed(err) {
			rec.add("an untyped write error: %v", err)
		}
		if errors.Is(err, rwshard.ErrOutcomeUnknown) {
			maybe(keys...)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for seq := 0; ; seq += 2 {
				select {
				case <-stop:
					return
				default:
				}
				k1, k2 := rowKey{w, seq}, rowKey{w, seq + 1}
				writes.Add(1)
				if seq%4 == 0 { // autocommit
					if _, err := db.ExecContext(ctx, insert, w, seq); err != nil {
						failedWrite(err, k1)
						continue
					}
					ack(k1)
					continue
				}
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					failedWrite(err)
					continue
				}
				if _, err = tx.ExecContext(ctx, insert, w, seq); err == nil {
					_, err = tx.ExecContext(ctx, insert, w, seq+1)
				}
				if err != nil {
					_ = tx.Rollback()
					failedWrite(err)
					continue
				}
				if err := tx.Commit(); err != nil {
					failedWrite(err, k1, k2)
					continue
				}
				ack(k1, k2)
			}
		})
	}
	for r := range 8 {
		w := 100 + r
		wg.Go(func() {
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				var n int
				reads.Add(1)
				if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM mx WHERE w = ?", r).Scan(&n); err != nil {
					rec.add("a read failed: %v", err)
				}
				// Read your own write: after an acknowledged write, the next
				// read sees it unless the primary was away (primary-away)
				// or consistency is eventual.
				writes.Add(1)
				k := rowKey{w, seq}
				if _, err := db.ExecContext(ctx, insert, w, seq); err != nil {
					failedWrite(err, k)
					continue
				}
				ack(k)
				probe := &readProbe{}
				reads.Add(1)
				if err := db.QueryRowContext(context.WithValue(ctx, probeKey{}, probe), check, w, seq).Scan(&n); err != nil {
					rec.add("a read after a write failed: %v", err)
					continue
				}
				if n != 1 && c.consistency != "eventual" && probe.reason != "primary-away" {
					rec.add("stale read of (%d, %d) on %s (%s)", w, seq, probe.node, probe.reason)
				}
				staleCheck.Add(1)
			}
		})
	}

	time.Sleep(1500 * time.Millisecond)
	faultAt := time.Now()
	switch c.fault {
	case "kill":
		require.NoError(t, l.Kill(g.Primary()))
		time.Sleep(2 * time.Second)
		require.NoError(t, l.Restart(ctx, g.Primary()))
	case "switchover":
		require.NoError(t, l.Switchover(ctx, victimReplica))
	case "silent":
		proxy.Silence()
		time.Sleep(2 * time.Second)
		proxy.Resume()
	}
	time.Sleep(2500 * time.Millisecond)
	close(stop)
	wg.Wait()
	if c.fault == "lag" {
		require.NoError(t, l.Lag(ctx, victimReplica, 0))
	}

	// What the primaries hold.
	got := map[rowKey]int{}
	for _, gr := range l.Groups {
		rows, err := labtest.Direct(t, gr.Primary(), "").QueryContext(ctx, "SELECT w, seq, COUNT(*) FROM mx GROUP BY w, seq")
		require.NoError(t, err)
		for rows.Next() {
			var k rowKey
			var n int
			require.NoError(t, rows.Scan(&k.w, &k.seq, &n))
			got[k] += n
		}
		require.NoError(t, rows.Close())
	}
	lost, dup := 0, 0
	for k := range acked {
		if got[k] == 0 {
			lost++
		}
	}
	for k, n := range got {
		if n > 1 {
			dup++
			rec.add("(%d, %d) applied %d times", k.w, k.seq, n)
		}
		if !acked[k] && !unknown[k] {
			rec.add("(%d, %d) applied without being acknowledged or of unknown outcome", k.w, k.seq)
		}
	}
	t.Logf("%s: %d writes (%d failed, typed), %d reads (%d checked for read-your-writes, %d on a fallback, %d on the most advanced replica while the primary was away), %d rows acknowledged, %d lost, %d duplicated; fault at %s",
		c.name(), writes.Load(), failed.Load(), reads.Load(), staleCheck.Load(), rec.fallback, rec.degraded, len(acked), lost, dup, faultAt.Format("15:04:05.000"))
	assert.Zero(t, lost, "acknowledged writes lost")
	assert.Positive(t, len(acked), "writes acknowledged")
	assert.Positive(t, staleCheck.Load(), "reads after writes checked")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Empty(t, rec.violations)
}
