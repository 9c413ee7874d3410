package shard

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math/bits"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// The crash-recovery tests of XA commits run a transfer workload over
// t_order as accounts: account i is the row order_id = user_id = i, in
// ds_(i%2).t_order_(i%2), holding amount; every transfer moves money
// between an even and an odd account, two data sources. Everything runs
// as lab.PlainUser (GRANT ALL ON app.* and nothing more).

const (
	xaAccounts = 8
	xaOpening  = 1000
	// xaChildEnv makes TestLabXARecovery the child process of its
	// process-kill part: the value is the DSN, xaKillEnv the step to
	// stop at (see xaChild).
	xaChildEnv = "RWSHARD_XA_CHILD_DSN"
	xaKillEnv  = "RWSHARD_XA_CHILD_KILL"
	// xaRecoverEvery is the recovery interval (and bound) of the tests'
	// recovering connectors.
	xaRecoverEvery = 500 * time.Millisecond
)

// TestLabXARecovery: XA commits that recover themselves, on one lab for
// all its parts: the decision rows, the rules recovery follows, the Go
// process killed at each step of the commit and at random, shards'
// primaries killed mid-commit, and rollbacks that survive a crash.
func TestLabXARecovery(t *testing.T) {
	if dsn := os.Getenv(xaChildEnv); dsn != "" {
		xaChild(dsn, os.Getenv(xaKillEnv))
		return
	}
	l := labtest.Fresh(t, lab.Sharded())
	ctx := labtest.Ctx(t, 4*time.Minute)
	base := "/app?rwshard.rulesFile=" + url.QueryEscape(labtest.PlainRulesFile(t, l)) +
		"&rwshard.xa=true&rwshard.probeInterval=250ms"
	x := &xaLab{t: t, l: l, ctx: ctx, base: base, direct: map[*lab.Node]*sql.DB{}}
	x.setup()

	t.Run("decision-rows", x.decisionRows)
	t.Run("young-branches", x.youngBranches)
	t.Run("process-kill", x.processKill)
	t.Run("shard-kill", x.shardKill)
	t.Run("three-sources", x.threeSources)
	t.Run("rollback-durable", x.rollbackDurable)
}

type xaLab struct {
	t      *testing.T
	l      *lab.Lab
	ctx    context.Context
	base   string // the sharded DSN, without xaRecoverInterval
	direct map[*lab.Node]*sql.DB
	want   [xaAccounts + 1]int64 // the balance each account must have
}

// db returns a go-sql-driver handle on node n as the plain user.
func (x *xaLab) db(n *lab.Node) *sql.DB {
	if x.direct[n] == nil {
		db, err := sql.Open("mysql", labtest.PlainNodeDSN(n))
		require.NoError(x.t, err)
		x.t.Cleanup(func() { db.Close() })
		x.direct[n] = db
	}
	return x.direct[n]
}

