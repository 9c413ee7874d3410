package main

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/rwshard/rwshard/shard"
)

// needMariaDB skips when mariadbd is missing, unless RWSHARD_LAB=require.
func needMariaDB(t *testing.T) {
	t.Helper()
	if _, err := lab.LookMariadbd(); err != nil {
		if labtest.Required() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// stopOnFailure stops whatever lab the state file records when the test
// ends, so that a failing test leaves no detached server behind.
func stopOnFailure(t *testing.T, statePath string) {
	t.Cleanup(func() {
		if s, err := lab.Load(statePath); err == nil {
			_, _ = s.Stop()
		}
	})
}

func TestLabUpStatusDown(t *testing.T) {
	needMariaDB(t)
	parent, state := t.TempDir(), filepath.Join(t.TempDir(), "lab.json")
	stopOnFailure(t, state)

	r := cli(t, "lab", "up", "-dir", parent, "-state", state)
	require.Equal(t, exitOK, r.code, r)
	s, err := lab.Load(state)
	require.NoError(t, err)
	require.Len(t, s.Nodes, 3)
	assert.Equal(t, parent, filepath.Dir(s.Dir))
	var pids []int
	for _, n := range s.Nodes {
		assert.True(t, n.Alive(), n.Name)
		assert.Regexp(t, row(n.Name, "ds_0"), r.stdout)
		pids = append(pids, n.PID)
	}
	dsn := hostsDSN(lab.AppPassword, []string{s.Nodes[0].Addr(), s.Nodes[1].Addr(), s.Nodes[2].Addr()}, "")
	assert.Contains(t, r.stdout, "  "+dsn+"\n")
	assert.Contains(t, r.stdout, "rwshard lab down -state "+state)

	// A second lab on the same state file is refused.
	again := cli(t, "lab", "up", "-dir", parent, "-state", state)
	assert.Equal(t, exitProblem, again.code, again)
	assert.Contains(t, again.stderr, "a lab is already running")

	r = cli(t, "lab", "status", "-state", state)
	require.Equal(t, exitOK, r.code, r)
	for _, n := range s.Nodes {
		assert.Regexp(t, `(?m)^`+n.Name+`\s.*\s`+n.Addr()+`\s+\d+\s+yes$`, r.stdout)
	}
	r = cli(t, "lab", "status", "-dsn", "-state", state)
	require.Equal(t, exitOK, r.code, r)
	assert.Equal(t, dsn+"\n", r.stdout)

	// The printed DSN works: the detached lab passes check.
	r = cli(t, "check", strings.TrimSpace(r.stdout))
	assert.Equal(t, exitOK, r.code, r)

	// down stops the recorded lab and nothing else: a lab next to it, as
	// another user's or another test's, keeps running.
	other, _ := labtest.Detached(t, 0)
	r = cli(t, "lab", "down", "-state", state)
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "killed 3 servers")
	assert.NotContains(t, r.stdout, "reaped")
	assert.True(t, other.State().Nodes[0].Alive(), "lab down killed a server of another lab")
	left := lab.Leftovers()
	for _, pid := range pids {
		assert.NotContains(t, left, pid, "lab down left a mariadbd running")
	}
	assert.NoDirExists(t, s.Dir)
	_, err = os.Stat(state)
	assert.True(t, errors.Is(err, os.ErrNotExist), "state file still there: %v", err)

	r = cli(t, "lab", "status", "-state", state)
	assert.Equal(t, exitProblem, r.code, r)
	assert.Contains(t, r.stderr, "no lab recorded at "+state)
	// Without a state file, down stops nothing, and reaps nothing unless
	// asked; -reap of the temp directory itself is refused.
	r = cli(t, "lab", "down", "-state", state)
	assert.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "no lab recorded")
	assert.True(t, other.State().Nodes[0].Alive())
	r = cli(t, "lab", "down", "-state", state, "-reap", os.TempDir())
	assert.Equal(t, exitUsage, r.code, r)
	assert.True(t, other.State().Nodes[0].Alive())
}

