//go:build tpcc

package tpcc_test

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math/rand/v2"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwshard/rwshard/internal/lab"
)

// The read-only mix is sysbench's oltp_read_only with --skip-trx=on
// (autocommit reads, which rwshard may send to replicas; inside BEGIN …
// COMMIT they would all go to the primary): per event, 10 point selects
// and one each of the simple, sum, order and distinct range selects over
// 100 consecutive ids, on a table shaped like sbtest1, with prepared
// statements (sysbench's default) on both sides.
const (
	pointSelects = 10
	rangeSize    = 100
	readsPerEvt  = pointSelects + 4
)

var readQueries = []string{
	"SELECT c FROM sbtest1 WHERE id = ?",
	"SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?",
	"SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?",
	"SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
	"SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
}

// TestReadHeavy runs the read-only mix through go-sql-driver/mysql to the
// primary and through rwshard over the primary and both replicas (where
// the reads go), in interleaved pairs, and reports reads per second, once
// per CPU placement of the servers (-read.placement):
//
//   - shared: the three servers and the client share every core. The
//     replicas add servers, not CPUs; reported, with no target.
//   - capped: every server gets the same CPU time, -read.cap CPUs, as if
//     on a machine of its own (capServers). The target (rwshard over two
//     replicas serves more reads per second than direct to one server)
//     is judged here.
//   - pinned: the primary and replica1 on one half of the CPUs, replica2
//     on the other (pinServers); reported, with no target. On two cores
//     it gives direct's client a core that rwshard's client shares with
//     a replica: where the client costs a third of a server, as on a
//     fast core, it measures that core, not the replicas.
func TestReadHeavy(t *testing.T) {
	l := rwLab.Get(t)
	t.Logf("read-only mix: %d rows, %d goroutines, %d pairs of %s (warm-up %s per side), placements %q, DSN parameters %q, rwshard's own %q; load average %s",
		*readRows, *readThreads, *readPairs, *readDuration, *readWarmup, *readPlacement, *dsnParams, *rwParams, loadAvg())
	names := strings.Split(*readPlacement, ",")
	for _, name := range names {
		if _, ok := placements[name]; !ok {
			t.Fatalf("-read.placement: %q is none of %s", name, strings.Join(slices.Sorted(maps.Keys(placements)), ", "))
		}
	}
	enableUserstat(t, l)
	loadSbtest(t, l, *readRows)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if place := placements[name]; place != nil {
				place(t, l)
			}
			readPairsRun(t, l, name == judgedPlacement)
		})
	}
}

// placements are the servers' CPU placements of the read-only mix, by
// name: what sets one up (nil: the servers as the lab started them).
var placements = map[string]func(*testing.T, *lab.Lab){
	"shared": nil,
	"pinned": pinServers,
	"capped": func(t *testing.T, l *lab.Lab) { capServers(t, l, *readCap) },
}

// judgedPlacement is where the read-only mix's target is judged.
const judgedPlacement = "capped"

