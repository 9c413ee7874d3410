package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// row matches the table row of a node: its name, then the given columns in
// order, separated by spaces.
func row(name string, cols ...string) *regexp.Regexp {
	re := `(?m)^` + regexp.QuoteMeta(name)
	for _, c := range cols {
		re += `\s+` + regexp.QuoteMeta(c)
	}
	return regexp.MustCompile(re + `(\s|$)`)
}

func TestCheckHealthy(t *testing.T) {
	l := rwLab.Get(t)
	r := cli(t, "check", labDSN(l, ""))
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "ok: 3 nodes checked")
	assert.NotContains(t, r.stdout, "problems:")
	assert.NotContains(t, r.stdout, lab.AppPassword)
	assert.Contains(t, r.stdout, "config: app:***@tcp("+l.Primary().Addr()+")")
	assert.Regexp(t, row("primary", l.Primary().Addr(), "ok"), r.stdout)
	assert.Regexp(t, `(?m)^primary\s.*MariaDB.*\sprimary\s+OFF\s+-\s+-\s+-\s+8h0m0s$`, r.stdout)
	for _, n := range l.Replicas() {
		assert.Regexp(t, row(n.Name, n.Addr(), "ok"), r.stdout)
		assert.Regexp(t, `(?m)^`+n.Name+`\s.*MariaDB.*\sreplica\s+ON\s+Yes\s+Yes\s+\d+s\s+8h0m0s$`, r.stdout)
	}
}

func TestCheckConfigFileAndWeightWarning(t *testing.T) {
	l := rwLab.Get(t)
	p := filepath.Join(t.TempDir(), "rwshard.conf")
	require.NoError(t, os.WriteFile(p, []byte("# the lab, replica1 drained\n"+
		labDSN(l, "rwshard.weights=0,0,1")+"\n"), 0o600))
	r := cli(t, "check", p)
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "warnings:")
	assert.Contains(t, r.stdout, "rwshard.weights gives replica1 weight 0: it never serves reads")
	assert.NotContains(t, r.stdout, "replica2 weight")
	assert.Contains(t, r.stdout, "no problems, 1 warning")
}

func TestCheckWeightsNameNoReplica(t *testing.T) {
	l := rwLab.Get(t)
	// Three hosts, two weights: the third host, replica2, has no weight.
	r := cli(t, "check", labDSN(l, "rwshard.weights=0,1"))
	assert.Equal(t, exitProblem, r.code, r)
	assert.Contains(t, r.stderr, `rwshard.weights="0,1"`)
	assert.Contains(t, r.stderr, "2 weights for 3 hosts")
	assert.NotContains(t, r.stderr+r.stdout, lab.AppPassword)
}

func TestCheckWrongPassword(t *testing.T) {
	l := rwLab.Get(t)
	const wrong = "Not-The-Password-42"
	r := cli(t, "check", hostsDSN(wrong, labAddrs(l), ""))
	assert.Equal(t, exitProblem, r.code, r)
	for _, n := range l.Nodes() {
		assert.Contains(t, r.stdout, n.Name+": wrong password")
		assert.Regexp(t, row(n.Name, n.Addr(), "denied"), r.stdout)
	}
	assert.Contains(t, r.stdout, "MySQL error 1045")
	assert.Contains(t, r.stdout, "3 problems found")
	assert.NotContains(t, r.stdout+r.stderr, wrong)
}

func TestCheckUnreachableHost(t *testing.T) {
	l := rwLab.Get(t)
	b, err := lab.NewBlackhole()
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	// The blackhole accepts TCP and never sends the MySQL greeting:
	// only the connect timeout, bounding the handshake too, ends the wait.
	dsn := hostsDSN(lab.AppPassword, []string{l.Primary().Addr(), l.Replicas()[0].Addr(), b.Addr()},
		"rwshard.connectTimeout=500ms")
	begin := time.Now()
	r := cli(t, "check", dsn)
	took := time.Since(begin)
	assert.Equal(t, exitProblem, r.code, r)
	assert.Contains(t, r.stdout, "replica2: unreachable: no MySQL handshake within rwshard.connectTimeout=500ms")
	assert.Regexp(t, row("replica2", b.Addr(), "unreachable"), r.stdout)
	assert.Regexp(t, row("primary", l.Primary().Addr(), "ok"), r.stdout)
	assert.Contains(t, r.stdout, "1 problem found")
	assert.Positive(t, b.Accepted(), "check never connected to the blackhole")
	assert.Less(t, took, 10*time.Second, "check hung on the blackholed host")
}

