package main

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/rwshard/rwshard/internal/testproc"
)

// fleetChild is what one child process of TestFleetLab does: open DSN,
// hold Conns backend connections open, say how many it has, and keep
// them until its stdin closes.
type fleetChild struct {
	DSN   string
	Conns int
}

// fleetRules is a rules file of one data source on addr whose t_fleet
// is split into tables tables.
func fleetRules(t *testing.T, addr string, tables int) string {
	t.Helper()
	yaml := fmt.Sprintf(`dataSources:
  ds_0:
    primary: "%s:%s@tcp(%s)/%s"
defaultDataSource: ds_0
tables:
  t_fleet:
    dataNodes: ds_0.t_fleet_${0..%d}
    tableStrategy: {column: id, algorithm: fleet_mod}
algorithms:
  fleet_mod:
    type: MOD
    props: {sharding-count: %d}
`, lab.AppUser, lab.AppPassword, addr, lab.AppDatabase, tables-1, tables)
	path := filepath.Join(t.TempDir(), fmt.Sprintf("rules-%d.yaml", tables))
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	return path
}

// Two programs, one of them in three processes of which one has other
// rules, the other stamped with another rwshard version: fleet lists
// each program × version × rules with the connections the processes say
// they hold, flags the odd rules, and says which privilege it lacks
// before it is granted. The processes are this test binary again
// (testproc), each with a connector of its own.
func TestFleetLab(t *testing.T) {
	if v := testproc.Variant(); v != "" {
		runFleetChild(t, v)
		return
	}
	needMariaDB(t)
	l := labtest.Fresh(t, lab.Options{Shards: 1, Replicas: 0, ServerArgs: []string{"--performance-schema=ON"}})
	n := l.Primary()
	ctx := labtest.Ctx(t, 3*time.Minute)
	rules2, rules4 := fleetRules(t, n.Addr(), 2), fleetRules(t, n.Addr(), 4)
	plain := n.DSN("rwshard.connMaxIdleTime=10m")
	sharded := func(rules, program string) string {
		return "/?rwshard.rulesFile=" + url.QueryEscape(rules) + "&rwshard.program=" + program + "&rwshard.connMaxIdleTime=10m"
	}
	children := []fleetChild{
		{DSN: sharded(rules2, "orders"), Conns: 3},
		{DSN: sharded(rules2, "orders"), Conns: 2},
		{DSN: sharded(rules4, "orders"), Conns: 2},
		{DSN: plain + "&rwshard.program=billing&connectionAttributes=rwshard_version:v0.9.0", Conns: 4},
	}
	held := make([]int, len(children))
	var wg sync.WaitGroup
	for i, c := range children {
		v, err := json.Marshal(c)
		require.NoError(t, err)
		cmd := testproc.Command(t, string(v))
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = cmd.Stdout
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			stdin.Close() // the child closes its connections and exits
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				assert.NoError(t, err, "child %d", i)
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Errorf("child %d did not exit", i)
			}
		})
		ready := make(chan int, 1)
		wg.Go(func() {
			sc := bufio.NewScanner(stdout)
			var log strings.Builder
			for sc.Scan() {
				log.WriteString(sc.Text() + "\n")
				if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "FLEETCHILD" && f[1] == "READY" {
					k, _ := strconv.Atoi(f[2])
					ready <- k
					io.Copy(io.Discard, stdout)
					return
				}
			}
			t.Errorf("child %d ended before it was ready:\n%s", i, log.String())
			ready <- -1
		})
		select {
		case held[i] = <-ready:
		case <-ctx.Done():
			t.Fatalf("child %d not ready", i)
		}
		require.GreaterOrEqual(t, held[i], c.Conns, "child %d's connections", i)
	}
	t.Logf("the children hold %v connections", held)

	// The application user may not read performance_schema yet.
	r := cli(t, "fleet", "-json", n.DSN(""))
	assert.Equal(t, exitProblem, r.code)
	assert.Contains(t, r.stdout, "fleet needs SELECT on performance_schema.session_connect_attrs and performance_schema.threads (GRANT SELECT ON performance_schema.* TO 'app')")
	require.NoError(t, n.Exec(ctx, "GRANT SELECT ON performance_schema.* TO '"+lab.AppUser+"'@'%'"))

	r = cli(t, "fleet", "-json", n.DSN(""))
	assert.Equal(t, exitProblem, r.code, "rules differ within orders")
	var rep fleetReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	require.Len(t, rep.Nodes, 1)
	assert.Empty(t, rep.Nodes[0].Error)
	rows := map[string]*fleetRow{}
	for _, p := range rep.Programs {
		if p.RWShard {
			rows[p.Program+" "+p.Rules] = p
		}
	}
	require.Len(t, rows, 3, "orders × 2 rules, billing: %s", r.stdout)
	var d2, d4 string
	for _, p := range rep.Programs {
		if p.Program != "orders" {
			continue
		}
		if p.Instances == 2 {
			d2 = p.Rules
		} else {
			d4 = p.Rules
		}
	}
	require.Regexp(t, `^[0-9a-f]{12}$`, d2)
	require.Regexp(t, `^[0-9a-f]{12}$`, d4)
	require.NotEqual(t, d2, d4)

	o2, o4, billing := rows["orders "+d2], rows["orders "+d4], rows["billing none"]
	require.NotNil(t, billing, r.stdout)
	assert.Equal(t, 2, o2.Instances)
	assert.Equal(t, held[0]+held[1], o2.Connections)
	assert.False(t, o2.RulesDiffer)
	assert.Equal(t, 1, o4.Instances)
	assert.Equal(t, held[2], o4.Connections)
	assert.True(t, o4.RulesDiffer, "one orders process of three has other rules")
	assert.Equal(t, o2.Version, o4.Version)
	assert.NotEqual(t, "v0.9.0", o2.Version)
	assert.NotEmpty(t, o2.Version)
	assert.Equal(t, "v0.9.0", billing.Version, "the version the DSN's connectionAttributes named")
	assert.Equal(t, 1, billing.Instances)
	assert.Equal(t, held[3], billing.Connections)
	assert.False(t, billing.RulesDiffer)
	for _, p := range []*fleetRow{o2, o4, billing} {
		assert.Equal(t, []string{lab.AppUser}, p.Users)
		assert.Equal(t, []string{"127.0.0.1"}, p.Hosts)
		assert.Equal(t, map[string]int{"primary": p.Connections}, p.ByNode)
	}
	assert.Equal(t, 1, rep.Problems)

	// A user without PROCESS sees the same, once granted SELECT on
	// performance_schema.
	require.NoError(t, n.Exec(ctx, "GRANT SELECT ON performance_schema.* TO '"+lab.PlainUser+"'@'%'"))
	r = cli(t, "fleet", "-json", n.UserDSN(lab.PlainUser, lab.PlainPassword, ""))
	var plainRep fleetReport
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &plainRep), r.stdout)
	require.Len(t, plainRep.Nodes, 1)
	assert.Empty(t, plainRep.Nodes[0].Error)
	for _, p := range plainRep.Programs {
		if p.RWShard {
			want := rows[p.Program+" "+p.Rules]
			require.NotNil(t, want, "%s %s", p.Program, p.Rules)
			assert.Equal(t, want.Connections, p.Connections, "%s %s", p.Program, p.Rules)
			assert.Equal(t, want.Users, p.Users, "%s %s", p.Program, p.Rules)
		}
	}

	// The same as a table.
	r = cli(t, "fleet", n.DSN(""))
	assert.Equal(t, exitProblem, r.code)
	assert.Regexp(t, `(?m)^orders\s+\S+\s+`+d4+`\s+1\s+`+strconv.Itoa(held[2])+`\s+app\s+rules differ from the program's other instances$`, r.stdout)
	assert.Regexp(t, `(?m)^orders\s+\S+\s+`+d2+`\s+2\s+`+strconv.Itoa(held[0]+held[1])+`\s+app\s*$`, r.stdout)
	assert.Regexp(t, `(?m)^billing\s+v0\.9\.0\s+none\s+1\s+`+strconv.Itoa(held[3])+`\s+app\s*$`, r.stdout)
	assert.NotContains(t, r.stdout+r.stderr, lab.AppPassword)
}