// readPairsRun runs the warm-up and the pairs of the read-only mix in the
// servers' current placement and reports them; judged says whether the
// target applies to this placement.
func readPairsRun(t *testing.T, l *lab.Lab, judged bool) {
	if *readWarmup > 0 {
		for _, side := range pairOrder(0) {
			r := runReads(t, l, side, *readWarmup)
			t.Logf("warm-up %s: %.0f reads/s (not counted)", side, r.perSec())
		}
	}
	results := map[string][]readResult{}
	for p := range *readPairs {
		for _, side := range pairOrder(p) {
			before := snapshot(t, l)
			r := runReads(t, l, side, *readDuration)
			after := snapshot(t, l)
			var per, cmds []string
			for i, n := range l.Nodes() {
				d := counterDelta(before[i], after[i])
				per = append(per, fmt.Sprintf("%s %d", n.Name, d["app.SELECT_COMMANDS"]))
				r.serverReads = append(r.serverReads, d["app.SELECT_COMMANDS"])
				r.serverCPU += time.Duration(d[serverCPUKey]) * time.Microsecond
				cmds = append(cmds, fmt.Sprintf("%s %s", n.Name, perRead(d, r.reads)))
			}
			results[side] = append(results[side], r)
			t.Logf("pair %d %-7s %8.0f reads/s (%d events, %d errors), CPU/read %4.1f µs client + %4.1f µs servers, event p50 %.2f ms, p99 %.2f ms, load %s; SELECTs by the application user per server: %s%s",
				p+1, side, r.perSec(), r.events, r.errs, us(r.cpuPerRead()), us(r.serverCPUPerRead()), ms(quantile(r.lat, 0.50)), ms(quantile(r.lat, 0.99)),
				loadAvg(), strings.Join(per, ", "), r.where)
			t.Logf("pair %d %-7s server commands per read: %s", p+1, side, strings.Join(cmds, "; "))
			checkReadPlacement(t, l, p, r)
		}
	}
	var ratios, cpu, srv []float64
	for i := range results[direct] {
		d, r := results[direct][i], results[viaRW][i]
		ratios = append(ratios, r.perSec()/d.perSec())
		cpu = append(cpu, float64(r.cpuPerRead())/float64(d.cpuPerRead()))
		srv = append(srv, float64(r.serverCPUPerRead())/float64(d.serverCPUPerRead()))
		t.Logf("pair %d: reads/s direct to the primary %.0f, rwshard over 2 replicas %.0f: ratio %.3f; CPU/read ratio client %.3f, servers %.3f",
			i+1, d.perSec(), r.perSec(), ratios[i], cpu[i], srv[i])
	}
	for _, side := range []string{direct, viaRW} {
		var rs, p50, p99 []float64
		for _, r := range results[side] {
			rs = append(rs, r.perSec())
			p50 = append(p50, ms(quantile(r.lat, 0.50)))
			p99 = append(p99, ms(quantile(r.lat, 0.99)))
		}
		t.Logf("%-7s median %.0f reads/s, event p50 %.2f ms, p99 %.2f ms", side, median(rs), median(p50), median(p99))
	}
	t.Logf("read-only mix CPU per read rwshard/direct, median of %d pairs: client %.3f, servers %.3f", len(cpu), median(cpu), median(srv))
	m := median(ratios)
	what := fmt.Sprintf("read-only mix reads/s rwshard (2 replicas)/direct (primary), median of %d pairs: %.3f", len(ratios), m)
	if judged {
		verdict(t, what, m > minReadsRatio, fmt.Sprintf("> %.2f", minReadsRatio))
	} else {
		t.Logf("%s (no target here: judged in the %s placement)", what, judgedPlacement)
	}
	t.Logf("load average at end: %s", loadAvg())
}

// loadSbtest creates sbtest1 with rows rows on the primary, as sysbench's
// prepare would (deterministic contents here), waits for the replicas and
// reads the table once on every node so that the runs start warm.
func loadSbtest(t *testing.T, l *lab.Lab, rows int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	db := nodeDB(t, l.Primary(), "")
	for _, q := range []string{
		"DROP TABLE IF EXISTS sbtest1",
		`CREATE TABLE sbtest1 (
			id INT NOT NULL AUTO_INCREMENT,
			k INT NOT NULL DEFAULT 0,
			c CHAR(120) NOT NULL DEFAULT '',
			pad CHAR(60) NOT NULL DEFAULT '',
			PRIMARY KEY (id),
			KEY k_1 (k))`,
		fmt.Sprintf(`INSERT INTO sbtest1 (id, k, c, pad)
			SELECT seq, 1 + (seq * 7919) %% %d,
				LEFT(CONCAT(MD5(seq), MD5(seq + 1), MD5(seq + 2), MD5(seq + 3)), 119),
				LEFT(CONCAT(MD5(-seq), MD5(-seq - 1)), 59)
			FROM seq_1_to_%d`, rows, rows),
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	syncReplicas(t, l, replicaTimeout)
	for _, n := range l.Nodes() {
		var got int
		var sum sql.NullString
		if err := n.Admin().QueryRowContext(ctx, "SELECT COUNT(*), SUM(LENGTH(c)) FROM "+lab.AppDatabase+".sbtest1").Scan(&got, &sum); err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		if got != rows {
			t.Fatalf("%s: sbtest1 has %d rows, want %d", n.Name, got, rows)
		}
	}
}

// readResult is one run of the read-only mix on one side.
type readResult struct {
	side                string
	wall, cpu           time.Duration
	events, reads, errs int64
	lat                 []time.Duration // per event, sorted
	where               string
	// rwshard: reads it counted, and those the primary served.
	rwReads, rwPrimaryReads uint64
	// the application user's SELECT_COMMANDS per node, l.Nodes() order
	serverReads []int64
	// CPU time of the three servers over the run (the idle ones' too)
	serverCPU time.Duration
}

func (r readResult) perSec() float64 { return float64(r.reads) / r.wall.Seconds() }

func (r readResult) serverCPUPerRead() time.Duration {
	if r.reads == 0 {
		return 0
	}
	return r.serverCPU / time.Duration(r.reads)
}

func (r readResult) cpuPerRead() time.Duration {
	if r.reads == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.reads)
}