// sabotage runs stmt on the replica n as the administrator and, when the
// test ends, undo, so that the shared lab is left as it was; with rejoin
// the cleanup then waits until n replicates again.
func sabotage(t *testing.T, n *lab.Node, stmt, undo string, rejoin bool) {
	t.Helper()
	require.NoError(t, n.Exec(labtest.Ctx(t, time.Minute), stmt))
	t.Cleanup(func() {
		require.NoError(t, n.Exec(context.Background(), undo))
		if rejoin {
			waitReplicating(t, n)
		}
	})
}

func TestCheckStoppedReplication(t *testing.T) {
	l := rwLab.Get(t)
	victim := l.Replicas()[1]
	sabotage(t, victim, "STOP SLAVE", "START SLAVE", true)
	r := cli(t, "check", labDSN(l, ""))
	assert.Equal(t, exitProblem, r.code, r)
	assert.Contains(t, r.stdout, victim.Name+": replication not running: IO thread No, SQL thread No")
	assert.Regexp(t, row(victim.Name, victim.Addr(), "ok"), r.stdout)
	assert.Regexp(t, `(?m)^`+victim.Name+`\s.*\sreplica\s+ON\s+No\s+No\s+NULL\s`, r.stdout)
	assert.Contains(t, r.stdout, "1 problem found")
}

func TestCheckReplicaCannotReachPrimary(t *testing.T) {
	l := rwLab.Get(t)
	victim := l.Replicas()[0]
	// Pointed at a closed port, the IO thread stays Connecting: check waits
	// a moment for it (it passes through Connecting after every start),
	// then reports it with the replica's last IO error.
	sabotage(t, victim, "STOP SLAVE; CHANGE MASTER TO MASTER_PORT=1; START SLAVE",
		fmt.Sprintf("STOP SLAVE; CHANGE MASTER TO MASTER_PORT=%d; START SLAVE", l.Primary().Port), true)
	r := cli(t, "check", labDSN(l, ""))
	assert.Equal(t, exitProblem, r.code, r)
	assert.Contains(t, r.stdout, victim.Name+": replication not running: IO thread Connecting, SQL thread Yes; last IO error: ")
	assert.Contains(t, r.stdout, "1 problem found")
}

func TestCheckWritableReplica(t *testing.T) {
	l := rwLab.Get(t)
	victim := l.Replicas()[0]
	sabotage(t, victim, "SET GLOBAL read_only = OFF", "SET GLOBAL read_only = ON", false)
	r := cli(t, "check", labDSN(l, ""))
	assert.Equal(t, exitProblem, r.code, r)
	assert.Contains(t, r.stdout, victim.Name+": writable (read_only=OFF)")
	assert.Contains(t, r.stdout, "2 writable nodes (primary, "+victim.Name+"): split brain")
	assert.Regexp(t, `(?m)^`+victim.Name+`\s.*\sreplica, writable\s+OFF\s`, r.stdout)
}

func TestCheckConnMaxLifetimeOverWaitTimeout(t *testing.T) {
	l := rwLab.Get(t)
	// The server's default wait_timeout is 28800 s (8 h).
	r := cli(t, "check", labDSN(l, "rwshard.connMaxLifetime=10h"))
	assert.Equal(t, exitProblem, r.code, r)
	for _, n := range l.Nodes() {
		assert.Contains(t, r.stdout, n.Name+": rwshard.connMaxLifetime=10h0m0s is not below wait_timeout=8h0m0s")
	}
	// Below it, no problem.
	r = cli(t, "check", labDSN(l, "rwshard.connMaxLifetime=7h"))
	assert.Equal(t, exitOK, r.code, r)
}