// runFleetChild is a child process of TestFleetLab.
func runFleetChild(t *testing.T, variant string) {
	var c fleetChild
	require.NoError(t, json.Unmarshal([]byte(variant), &c))
	cfg, err := rwshard.ParseDSN(c.DSN)
	require.NoError(t, err)
	cn, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(cn)
	defer db.Close()
	ctx := labtest.Ctx(t, time.Minute)
	// Conns transactions open at once: as many backend connections,
	// which go back to the pool idle at the commits.
	txs := make([]*sql.Tx, c.Conns)
	for i := range txs {
		txs[i], err = db.BeginTx(ctx, nil)
		require.NoError(t, err)
		var one int
		require.NoError(t, txs[i].QueryRowContext(ctx, "SELECT 1").Scan(&one))
	}
	for _, tx := range txs {
		require.NoError(t, tx.Commit())
	}
	open := 0
	for _, n := range cn.Stats().Nodes {
		open += n.Pool.OpenConnections
	}
	fmt.Printf("FLEETCHILD READY %d\n", open)
	io.Copy(io.Discard, os.Stdin)
}

// A server without performance_schema: fleet says so and what to do.
func TestFleetPerformanceSchemaOff(t *testing.T) {
	l := rwLab.Get(t)
	r := cli(t, "fleet", l.Primary().DSN(""))
	assert.Equal(t, exitProblem, r.code)
	assert.Contains(t, r.stdout, "primary ("+l.Primary().Addr()+"): performance_schema is OFF: fleet reads performance_schema.session_connect_attrs; start the server with performance_schema=ON (a restart)")
}