func TestLabShardedAndDeadServer(t *testing.T) {
	needMariaDB(t)
	parent, state := t.TempDir(), filepath.Join(t.TempDir(), "lab.json")
	stopOnFailure(t, state)

	r := cli(t, "lab", "up", "-topology", "sharded", "-dir", parent, "-state", state)
	require.Equal(t, exitOK, r.code, r)
	s, err := lab.Load(state)
	require.NoError(t, err)
	require.Len(t, s.Nodes, 4)
	assert.Equal(t, []string{"ds_0", "ds_1"}, s.Groups())
	assert.Contains(t, r.stdout, "one per group")
	labRulesWork(t, s, r.stdout, state)
	r = cli(t, "lab", "status", "-dsn", "-state", state)
	require.Equal(t, exitOK, r.code, r)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 2)
	for i, g := range s.Groups() {
		p, rep := s.Primary(g), s.Nodes[2*i+1]
		assert.Equal(t, hostsDSN(lab.AppPassword, []string{p.Addr(), rep.Addr()}, ""), lines[i])
	}

	// A server that died is reported, and down still cleans up. Kill it
	// through a copy of the state that names only that server.
	victim := s.Nodes[3]
	killOne := &lab.State{Dir: filepath.Join(parent, lab.DirPrefix+"none"), Nodes: []lab.NodeState{victim}}
	killed, err := killOne.Stop()
	require.NoError(t, err)
	require.Equal(t, 1, killed)
	r = cli(t, "lab", "status", "-state", state)
	assert.Equal(t, exitProblem, r.code, r)
	assert.Regexp(t, `(?m)^`+victim.Name+`\s.*\sno$`, r.stdout)
	assert.Contains(t, r.stderr, "1 of 4 servers are not running")

	r = cli(t, "lab", "down", "-state", state)
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "killed 3 servers")
	left := lab.Leftovers()
	for _, n := range s.Nodes {
		assert.NotContains(t, left, n.PID)
	}
	assert.NoDirExists(t, s.Dir)
	assert.NoFileExists(t, filepath.Join(s.Dir, labRulesFile))
}