// A sharded configuration: every data source's group is checked, and
// explain -json shows the unit each shard gets.
func TestCheckSharded(t *testing.T) {
	l := labtest.Fresh(t, lab.Sharded())
	var ds []string
	for _, g := range l.Groups {
		ds = append(ds, fmt.Sprintf("  %s: {primary: %q, replicas: [%q]}", g.Name, g.Primary().DSN(""), g.Replicas()[0].DSN("")))
	}
	rules := "dataSources:\n" + strings.Join(ds, "\n") + "\ndefaultDataSource: ds_0\n"
	p := filepath.Join(t.TempDir(), "rules.yaml")
	require.NoError(t, os.WriteFile(p, []byte(rules), 0o600))
	r := cli(t, "check", "/app?rwshard.rulesFile="+url.QueryEscape(p))
	require.Equal(t, exitOK, r.code, r)
	for _, g := range l.Groups {
		assert.Contains(t, r.stdout, "data source "+g.Name)
		assert.Regexp(t, row(g.Name+"-primary", g.Primary().Addr(), "ok"), r.stdout)
		assert.Regexp(t, row(g.Name+"-replica1", g.Replicas()[0].Addr(), "ok"), r.stdout)
	}
	assert.NotContains(t, r.stdout, lab.AppPassword)

	// explain -json shows each shard's unit, literals redacted there too.
	r = cli(t, "explain", "/app?rwshard.rulesFile="+url.QueryEscape(labtest.RulesFile(t, l)), "-json",
		"SELECT * FROM t_order WHERE user_id = ? AND order_id = ? AND note = 'Unit-Secret-5'", "3", "5")
	require.Equal(t, exitOK, r.code, r)
	assert.NotContains(t, r.stdout, "Unit-Secret-5")
	var plan planJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &plan), r.stdout)
	assert.Equal(t, []string{"t_order"}, plan.Tables)
	require.Len(t, plan.Units, 1, r.stdout)
	assert.Equal(t, "ds_1", plan.Units[0].DataSource)
	assert.Contains(t, plan.Units[0].Plan.SQL, "t_order_1")
	assert.Contains(t, plan.Units[0].Plan.SQL, "note = '?'")
	assert.Contains(t, plan.SQL, "note = '?'")

	// A stopped replica in one data source is a problem.
	require.NoError(t, l.StopReplication(labtest.Ctx(t, time.Minute), l.Groups[1].Replicas()[0]))
	r = cli(t, "check", "/app?rwshard.rulesFile="+url.QueryEscape(p))
	assert.Equal(t, exitProblem, r.code, r)
	assert.Contains(t, r.stdout, "ds_1-replica1")

	// In JSON: one group per data source, the problem in ds_1's.
	r = cli(t, "check", "-json", "/app?rwshard.rulesFile="+url.QueryEscape(p))
	assert.Equal(t, exitProblem, r.code, r)
	assert.NotContains(t, r.stdout, "data source ")
	rep := decodeCheck(t, r.stdout)
	assert.Equal(t, 1, rep.Problems)
	require.Len(t, rep.Groups, 2)
	for i, g := range l.Groups {
		assert.Equal(t, g.Name, rep.Groups[i].Name)
		require.Len(t, rep.Groups[i].Nodes, 2)
		assert.Equal(t, g.Name+"-primary", rep.Groups[i].Nodes[0].Name)
		assert.Equal(t, "primary", rep.Groups[i].Nodes[0].Role)
		assert.Equal(t, "replica", rep.Groups[i].Nodes[1].Role)
	}
	assert.Empty(t, rep.Groups[0].Problems)
	require.Len(t, rep.Groups[1].Problems, 1)
	assert.Contains(t, rep.Groups[1].Problems[0], "ds_1-replica1: replication not running")
	assert.NotContains(t, r.stdout, lab.AppPassword)
}

// As an application user with GRANT ALL ON app.* and nothing more, check
// passes, names the privilege it lacks and what that costs; with one host
// it says nothing will be split.
func TestCheckApplicationUser(t *testing.T) {
	l := rwLab.Get(t)
	r := cli(t, "check", labtest.PlainDSN(l, ""))
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "may not run SHOW REPLICA STATUS on replica1, replica2")
	assert.Contains(t, r.stdout, "REPLICA MONITOR")
	assert.Contains(t, r.stdout, "fenced only once its lag passes")
	for _, n := range l.Replicas() {
		assert.Regexp(t, `(?m)^`+n.Name+`\s.*MariaDB.*\sreplica\s+ON\s`, r.stdout)
	}
	one := cli(t, "check", lab.PlainUser+":"+lab.PlainPassword+"@tcp("+l.Primary().Addr()+")/"+lab.AppDatabase)
	require.Equal(t, exitOK, one.code, one)
	assert.Contains(t, one.stdout, "one host: every statement goes to it, nothing is split")
}