// open opens the sharded DSN with a recovery interval (0: none).
func (x *xaLab) open(t *testing.T, recoverEvery time.Duration) *sql.DB {
	db, err := sql.Open(rwshard.DriverName, x.base+"&rwshard.xaRecoverInterval="+recoverEvery.String())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func (x *xaLab) setup() {
	db := x.open(x.t, 0)
	_, err := db.ExecContext(x.ctx, "CREATE TABLE t_order (order_id BIGINT PRIMARY KEY, user_id INT NOT NULL, amount BIGINT NOT NULL)")
	require.NoError(x.t, err)
	for i := 1; i <= xaAccounts; i++ {
		_, err := db.ExecContext(x.ctx, "INSERT INTO t_order (order_id, user_id, amount) VALUES (?, ?, ?)", i, i, xaOpening)
		require.NoError(x.t, err)
		x.want[i] = xaOpening
	}
}

// balances reads every account on the primaries directly, or on the
// replicas.
func (x *xaLab) balances(t *testing.T, replicas bool) (got [xaAccounts + 1]int64) {
	t.Helper()
	for _, g := range x.l.Groups {
		n := g.Primary()
		if replicas {
			n = g.Replicas()[0]
		}
		rows, err := x.db(n).QueryContext(x.ctx, "SELECT order_id, amount FROM t_order_0 UNION ALL SELECT order_id, amount FROM t_order_1")
		require.NoError(t, err)
		for rows.Next() {
			var id int
			var amount int64
			require.NoError(t, rows.Scan(&id, &amount))
			got[id] = amount
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	return got
}

// checkBalances asserts every account holds what the transfers that
// committed left it, and so the total is conserved.
func (x *xaLab) checkBalances(t *testing.T, what string) {
	t.Helper()
	got := x.balances(t, false)
	var total int64
	for _, b := range got {
		total += b
	}
	assert.EqualValues(t, xaAccounts*xaOpening, total, "%s: money created or destroyed", what)
	assert.Equal(t, x.want, got, "%s: balances", what)
}

// prepared lists the prepared rwshard XA branches of every primary,
// "ds:gtrid".
func (x *xaLab) prepared(t *testing.T) []string {
	t.Helper()
	return slices.DeleteFunc(x.allPrepared(t), func(s string) bool {
		_, gt, _ := strings.Cut(s, ":")
		_, ok := parseGTRID(gt)
		return !ok
	})
}

// allPrepared lists the prepared XA branches of every primary.
func (x *xaLab) allPrepared(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, g := range x.l.Groups {
		rows, err := x.db(g.Primary()).QueryContext(x.ctx, "XA RECOVER")
		require.NoError(t, err)
		for rows.Next() {
			var format, gl, bl int
			var data []byte
			require.NoError(t, rows.Scan(&format, &gl, &bl, &data))
			out = append(out, g.Name+":"+string(data[:gl]))
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	return out
}

// waitRecovered waits until no primary lists a prepared branch and
// returns how long that took.
func (x *xaLab) waitRecovered(t *testing.T, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		left := x.prepared(t)
		if len(left) == 0 {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("still prepared after %v: %v", limit, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// decisionRows counts the rows of rwshard_xa_decision on each primary.
func (x *xaLab) decisionRowCount(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, g := range x.l.Groups {
		var n int
		err := x.db(g.Primary()).QueryRowContext(x.ctx, "SELECT COUNT(*) FROM "+xaDecisionTable+" WHERE gtrid <> 'rwshard:durable'").Scan(&n)
		if !noSuchTable(err) {
			require.NoError(t, err)
		}
		out[g.Name] = n
	}
	return out
}

// transfer moves amount from account from to account to in one XA
// transaction; the data source of from holds the decision.
func transfer(ctx context.Context, db *sql.DB, from, to int, amount int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, u := range []struct {
		id    int
		delta int64
	}{{from, -amount}, {to, amount}} {
		if _, err := tx.ExecContext(ctx, "UPDATE t_order SET amount = amount + ? WHERE user_id = ? AND order_id = ?", u.delta, u.id, u.id); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// xaBranchAt prepares, as the plain user, a branch of transaction gt on
// data source ds (group g's primary) running stmts, and leaves it
// prepared. With keep, the session that prepared it stays open (its
// coordinator is alive) until the returned func closes it.
func (x *xaLab) xaBranchAt(t *testing.T, g *lab.Group, gt, ds string, commit bool, stmts ...string) (closeSession func()) {
	t.Helper()
	db, err := sql.Open("mysql", labtest.PlainNodeDSN(g.Primary()))
	require.NoError(t, err)
	id := (xaBranch{formatID: 1, gtrid: gt, bqual: ds}).sql()
	all := append(append([]string{"XA START " + id}, stmts...), "XA END "+id, "XA PREPARE "+id)
	if commit {
		all = append(all, "XA COMMIT "+id)
	}
	cn, err := db.Conn(x.ctx)
	require.NoError(t, err)
	for _, q := range all {
		_, err := cn.ExecContext(x.ctx, q)
		require.NoError(t, err, q)
	}
	var session int64
	require.NoError(t, cn.QueryRowContext(x.ctx, "SELECT CONNECTION_ID()").Scan(&session))
	return func() {
		cn.Close()
		db.Close()
		// The server lets the branch go when it has seen the session end.
		for {
			var n int
			require.NoError(t, g.Primary().Admin().QueryRowContext(x.ctx,
				"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", session).Scan(&n))
			if n == 0 {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func (x *xaLab) group(ds string) *lab.Group {
	for _, g := range x.l.Groups {
		if g.Name == ds {
			return g
		}
	}
	x.t.Fatalf("no group %s", ds)
	return nil
}

// recoverer opens a connector with recovery off and returns its
// recovery, to run passes by hand, with a clock shifted by skew.
func (x *xaLab) recoverer(t *testing.T, bound, skew time.Duration) *xaRecovery {
	cfg, err := rwshard.ParseDSN(x.base + "&rwshard.xaRecoverInterval=0")
	require.NoError(t, err)
	sc, err := open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { sc.Close() })
	r := newXARecovery(sc.(*connector), bound)
	r.now = func() time.Time { return time.Now().Add(skew) }
	return r
}

// A branch younger than the bound is left alone, however many passes
// see it, and so is one whose decision branch a live session still holds
// prepared; a branch first seen is left for one pass. Once old, a
// transaction whose decision branch is prepared is rolled back, one
// whose decision row is committed is committed.
func (x *xaLab) youngBranches(t *testing.T) {
	ds0, ds1 := x.group("ds_0"), x.group("ds_1")
	debit := "UPDATE t_order_0 SET amount = amount - 5 WHERE order_id = 2"
	credit := "UPDATE t_order_1 SET amount = amount + 5 WHERE order_id = 1"

	// Another transaction manager's branch: never touched.
	x.xaBranchAt(t, ds0, "tm-other-1", "b1", false)()
	defer func() {
		// An empty branch: the server answers its rollback with XA_RBROLLBACK.
		err := ds0.Primary().Exec(x.ctx, "XA ROLLBACK 'tm-other-1','b1'")
		if !serverRolledBack(err) {
			require.NoError(t, err)
		}
	}()

	// Young: both branches prepared, the decision's (ds_0) without a row.
	gt := newXIDAt(time.Now()) + ":ds_0"
	x.xaBranchAt(t, ds0, gt, "ds_0", false, debit)()
	x.xaBranchAt(t, ds1, gt, "ds_1", false, credit)()
	r := x.recoverer(t, time.Minute, 0)
	for range 3 {
		p := r.pass(x.ctx)
		assert.Equal(t, xaPass{Waiting: 2}, p, "a young transaction")
	}
	assert.Len(t, x.prepared(t), 2)

	// What `rwshard check` reports: every rwshard branch older than the
	// bound asked, under its own data source, and the other branch.
	cfg, err := rwshard.ParseDSN(x.base)
	require.NoError(t, err)
	bs, err := PreparedBranches(x.ctx, cfg, 0)
	require.NoError(t, err)
	slices.SortFunc(bs, func(a, b XABranch) int { return strings.Compare(a.DataSource+a.BQual, b.DataSource+b.BQual) })
	g, _ := parseGTRID(gt)
	assert.Equal(t, []XABranch{
		{DataSource: "ds_0", FormatID: 1, GTRID: "tm-other-1", BQual: "b1"},
		{DataSource: "ds_0", FormatID: 1, GTRID: gt, BQual: "ds_0", Rwshard: true, Decision: "ds_0", Started: g.started},
		{DataSource: "ds_1", FormatID: 1, GTRID: gt, BQual: "ds_1", Rwshard: true, Decision: "ds_0", Started: g.started},
	}, bs)
	bs, err = PreparedBranches(x.ctx, cfg, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, []XABranch{{DataSource: "ds_0", FormatID: 1, GTRID: "tm-other-1", BQual: "b1"}}, bs, "older than a minute")
	// A minute later by the clock: old and seen, rolled back (no row).
	r.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	assert.Equal(t, xaPass{RolledBack: 2}, r.pass(x.ctx))
	assert.Empty(t, x.prepared(t))
	x.checkBalances(t, "young then rolled back")

	// Old from the start (a clock ahead, or a restart): left for one
	// pass. The decision branch is committed with its row: commit.
	require.NoError(t, ds0.Primary().Exec(x.ctx, "USE app; "+xaDecisionDDL))
	gt = newXIDAt(time.Now().Add(-2*time.Minute)) + ":ds_0"
	x.xaBranchAt(t, ds0, gt, "ds_0", true, debit,
		"INSERT INTO "+xaDecisionTable+" (gtrid) VALUES ('"+gt+"')")()
	x.xaBranchAt(t, ds1, gt, "ds_1", false, credit)()
	r = x.recoverer(t, time.Minute, 0)
	assert.Equal(t, xaPass{Waiting: 1}, r.pass(x.ctx), "first seen")
	assert.Equal(t, xaPass{Committed: 1}, r.pass(x.ctx), "decision row committed")
	assert.Empty(t, x.prepared(t))
	x.want[2] -= 5
	x.want[1] += 5
	x.checkBalances(t, "committed by its decision row")
	// The row stays while its branch was listed in the pass; a pass
	// later, old enough, it goes (the sweep).
	require.NoError(t, ds0.Primary().Exec(x.ctx, "UPDATE app."+xaDecisionTable+" SET created = NOW(6) - INTERVAL 2 HOUR"))
	assert.Equal(t, xaPass{Deleted: 1}, r.pass(x.ctx), "swept")
	assert.Equal(t, 0, x.decisionRowCount(t)["ds_0"])

	// Old, but the decision branch is held prepared by a live session:
	// its coordinator may still commit it. Left alone until that session
	// goes; then rolled back.
	gt = newXIDAt(time.Now().Add(-2*time.Minute)) + ":ds_1"
	release := x.xaBranchAt(t, ds1, gt, "ds_1", false, credit)
	x.xaBranchAt(t, ds0, gt, "ds_0", false, debit)()
	r = x.recoverer(t, time.Minute, 0)
	assert.Equal(t, xaPass{Waiting: 2}, r.pass(x.ctx))
	assert.Equal(t, xaPass{Held: 2}, r.pass(x.ctx), "the decision branch is held")
	assert.Len(t, x.prepared(t), 2)
	release()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p := r.pass(x.ctx)
		if p.Held == 0 {
			assert.Equal(t, xaPass{RolledBack: 2}, p, "after its session went")
			break
		}
		require.True(t, time.Now().Before(deadline), "the server never let the session's branch go")
		time.Sleep(100 * time.Millisecond)
	}
	assert.Empty(t, x.prepared(t))
	x.checkBalances(t, "held, then rolled back")
	assert.Equal(t, []string{"ds_0:tm-other-1"}, x.allPrepared(t), "the other manager's branch")
}

// Decision rows do not pile up: a connector deletes those of its
// finished transactions every xaFlushAt commits on a data source, and
// recovery deletes the rest.
func (x *xaLab) decisionRows(t *testing.T) {
	for _, g := range x.l.Groups {
		var n int
		require.NoError(t, x.db(g.Primary()).QueryRowContext(x.ctx,
			"SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'app' AND TABLE_NAME = ?", xaDecisionTable).Scan(&n))
		require.Zero(t, n, "%s: the decision table exists before the first XA commit", g.Name)
	}
	cfg, err := rwshard.ParseDSN(x.base + "&rwshard.xaRecoverInterval=0")
	require.NoError(t, err)
	sc, err := open(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(sc) // closes sc
	defer db.Close()
	r := newXARecovery(sc.(*connector), time.Minute)
	before := x.decisionRowCount(t)
	const n = xaFlushAt + 6
	for i := range n {
		from, to := 2+2*(i%3), 1+2*(i%4) // from ds_0: its decisions
		require.NoError(t, transfer(x.ctx, db, from, to, 1))
		x.want[from]--
		x.want[to]++
	}
	got := x.decisionRowCount(t) // the first commit created the table on ds_0, as the plain user
	assert.Equal(t, before["ds_0"]+n-xaFlushAt, got["ds_0"], "rows after %d commits", n)
	assert.Equal(t, before["ds_1"], got["ds_1"])
	p := r.pass(x.ctx)
	assert.Equal(t, n-xaFlushAt, p.Deleted)
	assert.Equal(t, map[string]int{"ds_0": 0, "ds_1": 0}, x.decisionRowCount(t))
	x.checkBalances(t, "after the transfers")

	// One data source: one phase, no decision, nothing left prepared.
	prepares := labtest.StatusCounter(t, x.group("ds_0").Primary(), "Com_xa_prepare")
	require.NoError(t, transfer(x.ctx, db, 2, 4, 7))
	x.want[2] -= 7
	x.want[4] += 7
	assert.Equal(t, prepares, labtest.StatusCounter(t, x.group("ds_0").Primary(), "Com_xa_prepare"))
	assert.Equal(t, map[string]int{"ds_0": 0, "ds_1": 0}, x.decisionRowCount(t))
	x.checkBalances(t, "one data source")
}

// xaKill is where a commit is stopped: the step ("record", "prepare",
// "commit") and its rank in the transaction (prepare 1 is the decision
// branch's, commit 1 the decision itself), and how the transaction must
// end once recovered.
type xaKill struct {
	step     string
	rank     int
	prepared int  // branches left prepared
	applied  bool // the transfer is committed
}

var xaKills = []xaKill{
	{"record", 1, 0, false},  // the decision row inserted: every branch active
	{"prepare", 1, 1, false}, // the decision branch prepared, the other active
	{"prepare", 2, 2, false}, // every branch prepared, nothing committed
	{"commit", 1, 1, true},   // the decision committed, the other prepared
	{"commit", 2, 0, true},   // every branch committed, the row not deleted
}

// The Go process is killed (SIGKILL) in a child process running
// transfers: at each step of the commit, and, with four transfers at a
// time, at any step of any of them. A fresh connector then recovers
// within the bound, and every account holds what the committed transfers
// left it, each transfer in flight applied whole or not at all (the one
// stopped after its decision committed applied).
func (x *xaLab) processKill(t *testing.T) {
	rng := rand.New(rand.NewPCG(50, 4))
	var slowest time.Duration
	kills := 0
	recoverNow := func(what string) {
		// A fresh connector (another instance, or the one that crashed,
		// restarted) recovers.
		db := x.open(t, xaRecoverEvery)
		took := x.waitRecovered(t, 20*time.Second)
		if err := db.Close(); err != nil {
			t.Logf("%s: close: %v", what, err)
		}
		slowest = max(slowest, took)
		kills++
	}
	for round := range 3 {
		for _, k := range xaKills {
			n := 1 + rng.IntN(3) // the transfer to stop
			what := fmt.Sprintf("round %d: %s %d of transfer %d", round, k.step, k.rank, n)
			ts, inFlight := x.runChild(t, what, fmt.Sprintf("%s:%d:%d:%d:1", k.step, k.rank, n, rng.Uint64()))
			require.Equal(t, n-1, ts, "%s: transfers committed", what)
			require.Len(t, inFlight, 1, "%s: transfers in flight", what)
			require.Len(t, x.prepared(t), k.prepared, "%s: branches left prepared", what)
			if k.applied {
				x.apply(inFlight[0])
			}
			recoverNow(what)
			x.checkBalances(t, what)
		}
	}
	var flying, left, landed int
	for round := range 10 {
		n := 10 + rng.IntN(50) // the step to stop at, over all transfers
		what := fmt.Sprintf("concurrent round %d: step %d", round, n)
		_, inFlight := x.runChild(t, what, fmt.Sprintf("any:0:%d:%d:4", n, rng.Uint64()))
		flying += len(inFlight)
		left += len(x.prepared(t))
		recoverNow(what)
		// Some subset of the transfers in flight committed, each whole.
		got := x.balances(t, false)
		base := x.want
		found := false
		for set := range 1 << len(inFlight) {
			x.want = base
			for i, tr := range inFlight {
				if set&(1<<i) != 0 {
					x.apply(tr)
				}
			}
			if x.want == got {
				found = true
				landed += bits.OnesCount(uint(set))
				break
			}
		}
		require.True(t, found, "%s: no subset of the transfers in flight %v, each whole, gives %v from %v", what, inFlight, got, base)
		x.checkBalances(t, what)
	}
	// Within the bound: a fresh connector's first pass sees the branches,
	// its second (a bound later) resolves them.
	assert.Less(t, slowest, 2*xaRecoverEvery+time.Second, "slowest recovery")
	t.Logf("%d kills of the Go process; slowest recovery %v (bound %v); concurrent kills: %d transfers in flight, %d branches left prepared, %d transfers committed whole, the others rolled back whole",
		kills, slowest, xaRecoverEvery, flying, left, landed)

	// Rows the killed processes left behind go with the sweep.
	r := x.recoverer(t, time.Minute, 0)
	r.sweepAge = 0
	r.pass(x.ctx)
	assert.Equal(t, map[string]int{"ds_0": 0, "ds_1": 0}, x.decisionRowCount(t))
}

// xaTransfer is a transfer of the child: from, to, amount.
type xaTransfer [3]int64

func (x *xaLab) apply(tr xaTransfer) {
	x.want[tr[0]] -= tr[2]
	x.want[tr[1]] += tr[2]
}

// runChild runs xaChild with kill, checks it died of SIGKILL, applies
// the transfers it committed to x.want and returns how many, and those
// in flight when it died.
func (x *xaLab) runChild(t *testing.T, what, kill string) (committed int, inFlight []xaTransfer) {
	t.Helper()
	cmd := exec.CommandContext(x.ctx, os.Args[0], "-test.run=^TestLabXARecovery$", "-test.count=1")
	cmd.Env = append(os.Environ(), xaChildEnv+"="+x.base+"&rwshard.xaRecoverInterval=0", xaKillEnv+"="+kill)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s: the child was not killed\n%s\n%s", what, out, stderr.String())
	ws, _ := ee.Sys().(syscall.WaitStatus)
	require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "%s: %v\n%s\n%s", what, err, out, stderr.String())

	// Each worker printed "T worker from to amount" before each commit,
	// and "C worker" after it.
	open := map[string]xaTransfer{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 5 && f[0] == "T":
			var tr xaTransfer
			for i := range tr {
				tr[i], _ = strconv.ParseInt(f[i+2], 10, 64)
			}
			open[f[1]] = tr
		case len(f) == 2 && f[0] == "C":
			x.apply(open[f[1]])
			delete(open, f[1])
			committed++
		default:
			t.Fatalf("%s: the child said %q\n%s", what, sc.Text(), stderr.String())
		}
	}
	for _, w := range slices.Sorted(maps.Keys(open)) {
		inFlight = append(inFlight, open[w])
	}
	return committed, inFlight
}

// xaChild is the child process of processKill: workers transfer between
// accounts of their own (2w+2 on ds_0, 2w+1 on ds_1) until the kill
// point stops the process with SIGKILL. kill is step:rank:n:seed:workers:
// the rank-th step of that name in the n-th transaction, or with step
// "any" the n-th step of any transaction.
func xaChild(dsn, kill string) {
	f := strings.Split(kill, ":")
	step := f[0]
	rank, _ := strconv.Atoi(f[1])
	n, _ := strconv.Atoi(f[2])
	seed, _ := strconv.ParseUint(f[3], 10, 64)
	workers, _ := strconv.Atoi(f[4])
	die := func() {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	if step == "any" {
		var steps atomic.Int64
		xaStep = func(string, string) {
			if steps.Add(1) == int64(n) {
				die()
			}
		}
	} else {
		tx, ranks := 0, map[string]int{}
		xaStep = func(s, _ string) {
			if s == "record" {
				tx++
				clear(ranks)
			}
			ranks[s]++
			if tx == n && s == step && ranks[s] == rank {
				die()
			}
		}
	}
	db, err := sql.Open(rwshard.DriverName, dsn)
	if err != nil {
		fmt.Println("E", err)
		os.Exit(2)
	}
	ctx := context.Background()
	var mu sync.Mutex
	say := func(a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Println(a...)
	}
	var wg sync.WaitGroup
	for w := range workers {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		wg.Go(func() {
			for range 200 {
				from, to := int64(2*w+2), int64(2*w+1)
				if rng.IntN(2) == 0 {
					from, to = to, from
				}
				amount := 1 + rng.Int64N(50)
				say("T", w, from, to, amount)
				if err := transfer(ctx, db, int(from), int(to), amount); err != nil {
					say("E", err)
					os.Exit(3)
				}
				say("C", w)
			}
		})
	}
	wg.Wait()
	say("E the kill point was never reached")
	os.Exit(4)
}

// A shard's primary is killed at a step of the commit, and restarted: the
// commit fails (or not) as the servers left it, recovery finishes the
// transaction, every account holds what it must, and the replicas agree.
func (x *xaLab) shardKill(t *testing.T) {
	db := x.open(t, xaRecoverEvery)
	defer func() { xaStep = nil }()
	var slowest time.Duration
	for _, tc := range []struct {
		xaKill
		from, to int  // the accounts: from's data source decides
		victim   int  // the account whose data source's primary dies
		decided  bool // Commit's error says the commit is recorded
		failed   bool // Commit fails
	}{
		// It dies before its prepare: every branch rolls back.
		{xaKill{"prepare", 1, 0, false}, 2, 1, 1, false, true},
		{xaKill{"prepare", 1, 0, false}, 3, 4, 4, false, true},
		// The decision's dies before it commits: recovery rolls back.
		{xaKill{"prepare", 2, 2, false}, 3, 4, 3, false, true},
		{xaKill{"prepare", 2, 2, false}, 2, 1, 2, false, true},
		// The other dies after the decision: recovery commits it.
		{xaKill{"commit", 1, 1, true}, 2, 1, 1, true, true},
		{xaKill{"commit", 1, 1, true}, 3, 4, 4, true, true},
		// The decision's dies after its commit: the other commits.
		{xaKill{"commit", 1, 0, true}, 3, 4, 3, false, false},
		{xaKill{"commit", 1, 0, true}, 2, 1, 2, false, false},
	} {
		from, to := tc.from, tc.to
		victim := x.group(fmt.Sprintf("ds_%d", tc.victim%2)).Primary()
		what := fmt.Sprintf("%s killed after %s %d", victim.Name, tc.step, tc.rank)
		ranks := map[string]int{}
		xaStep = func(s, ds string) {
			ranks[s]++
			if s == tc.step && ranks[s] == tc.rank {
				require.NoError(t, x.l.Kill(victim))
			}
		}
		err := transfer(x.ctx, db, from, to, 10)
		xaStep = nil
		t.Logf("%s: commit: %v", what, err)
		var ce *CommitError
		if tc.failed {
			require.ErrorAs(t, err, &ce, what)
			assert.Equal(t, tc.decided, ce.Decided, what)
		} else {
			require.NoError(t, err, what)
		}
		if tc.applied {
			x.want[from] -= 10
			x.want[to] += 10
		}
		start := time.Now()
		require.NoError(t, x.l.Restart(x.ctx, victim))
		restarted := time.Since(start)
		assert.Len(t, x.prepared(t), tc.prepared, "%s: branches prepared after the restart", what)
		took := x.waitRecovered(t, 20*time.Second)
		slowest = max(slowest, took)
		t.Logf("%s: restart %v, recovered %v later", what, restarted.Round(time.Millisecond), took.Round(time.Millisecond))
		x.checkBalances(t, what)
	}
	assert.Less(t, slowest, 2*xaRecoverEvery+time.Second, "slowest recovery")

	// The replicas applied the same outcomes.
	require.NoError(t, x.l.Sync(x.ctx, 30*time.Second))
	assert.Equal(t, x.want, x.balances(t, true), "the replicas' balances")
}

// xaThreeRules puts data sources ds_0 and ds_2 on the first group's
// primary (one server, one database) and ds_1 on the second's; account
// id lives in ds_(id%3).acct_(id%3).
const xaThreeRules = `
dataSources:
  ds_0: {primary: "%[1]s"}
  ds_1: {primary: "%[2]s"}
  ds_2: {primary: "%[1]s"}
tables:
  acct:
    dataNodes: "ds_0.acct_0, ds_1.acct_1, ds_2.acct_2"
    databaseStrategy: {column: id, algorithm: db3}
    tableStrategy: {column: id, algorithm: t3}
algorithms:
  db3: {type: MOD, props: {sharding-count: 3}}
  t3: {type: INLINE, props: {algorithm-expression: "acct_${id %% 3}"}}
`

// A transaction over three data sources, two of them on one server: when
// one branch cannot commit after the decision, the others commit at once
// and Commit names the one left prepared, which recovery commits; when
// the decision's server dies before its commit, recovery rolls back the
// branches of both data sources on that server, each under its own.
func (x *xaLab) threeSources(t *testing.T) {
	g0, g1 := x.group("ds_0"), x.group("ds_1")
	rules := fmt.Sprintf(xaThreeRules, labtest.PlainNodeDSN(g0.Primary()), labtest.PlainNodeDSN(g1.Primary()))
	path := t.TempDir() + "/rules.yaml"
	require.NoError(t, os.WriteFile(path, []byte(rules), 0o600))
	db, err := sql.Open(rwshard.DriverName, "/app?rwshard.rulesFile="+url.QueryEscape(path)+
		"&rwshard.xa=true&rwshard.probeInterval=250ms&rwshard.xaRecoverInterval="+xaRecoverEvery.String())
	require.NoError(t, err)
	defer db.Close()
	_, err = db.ExecContext(x.ctx, "CREATE TABLE acct (id BIGINT PRIMARY KEY, amount BIGINT NOT NULL)")
	require.NoError(t, err)
	want := map[int]int64{3: 1000, 1: 1000, 2: 1000} // on ds_0, ds_1, ds_2
	for id, amount := range want {
		_, err := db.ExecContext(x.ctx, "INSERT INTO acct (id, amount) VALUES (?, ?)", id, amount)
		require.NoError(t, err)
	}
	check := func(what string) {
		t.Helper()
		got := map[int]int64{}
		for _, q := range []struct {
			n   *lab.Node
			tbl string
		}{{g0.Primary(), "acct_0"}, {g1.Primary(), "acct_1"}, {g0.Primary(), "acct_2"}} {
			rows, err := x.db(q.n).QueryContext(x.ctx, "SELECT id, amount FROM "+q.tbl)
			require.NoError(t, err)
			for rows.Next() {
				var id int
				var amount int64
				require.NoError(t, rows.Scan(&id, &amount))
				got[id] = amount
			}
			rows.Close()
		}
		assert.Equal(t, want, got, what)
	}
	// ds_0 decides; ds_1 and ds_2 follow.
	pay := func() error {
		tx, err := db.BeginTx(x.ctx, nil)
		require.NoError(t, err)
		for _, u := range []struct{ id, delta int }{{3, -20}, {1, 10}, {2, 10}} {
			_, err := tx.ExecContext(x.ctx, "UPDATE acct SET amount = amount + ? WHERE id = ?", u.delta, u.id)
			require.NoError(t, err)
		}
		return tx.Commit()
	}
	killAt := func(victim *lab.Node, step string, rank int) {
		ranks := map[string]int{}
		xaStep = func(s, _ string) {
			ranks[s]++
			if s == step && ranks[s] == rank {
				require.NoError(t, x.l.Kill(victim))
			}
		}
	}
	defer func() { xaStep = nil }()

	killAt(g1.Primary(), "commit", 1)
	err = pay()
	xaStep = nil
	var ce *CommitError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, &CommitError{Committed: []string{"ds_0", "ds_2"}, Failed: "ds_1", Prepared: []string{"ds_1"}, Decided: true, Err: ce.Err}, ce)
	require.NoError(t, x.l.Restart(x.ctx, g1.Primary()))
	x.waitRecovered(t, 20*time.Second)
	want[3], want[1], want[2] = 980, 1010, 1010
	check("one branch left prepared after the decision, committed by recovery")

	killAt(g0.Primary(), "prepare", 3)
	err = pay()
	xaStep = nil
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []string{"ds_0", "ds_1", "ds_2"}, ce.Prepared, "%v", err)
	require.NoError(t, x.l.Restart(x.ctx, g0.Primary()))
	require.Len(t, x.prepared(t), 3, "ds_0's and ds_2's on one server, ds_1's")
	x.waitRecovered(t, 20*time.Second)
	check("the decision's server died before its commit: rolled back")
}

// A rollback of a prepared branch, by a coordinator or by recovery,
// survives a crash of its server right after it: without makeDurable,
// MariaDB brings the branch back prepared.
func (x *xaLab) rollbackDurable(t *testing.T) {
	ds0, ds1 := x.group("ds_0"), x.group("ds_1")
	db := x.open(t, 0)
	defer func() { xaStep = nil }()
	for range 2 {
		// The coordinator: ds_0's branch is prepared when ds_1's primary
		// dies; Commit rolls ds_0's back; ds_0's primary dies at once.
		ranks := map[string]int{}
		xaStep = func(s, _ string) {
			ranks[s]++
			if s == "prepare" && ranks[s] == 1 {
				require.NoError(t, x.l.Kill(ds1.Primary()))
			}
		}
		err := transfer(x.ctx, db, 2, 1, 10)
		xaStep = nil
		var ce *CommitError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, []string{"ds_0"}, ce.RolledBack, "%v", err)
		require.NoError(t, x.l.Kill(ds0.Primary()))
		require.NoError(t, x.l.Restart(x.ctx, ds0.Primary()))
		require.NoError(t, x.l.Restart(x.ctx, ds1.Primary()))
		assert.Empty(t, x.prepared(t), "the coordinator's rollback")

		// Recovery rolls back an old transaction; both primaries die at
		// once.
		debit := "UPDATE t_order_0 SET amount = amount - 5 WHERE order_id = 2"
		credit := "UPDATE t_order_1 SET amount = amount + 5 WHERE order_id = 1"
		gt := newXIDAt(time.Now()) + ":ds_0"
		x.xaBranchAt(t, ds0, gt, "ds_0", false, debit)()
		x.xaBranchAt(t, ds1, gt, "ds_1", false, credit)()
		r := x.recoverer(t, time.Minute, 2*time.Minute)
		r.pass(x.ctx)
		require.Equal(t, xaPass{RolledBack: 2}, r.pass(x.ctx))
		require.NoError(t, x.l.Kill(ds0.Primary()))
		require.NoError(t, x.l.Kill(ds1.Primary()))
		require.NoError(t, x.l.Restart(x.ctx, ds0.Primary()))
		require.NoError(t, x.l.Restart(x.ctx, ds1.Primary()))
		assert.Empty(t, x.prepared(t), "recovery's rollback")
		x.checkBalances(t, "rolled back")
	}
}