// runReads runs the mix for d through one side with a fresh *sql.DB and
// fresh prepared statements; the clock starts once every goroutine has
// run one event (connections open, statements prepared).
func runReads(t *testing.T, l *lab.Lab, side string, d time.Duration) readResult {
	t.Helper()
	n := *readThreads
	db := openSide(t, l, side, *dsnParams, n)
	defer db.Close()
	ctx := context.Background()
	stmts := make([]*sql.Stmt, len(readQueries))
	for i, q := range readQueries {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			t.Fatalf("%s: prepare %s: %v", side, q, err)
		}
		defer st.Close()
		stmts[i] = st
	}
	rows := *readRows
	var ready, start sync.WaitGroup
	ready.Add(n)
	start.Add(1)
	var deadline time.Time
	lat := make([][]time.Duration, n)
	var events, errs atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), uint64(time.Now().UnixNano())))
			if err := readEvent(ctx, stmts, rng, rows); err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
			ready.Done()
			start.Wait()
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := readEvent(ctx, stmts, rng, rows); err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				lat[g] = append(lat[g], time.Since(t0))
				events.Add(1)
			}
		})
	}
	ready.Wait()
	var rw0 struct{ reads, primary uint64 }
	if side == viaRW {
		s := rwStats(t, db)
		rw0.reads, rw0.primary = s.Reads, s.PrimaryReads
	}
	stop := profile(t, side)
	cpu0 := cpuTime()
	t0 := time.Now()
	deadline = t0.Add(d)
	start.Done()
	wg.Wait()
	stop()
	r := readResult{side: side, wall: time.Since(t0), cpu: cpuTime() - cpu0, events: events.Load(), errs: errs.Load()}
	r.reads = r.events * readsPerEvt
	for _, l := range lat {
		r.lat = append(r.lat, l...)
	}
	slices.Sort(r.lat)
	if side == viaRW {
		s := rwStats(t, db)
		r.rwReads, r.rwPrimaryReads = s.Reads-rw0.reads, s.PrimaryReads-rw0.primary
		var b strings.Builder
		fmt.Fprintf(&b, "; rwshard: %d reads, %d on the primary; statements per node:", r.rwReads, r.rwPrimaryReads)
		for _, n := range s.Nodes {
			fmt.Fprintf(&b, " %s %d", n.Name, n.Queries)
		}
		r.where = b.String()
	}
	if e := firstErr.Load(); e != nil {
		t.Errorf("%s: %d failed events; first: %v", side, r.errs, *e)
	}
	return r
}

// readEvent is one sysbench oltp_read_only event (skip_trx).
func readEvent(ctx context.Context, stmts []*sql.Stmt, rng *rand.Rand, rows int) error {
	for range pointSelects {
		if err := scanAll(stmts[0].QueryContext(ctx, 1+rng.IntN(rows))); err != nil {
			return err
		}
	}
	for _, st := range stmts[1:] {
		lo := 1 + rng.IntN(rows-rangeSize+1)
		if err := scanAll(st.QueryContext(ctx, lo, lo+rangeSize-1)); err != nil {
			return err
		}
	}
	return nil
}