// A statement cache that would take more than half of the server's
// max_prepared_stmt_count is a warning.
func TestCheckStatementCacheSize(t *testing.T) {
	l := rwLab.Get(t)
	r := cli(t, "check", labDSN(l, "rwshard.stmtCacheSize=1000&rwshard.maxIdleConns=16"))
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "rwshard.stmtCacheSize=1000 × rwshard.maxIdleConns=16 = 16000 prepared statements per process")
	r = cli(t, "check", labDSN(l, ""))
	assert.NotContains(t, r.stdout, "max_prepared_stmt_count")
}

// Pools of the expected fleet that exceed the server's max_connections
// are a warning that names the share each process is capped at.
func TestCheckConnectionBudget(t *testing.T) {
	l := rwLab.Get(t)
	ctx := labtest.Ctx(t, 10*time.Second)
	var maxConns int
	require.NoError(t, l.Primary().Admin().QueryRowContext(ctx, "SELECT @@max_connections").Scan(&maxConns))
	per := maxConns/10 + 1
	r := cli(t, "check", labDSN(l, fmt.Sprintf("rwshard.fleetSize=20&rwshard.maxOpenConns=%d", per)))
	require.Equal(t, exitOK, r.code, r)
	share := (maxConns-maxConns/10)/20 - 1
	assert.Contains(t, r.stdout, fmt.Sprintf("primary: rwshard.fleetSize=20 × rwshard.maxOpenConns=%d = %d connections, more than max_connections=%d: each process is capped at its share, %d connections",
		per, 20*per, maxConns, share))
	r = cli(t, "check", labDSN(l, "rwshard.fleetSize=2&rwshard.maxOpenConns=10"))
	require.Equal(t, exitOK, r.code, r)
	assert.NotContains(t, r.stdout, "more than max_connections")
	r = cli(t, "check", labDSN(l, fmt.Sprintf("rwshard.maxOpenConns=%d", maxConns)))
	assert.Contains(t, r.stdout, "set rwshard.fleetSize to the number of processes")
}

// checkReportJSON is check -json's document, as a consumer decodes it.
type checkReportJSON struct {
	// Rules: only with a sharding rules file.
	Rules  *rulesJSON `json:"rules"`
	XA     *xaReport  `json:"xa"`
	Groups []struct {
		Name     string          `json:"name"`
		DSN      string          `json:"dsn"`
		User     string          `json:"user"`
		Database string          `json:"database"`
		TookMS   int64           `json:"took_ms"`
		Nodes    []checkNodeJSON `json:"nodes"`
		Problems []string        `json:"problems"`
		Warnings []string        `json:"warnings"`
		// DataNodes: only with a sharding rules file.
		DataNodes *dataNodesJSON `json:"data_nodes"`
	} `json:"groups"`
	Problems int `json:"problems"`
}

func decodeCheck(t *testing.T, out string) checkReportJSON {
	t.Helper()
	var rep checkReportJSON
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&rep), out)
	assert.False(t, dec.More(), "one document")
	return rep
}