// labRulesWork checks the rules files of a sharded lab that lab up
// printed as up: both dialects load to the same rules, check passes on
// both (the tables exist), rwshard runs statements over both, and lab
// status shows them.
func labRulesWork(t *testing.T, s *lab.State, up, state string) {
	t.Helper()
	native, ss := filepath.Join(s.Dir, labRulesFile), filepath.Join(s.Dir, labRulesSSFile)
	assert.Contains(t, up, "  rwshard: "+native+"\n")
	assert.Contains(t, up, "  ShardingSphere-JDBC 5.x: "+ss+"\n")
	assert.Contains(t, up, "rwshard check "+native+"\n")
	assert.Contains(t, up, "/?rwshard.rulesFile="+url.QueryEscape(native)+"\n")

	// Both dialects give the same data sources, tables and sharding.
	build := func(path string) *shard.Rules {
		c, err := shard.LoadRules(path)
		require.NoError(t, err, path)
		r, err := c.Build(nil)
		require.NoError(t, err, path)
		return r
	}
	rn, rs := build(native), build(ss)
	assert.Equal(t, []string{"t_dict"}, rn.Broadcast)
	assert.Equal(t, rn.Broadcast, rs.Broadcast)
	assert.Equal(t, [][]string{{"t_order", "t_order_item"}}, rn.BindingGroups)
	assert.Equal(t, rn.BindingGroups, rs.BindingGroups)
	assert.Equal(t, "ds_0", rs.DefaultDataSource)
	assert.Equal(t, rn.DefaultDataSource, rs.DefaultDataSource)
	require.Len(t, rn.DataSources, 2)
	require.Len(t, rs.DataSources, 2)
	for name, d := range rn.DataSources {
		o := rs.DataSources[name]
		require.NotNil(t, o, name)
		pn, err := mysql.ParseDSN(d.Primary)
		require.NoError(t, err)
		ps, err := mysql.ParseDSN(o.Primary)
		require.NoError(t, err)
		assert.Equal(t, s.Primary(name).Addr(), pn.Addr)
		assert.Equal(t, []string{pn.User, pn.Passwd, pn.Addr, pn.DBName}, []string{ps.User, ps.Passwd, ps.Addr, ps.DBName}, name)
		require.Len(t, d.Replicas, 1)
		require.Len(t, o.Replicas, 1)
	}
	assert.Equal(t, placedStringsByDS(placements(rn)), placedStringsByDS(placements(rs)))
	assert.Equal(t, []string{
		"t_order_0(t_order) user_id:database sharding column order_id:table sharding column, key generator column",
		"t_order_1(t_order) user_id:database sharding column order_id:table sharding column, key generator column",
		"t_order_item_0(t_order_item) user_id:database sharding column order_id:table sharding column",
		"t_order_item_1(t_order_item) user_id:database sharding column order_id:table sharding column",
		"t_dict(t_dict, broadcast)",
	}, placedStrings(placements(rs)["ds_1"]))

	// check passes on both files: every data node exists.
	for _, f := range []string{native, ss} {
		r := cli(t, "check", f)
		require.Equal(t, exitOK, r.code, r)
		assert.Equal(t, 2, strings.Count(r.stdout, "data nodes: 5 of 5 tables found in database app"), r.stdout)
	}

	// A row written through one file is read through the other, from the
	// data source and table its keys place it in.
	ctx := labtest.Ctx(t, time.Minute)
	open := func(path string) *sql.DB {
		db, err := sql.Open(rwshard.DriverName, "/?rwshard.rulesFile="+url.QueryEscape(path))
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		return db
	}
	_, err := open(ss).ExecContext(ctx, "INSERT INTO t_order (user_id, amount, status) VALUES (3, 1.50, 'new')")
	require.NoError(t, err)
	var orderID int64
	require.NoError(t, open(native).QueryRowContext(hint.Primary(ctx),
		"SELECT order_id FROM t_order WHERE user_id = 3 AND status = 'new'").Scan(&orderID))
	assert.Positive(t, orderID, "a snowflake key")
	direct, err := sql.Open("mysql", labNodeDSN(s.Primary("ds_1").Addr()))
	require.NoError(t, err)
	defer direct.Close()
	var n int
	require.NoError(t, direct.QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*) FROM t_order_%d WHERE order_id = ?", orderID%2), orderID).Scan(&n))
	assert.Equal(t, 1, n, "the row is not in ds_1.t_order_%d", orderID%2)

	// lab status shows the files.
	r := cli(t, "lab", "status", "-state", state)
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "  rwshard: "+native+"\n")
	assert.Contains(t, r.stdout, "  ShardingSphere-JDBC 5.x: "+ss+"\n")
	r = cli(t, "lab", "status", "-rules", "-state", state)
	require.Equal(t, exitOK, r.code, r)
	assert.Equal(t, native+"\n"+ss+"\n", r.stdout)
}

// placedStringsByDS is placedStrings of every data source.
func placedStringsByDS(p map[string][]*placedTable) map[string][]string {
	out := map[string][]string{}
	for name, ts := range p {
		out[name] = placedStrings(ts)
	}
	return out
}

func TestLabDownReapsLeftovers(t *testing.T) {
	needMariaDB(t)
	// A detached lab whose state was lost: down -reap reaps it, and only
	// under that directory.
	l, parent := labtest.Detached(t, 0)
	pid := l.State().Nodes[0].PID
	require.Contains(t, lab.Leftovers(), pid)

	r := cli(t, "lab", "down", "-state", filepath.Join(t.TempDir(), "none.json"), "-reap", t.TempDir())
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "reaped 0 leftover lab servers")
	assert.True(t, l.State().Nodes[0].Alive(), "reaped a server outside -dir")

	r = cli(t, "lab", "down", "-state", filepath.Join(t.TempDir(), "none.json"), "-reap", parent)
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "reaped 1 leftover lab server under "+parent)
	require.Eventually(t, func() bool { return !l.Nodes()[0].Running() }, 30*time.Second, 10*time.Millisecond)
}