// scanAll reads every row of a one-column result.
func scanAll(rows *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	var v sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return err
		}
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	return rows.Close()
}

// checkReadPlacement fails the test unless the servers' own statistics
// put the run's reads where its side sends them: all on the primary for
// direct, all on the replicas (about evenly) for rwshard, whose own count
// must agree.
func checkReadPlacement(t *testing.T, l *lab.Lab, p int, r readResult) {
	t.Helper()
	var onPrimary, onReplicas int64
	var replicaReads []int64
	for i, n := range l.Nodes() {
		if n == l.Primary() {
			onPrimary = r.serverReads[i]
		} else {
			onReplicas += r.serverReads[i]
			replicaReads = append(replicaReads, r.serverReads[i])
		}
	}
	// Each side's first events ran before the clock (and rwshard's health
	// probes are SELECTs too): the servers see a few more than counted.
	slack := int64(*readThreads)*readsPerEvt + 1000
	switch r.side {
	case direct:
		if onPrimary < r.reads || onReplicas > 0 {
			t.Errorf("pair %d direct: %d reads, the primary ran %d SELECTs, the replicas %d", p+1, r.reads, onPrimary, onReplicas)
		}
	case viaRW:
		if r.rwPrimaryReads != 0 || onPrimary > slack || onReplicas < r.reads {
			t.Errorf("pair %d rwshard: %d reads (%d on the primary by rwshard's count); SELECTs run by the primary %d, by the replicas %d",
				p+1, r.reads, r.rwPrimaryReads, onPrimary, onReplicas)
		}
		if lo, hi := slices.Min(replicaReads), slices.Max(replicaReads); float64(lo) < 0.8*float64(hi) {
			t.Errorf("pair %d rwshard: replicas ran %v SELECTs: not balanced within 20%%", p+1, replicaReads)
		}
	}
}

// pinServers emulates servers on machines of their own, as far as one
// machine allows: the primary and replica1 on the first half of the CPUs,
// replica2 on the other half (taskset, every thread). In the read-only
// mix the direct side's one server then has half of the CPUs, rwshard's
// two replicas all of them (the idle server of each side shares its half
// with a busy one); the client is not pinned. Undone when the test ends.
func pinServers(t *testing.T, l *lab.Lab) {
	t.Helper()
	cpus := runtime.NumCPU()
	if cpus < 2 {
		t.Fatalf("the pinned placement needs 2 CPUs, have %d", cpus)
	}
	half := fmt.Sprintf("0-%d", cpus/2-1)
	other := fmt.Sprintf("%d-%d", cpus/2, cpus-1)
	all := fmt.Sprintf("0-%d", cpus-1)
	sets := map[string]string{l.Primary().Name: half, l.Replicas()[0].Name: half, l.Replicas()[1].Name: other}
	for _, n := range l.Nodes() {
		pid := serverPID(t, n)
		taskset := func(set string) error {
			out, err := exec.Command("taskset", "-a", "-p", "-c", set, pid).CombinedOutput()
			if err != nil {
				return fmt.Errorf("taskset %s %s: %v: %s", set, pid, err, out)
			}
			return nil
		}
		if err := taskset(sets[n.Name]); err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		t.Cleanup(func() {
			if err := taskset(all); err != nil {
				t.Logf("%s: %v", n.Name, err)
			}
		})
		t.Logf("%s (pid %s) pinned to CPUs %s", n.Name, pid, sets[n.Name])
	}
}

// perRead shows a node's command counters over a run per read of the run,
// the non-zero ones.
func perRead(d map[string]int64, reads int64) string {
	var out []string
	for _, k := range []string{"Questions", "Com_stmt_execute", "Com_stmt_prepare", "Com_stmt_close", "Com_stmt_reset", "Com_select", "Connections"} {
		if d[k] != 0 {
			out = append(out, fmt.Sprintf("%s %.3f", k, float64(d[k])/float64(reads)))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