func TestCheckJSON(t *testing.T) {
	l := rwLab.Get(t)
	r := cli(t, "check", "-json", labDSN(l, ""))
	require.Equal(t, exitOK, r.code, r)
	assert.Empty(t, r.stderr)
	assert.NotContains(t, r.stdout, lab.AppPassword)
	rep := decodeCheck(t, r.stdout)
	assert.Equal(t, 0, rep.Problems)
	require.Len(t, rep.Groups, 1)
	g := rep.Groups[0]
	assert.Equal(t, "", g.Name)
	assert.True(t, strings.HasPrefix(g.DSN, "app:***@tcp("+l.Primary().Addr()+")"), g.DSN)
	assert.Empty(t, g.Problems)
	require.NotNil(t, g.Problems, "[] rather than null")
	require.Len(t, g.Nodes, 3)
	for i, n := range l.Nodes() {
		j := g.Nodes[i]
		assert.Equal(t, n.Name, j.Name)
		assert.Equal(t, n.Addr(), j.Addr)
		assert.True(t, j.Reachable)
		assert.Equal(t, "ok", j.Connect)
		assert.Empty(t, j.Error)
		assert.Contains(t, j.Version, "MariaDB")
		require.NotNil(t, j.ReadOnly)
		require.NotNil(t, j.WaitTimeoutSeconds)
		assert.Equal(t, int64(28800), *j.WaitTimeoutSeconds)
		if i == 0 {
			assert.Equal(t, "primary", j.Role)
			assert.False(t, *j.ReadOnly)
			assert.False(t, j.Replica)
			assert.Nil(t, j.IOThread)
			assert.Nil(t, j.SecondsBehind)
			continue
		}
		assert.Equal(t, "replica", j.Role)
		assert.True(t, *j.ReadOnly)
		assert.True(t, j.Replica)
		require.NotNil(t, j.IOThread)
		require.NotNil(t, j.SQLThread)
		assert.Equal(t, "Yes", *j.IOThread)
		assert.Equal(t, "Yes", *j.SQLThread)
		require.NotNil(t, j.SecondsBehind)
		assert.GreaterOrEqual(t, *j.SecondsBehind, int64(0))
	}
}

func TestCheckJSONStoppedReplica(t *testing.T) {
	l := rwLab.Get(t)
	victim := l.Replicas()[1]
	sabotage(t, victim, "STOP SLAVE", "START SLAVE", true)
	r := cli(t, "check", labDSN(l, ""), "--json")
	assert.Equal(t, exitProblem, r.code, r)
	rep := decodeCheck(t, r.stdout)
	assert.Equal(t, 1, rep.Problems)
	g := rep.Groups[0]
	require.Len(t, g.Problems, 1)
	assert.Contains(t, g.Problems[0], victim.Name+": replication not running: IO thread No, SQL thread No")
	j := g.Nodes[2]
	require.Equal(t, victim.Name, j.Name)
	assert.Equal(t, "replica", j.Role)
	assert.Equal(t, "No", *j.IOThread)
	assert.Equal(t, "No", *j.SQLThread)
	assert.Nil(t, j.SecondsBehind, "NULL when stopped")
}

func TestCheckJSONWrongPassword(t *testing.T) {
	l := rwLab.Get(t)
	const wrong = "Not-The-Password-42"
	r := cli(t, "check", "-json", hostsDSN(wrong, labAddrs(l), ""))
	assert.Equal(t, exitProblem, r.code, r)
	assert.NotContains(t, r.stdout+r.stderr, wrong)
	rep := decodeCheck(t, r.stdout)
	assert.Equal(t, 3, rep.Problems)
	for _, j := range rep.Groups[0].Nodes {
		assert.False(t, j.Reachable, j.Name)
		assert.Equal(t, "denied", j.Connect, j.Name)
		assert.Contains(t, j.Error, "wrong password: access denied for user \"app\" (MySQL error 1045)")
		assert.Equal(t, "", j.Role)
		assert.Nil(t, j.ReadOnly)
	}
	assert.Contains(t, rep.Groups[0].DSN, "app:***@")
}

// With only a primary, check warns that nothing will be split, in text
// and in JSON, and passes.
func TestCheckOneHost(t *testing.T) {
	l := rwLab.Get(t)
	dsn := hostsDSN(lab.AppPassword, []string{l.Primary().Addr()}, "")
	r := cli(t, "check", dsn)
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "one host: every statement goes to it, nothing is split; list the replicas after it in the DSN")
	assert.Contains(t, r.stdout, "ok: 1 node checked in")
	assert.Contains(t, r.stdout, "no problems, 1 warning")

	r = cli(t, "check", dsn, "-json")
	require.Equal(t, exitOK, r.code, r)
	rep := decodeCheck(t, r.stdout)
	require.Len(t, rep.Groups, 1)
	require.Len(t, rep.Groups[0].Nodes, 1)
	assert.Equal(t, "primary", rep.Groups[0].Nodes[0].Role)
	require.Len(t, rep.Groups[0].Warnings, 1)
	assert.Contains(t, rep.Groups[0].Warnings[0], "one host: every statement goes to it, nothing is split")
}
