package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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

// faultLab starts a detached rw lab with lab up, stopped with lab down
// when the test ends, and returns its state file and a function that runs
// lab fault on it.
func faultLab(t *testing.T) (state string, fault func(args ...string) result) {
	t.Helper()
	needMariaDB(t)
	parent, state := t.TempDir(), filepath.Join(t.TempDir(), "state.json")
	stopOnFailure(t, state) // after lab down: a lab it could not stop
	t.Cleanup(func() { cli(t, "lab", "down", "-state", state) })
	r := cli(t, "lab", "up", "-dir", parent, "-state", state)
	require.Equal(t, exitOK, r.code, r)
	return state, func(args ...string) result {
		return cli(t, append(append([]string{"lab", "fault"}, args...), "-state", state)...)
	}
}

// loadNode returns the node name of the lab recorded at state.
func loadNode(t *testing.T, state, name string) lab.NodeState {
	t.Helper()
	s, err := lab.Load(state)
	require.NoError(t, err)
	for _, n := range s.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %s in %s", name, state)
	return lab.NodeState{}
}

// nodeDB opens one server directly as the application user.
func nodeDB(t *testing.T, addr, params string) *sql.DB {
	t.Helper()
	dsn := labNodeDSN(addr)
	if params != "" {
		dsn += "?" + params
	}
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// slaveStatus is SHOW SLAVE STATUS of the server at addr, by column.
func slaveStatus(t *testing.T, addr string) map[string]string {
	t.Helper()
	rows, err := nodeDB(t, addr, "timeout=5s").Query("SHOW SLAVE STATUS")
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	out := map[string]string{}
	if !rows.Next() {
		return out
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	require.NoError(t, rows.Scan(ptrs...))
	for i, c := range cols {
		out[c] = vals[i].String
	}
	return out
}

// replicating waits until both replication threads of the server at addr
// run, from the master on masterPort.
func replicating(t *testing.T, addr string, masterPort int) {
	t.Helper()
	var st map[string]string
	require.Eventually(t, func() bool {
		st = slaveStatus(t, addr)
		return st["Slave_IO_Running"] == "Yes" && st["Slave_SQL_Running"] == "Yes" && st["Master_Port"] == strconv.Itoa(masterPort)
	}, 30*time.Second, 50*time.Millisecond, "%s does not replicate from port %d: %v", addr, masterPort, st)
}

// Every fault kind, observed from outside, on one lab started by lab up:
// the lab fault process is not the servers' parent in real use, and the
// state file is all it knows.
func TestLabFault(t *testing.T) {
	state, fault := faultLab(t)
	ctx := labtest.Ctx(t, 3*time.Minute)
	primary, r1, r2 := loadNode(t, state, "primary"), loadNode(t, state, "replica1"), loadNode(t, state, "replica2")
	_, err := nodeDB(t, primary.Addr(), "").ExecContext(ctx, "CREATE TABLE faults (id INT PRIMARY KEY)")
	require.NoError(t, err)

	// lag: SQL_Delay, and 0 removes it.
	r := fault("lag", "replica1", "2")
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "MASTER_DELAY=2")
	assert.Equal(t, "2", slaveStatus(t, r1.Addr())["SQL_Delay"])
	r = fault("lag", "replica1", "0")
	require.Equal(t, exitOK, r.code, r)
	assert.Equal(t, "0", slaveStatus(t, r1.Addr())["SQL_Delay"])

	// stop-replication stops both threads; start-replication starts them.
	r = fault("stop-replication", "replica2")
	require.Equal(t, exitOK, r.code, r)
	st := slaveStatus(t, r2.Addr())
	assert.Equal(t, []string{"No", "No"}, []string{st["Slave_IO_Running"], st["Slave_SQL_Running"]})
	r = fault("start-replication", "replica2")
	require.Equal(t, exitOK, r.code, r)
	replicating(t, r2.Addr(), primary.Port)

	// pause: a connection attempt times out, lab status says paused;
	// resume: it answers again.
	r = fault("pause", "replica2")
	require.Equal(t, exitOK, r.code, r)
	short, cancel := context.WithTimeout(ctx, time.Second)
	err = nodeDB(t, r2.Addr(), "timeout=1s").PingContext(short)
	cancel()
	var ne net.Error
	require.Error(t, err, "a paused server answered")
	assert.True(t, errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout(), "want a timeout, got %v", err)
	r = cli(t, "lab", "status", "-state", state)
	assert.Equal(t, exitOK, r.code, r)
	assert.Regexp(t, `(?m)^replica2\s.*\spaused$`, r.stdout)
	r = fault("resume", "replica2")
	require.Equal(t, exitOK, r.code, r)
	require.Eventually(t, func() bool { return nodeDB(t, r2.Addr(), "timeout=1s").PingContext(ctx) == nil },
		30*time.Second, 50*time.Millisecond, "replica2 does not answer after resume")

	// kill: the port refuses connections, the state file and lab status
	// say it stopped; writes go on on the primary meanwhile.
	r = fault("kill", "replica1")
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "rwshard lab fault restart replica1 -state "+state)
	assert.False(t, r1.Alive(), "replica1's server still runs")
	_, err = net.DialTimeout("tcp", r1.Addr(), 2*time.Second)
	assert.Error(t, err, "a killed server's port accepts connections")
	assert.Zero(t, loadNode(t, state, "replica1").PID)
	r = cli(t, "lab", "status", "-state", state)
	assert.Equal(t, exitProblem, r.code, r)
	assert.Regexp(t, `(?m)^replica1\s.*\s0\s+no$`, r.stdout)
	_, err = nodeDB(t, primary.Addr(), "").ExecContext(ctx, "INSERT INTO faults VALUES (1), (2), (3)")
	require.NoError(t, err)

	// restart: it answers again under a new pid and catches up.
	r = fault("restart", "replica1")
	require.Equal(t, exitOK, r.code, r)
	again := loadNode(t, state, "replica1")
	assert.True(t, again.Alive(), "the state file does not name the restarted server: %+v", again)
	assert.NotEqual(t, r1.PID, again.PID)
	replicating(t, r1.Addr(), primary.Port)
	require.Eventually(t, func() bool {
		var c int
		return nodeDB(t, r1.Addr(), "").QueryRowContext(ctx, "SELECT COUNT(*) FROM faults").Scan(&c) == nil && c == 3
	}, 30*time.Second, 50*time.Millisecond, "the restarted replica did not catch up")
	r = cli(t, "lab", "status", "-state", state)
	assert.Equal(t, exitOK, r.code, r)

	// switchover: replica2 is writable, the old primary is read-only and
	// replicates from it, and the state file and DSN follow.
	r = fault("switchover", "replica2")
	require.Equal(t, exitOK, r.code, r)
	readOnly := func(addr string) (ro int) {
		require.NoError(t, nodeDB(t, addr, "").QueryRowContext(ctx, "SELECT @@global.read_only").Scan(&ro))
		return ro
	}
	assert.Equal(t, 0, readOnly(r2.Addr()))
	assert.Equal(t, 1, readOnly(primary.Addr()))
	replicating(t, primary.Addr(), r2.Port)
	replicating(t, r1.Addr(), r2.Port)
	s, err := lab.Load(state)
	require.NoError(t, err)
	assert.Equal(t, "replica2", s.Primary("ds_0").Name)
	r = cli(t, "lab", "status", "-dsn", "-state", state)
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "@tcp("+r2.Addr()+"),")
	_, err = nodeDB(t, r2.Addr(), "").ExecContext(ctx, "INSERT INTO faults VALUES (4)")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var c int
		return nodeDB(t, primary.Addr(), "").QueryRowContext(ctx, "SELECT COUNT(*) FROM faults").Scan(&c) == nil && c == 4
	}, 30*time.Second, 50*time.Millisecond, "the old primary does not replicate from the new one")

	// What does not apply is refused, naming the node and the valid ones.
	r = fault("switchover", "replica2")
	assert.Equal(t, exitUsage, r.code, r)
	assert.Contains(t, r.stderr, "replica2 is already the primary of ds_0; choose one of its replicas: primary, replica1")
	r = fault("lag", "replica2", "5")
	assert.Equal(t, exitUsage, r.code, r)
	assert.Contains(t, r.stderr, "replica2 is the primary of ds_0; lag applies to a replica: primary, replica1")
	r = fault("restart", "replica1")
	assert.Equal(t, exitProblem, r.code, r)
	assert.Contains(t, r.stderr, "replica1 is running (pid ")
}

// Wrong arguments are usage errors that name what is wrong and list what
// is valid; a fault that cannot run exits 1. A state file of a lab that
// is not running is enough to show it.
func TestLabFaultUsage(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	s := lab.State{Dir: filepath.Join(t.TempDir(), lab.DirPrefix+"gone"), Nodes: []lab.NodeState{
		{Name: "primary", Group: "ds_0", Primary: true, ServerID: 1, Port: 1},
		{Name: "replica1", Group: "ds_0", ServerID: 2, Port: 2},
		{Name: "node1", Group: "galera", Primary: true, ServerID: 3, Port: 3, Galera: &lab.GaleraState{GcommPort: 4}},
	}}
	b, err := json.Marshal(s)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(state, b, 0o600))

	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{nil, "lab fault: want a fault KIND: lag, stop-replication, start-replication, kill, restart, pause, resume, switchover, desync, resync, isolate, rejoin, blackhole"},
		{[]string{"explode", "primary"}, `lab fault: unknown fault "explode": want lag, stop-replication,`},
		{[]string{"kill"}, "lab fault: kill: want NODE, got 0 arguments; nodes: primary, replica1, node1"},
		{[]string{"kill", "replica1", "now"}, "lab fault: kill: want NODE, got 2 arguments; nodes: primary, replica1, node1"},
		{[]string{"kill", "replica9"}, `lab fault: kill: no node "replica9" in the lab at ` + s.Dir + "; nodes: primary, replica1, node1"},
		{[]string{"lag", "replica1"}, "lab fault: lag: want NODE SECONDS, got 1 argument"},
		{[]string{"lag", "replica1", "soon"}, `lab fault: lag replica1: SECONDS "soon": want a whole number of seconds >= 0`},
		{[]string{"lag", "replica1", "1.5s"}, `lab fault: lag replica1: SECONDS "1.5s": want a whole number of seconds >= 0`},
		{[]string{"lag", "primary", "3"}, "lab fault: lag: primary is the primary of ds_0; lag applies to a replica: replica1"},
		{[]string{"stop-replication", "primary"}, "stop-replication applies to a replica: replica1"},
		{[]string{"switchover", "primary"}, "lab fault: switchover: primary is already the primary of ds_0; choose one of its replicas: replica1"},
		{[]string{"desync", "replica1"}, "lab fault: desync: replica1 is not a Galera node; desync applies to a Galera lab (lab up -topology galera)"},
		{[]string{"switchover", "node1"}, "lab fault: switchover: node1 is a Galera node; switchover applies to a replica of a primary (lab up -topology rw)"},
		{[]string{"lag", "node1", "2"}, "lab fault: lag: node1 is a Galera node; lag applies to a replica of a primary"},
		{[]string{"blackhole", "replica1"}, "lab fault: blackhole takes no NODE or other argument, got 1 argument"},
		{[]string{"kill", "app:Pw-1@tcp(127.0.0.1:3306)/app"}, "lab fault: kill: no node (an argument with @, not shown) in the lab"},
		{[]string{"app:Pw-1@tcp(127.0.0.1:3306)/app"}, "lab fault: unknown fault (an argument with @, not shown): want lag,"},
		{[]string{"kill", "replica1", "-for", "1s"}, "lab fault: kill: -for applies to blackhole only"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := cli(t, append([]string{"lab", "fault", "-state", state}, tc.args...)...)
			assert.Equal(t, exitUsage, r.code, r)
			assert.Empty(t, r.stdout)
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			require.Len(t, lines, 3, r.stderr)
			assert.Contains(t, lines[0], tc.msg)
			assert.Equal(t, "run 'rwshard help lab fault' for details", lines[2])
			assert.NotContains(t, r.stderr, "Pw-1", "printed the password")
		})
	}

	// The lab's servers are not running: faults that need one fail and
	// say how to start it; nothing is signalled.
	r := cli(t, "lab", "fault", "-state", state, "kill", "replica1")
	assert.Equal(t, exitProblem, r.code, r)
	assert.Contains(t, r.stderr, "lab fault kill replica1: replica1 is not running; start it with: rwshard lab fault restart replica1 -state "+state)
	r = cli(t, "lab", "fault", "-state", filepath.Join(t.TempDir(), "none.json"), "pause", "primary")
	assert.Equal(t, exitProblem, r.code, r)
	assert.Contains(t, r.stderr, "no lab recorded at")

	r = cli(t, "help", "lab", "fault")
	assert.Equal(t, exitOK, r.code, r)
	assert.True(t, strings.HasPrefix(r.stdout, "usage: rwshard lab fault [flags] KIND [NODE [SECONDS]]"), r.stdout)
	assert.Contains(t, r.stdout, "rwshard lab fault kill replica1\n")
	r = cli(t, "lab", "-h")
	assert.Contains(t, r.stdout, "lab fault [-state FILE] KIND")
}

// syncBuffer is a bytes.Buffer that a running command writes while the
// test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// blackhole accepts a TCP connection and never answers, for -for; with a
// lab recorded it prints the lab's DSN with itself as one more replica.
func TestLabFaultBlackhole(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	s := lab.State{Dir: "/tmp/" + lab.DirPrefix + "x", Nodes: []lab.NodeState{
		{Name: "primary", Group: "ds_0", Primary: true, Port: 3306}, {Name: "replica1", Group: "ds_0", Port: 3307}}}
	b, err := json.Marshal(s)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(state, b, 0o600))

	var out, errs syncBuffer
	code := make(chan int, 1)
	go func() { code <- run([]string{"lab", "fault", "blackhole", "-for", "3s", "-state", state}, &out, &errs) }()
	addrRx := regexp.MustCompile(`blackhole listening on (127\.0\.0\.1:\d+)`)
	var addr string
	require.Eventually(t, func() bool {
		m := addrRx.FindStringSubmatch(out.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil && strings.Contains(out.String(), "running for")
	}, 10*time.Second, 10*time.Millisecond, "no address printed: %s %s", out.String(), errs.String())
	assert.Contains(t, out.String(), "  app:"+lab.AppPassword+"@tcp(127.0.0.1:3306),tcp(127.0.0.1:3307),tcp("+addr+")/app\n")

	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	require.NoError(t, err, "the blackhole does not accept")
	defer c.Close()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
	n, err := c.Read(make([]byte, 16))
	assert.Zero(t, n, "the blackhole answered")
	var ne net.Error
	assert.True(t, errors.As(err, &ne) && ne.Timeout(), "want a read timeout, got %v", err)

	select {
	case got := <-code:
		assert.Equal(t, exitOK, got, "stdout:\n%s\nstderr:\n%s", out.String(), errs.String())
	case <-time.After(30 * time.Second):
		t.Fatal("blackhole -for 3s still running")
	}
	assert.Contains(t, out.String(), "blackhole closed after accepting 1 connection\n")
	assert.Empty(t, errs.String())

	// Without -for it runs until interrupted, which ends the context.
	ctx, cancel := context.WithCancel(context.Background())
	var out2 syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- labBlackhole(ctx, &env{stdout: &out2, stderr: &errs, cmd: labFaultCommand()}, filepath.Join(t.TempDir(), "none.json"), 0)
	}()
	require.Eventually(t, func() bool { return strings.Contains(out2.String(), "until interrupted") }, 10*time.Second, 10*time.Millisecond)
	assert.NotContains(t, out2.String(), "replica of the lab", "a DSN without a lab")
	cancel()
	select {
	case got := <-done:
		assert.Equal(t, exitOK, got)
	case <-time.After(30 * time.Second):
		t.Fatal("blackhole still running after its context ended")
	}
}

// The user's rehearsal: a program reading through rwshard while lab fault
// kills a replica and restarts it. No read fails, the other nodes serve
// while it is down, and it serves again after the restart.
func TestLabFaultRehearsal(t *testing.T) {
	state, fault := faultLab(t)
	ctx := labtest.Ctx(t, 3*time.Minute)
	r := cli(t, "lab", "status", "-dsn", "-state", state)
	require.Equal(t, exitOK, r.code, r)
	dsn := strings.TrimSpace(r.stdout) + "?rwshard.probeInterval=250ms&rwshard.probeTimeout=1s&rwshard.connectTimeout=1s"
	cfg, err := rwshard.ParseDSN(dsn)
	require.NoError(t, err)
	connector, err := rwshard.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })
	_, err = db.ExecContext(ctx, "CREATE TABLE rehearsal (id INT PRIMARY KEY)")
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "INSERT INTO rehearsal VALUES (1), (2), (3)")
	require.NoError(t, err)

	s, err := lab.Load(state)
	require.NoError(t, err)
	nodeOf := map[int64]string{}
	for _, n := range s.Nodes {
		nodeOf[int64(n.ServerID)] = n.Name
	}
	var mu sync.Mutex
	served := map[string]int{}
	var reads, failures atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				var sid int64
				var rows int
				err := db.QueryRowContext(ctx, "SELECT @@server_id, COUNT(*) FROM rehearsal").Scan(&sid, &rows)
				if err != nil || rows != 3 {
					failures.Add(1)
					t.Errorf("read: %d rows, %v", rows, err)
					continue
				}
				reads.Add(1)
				mu.Lock()
				served[nodeOf[sid]]++
				mu.Unlock()
			}
		})
	}
	count := func(name string) int {
		mu.Lock()
		defer mu.Unlock()
		return served[name]
	}
	// The program has been running a while, as a user's would: retries
	// are a share of the traffic (rwshard.retryBudget), which a program
	// that has just started has not built up.
	require.Eventually(t, func() bool { return count("replica1") > 0 && reads.Load() >= 1000 },
		30*time.Second, 10*time.Millisecond, "replica1 takes no reads: %v", served)

	r = fault("kill", "replica1")
	require.Equal(t, exitOK, r.code, r)
	down := reads.Load()
	time.Sleep(2 * time.Second)
	assert.Greater(t, reads.Load(), down, "no reads while replica1 was down")

	r = fault("restart", "replica1")
	require.Equal(t, exitOK, r.code, r)
	before := count("replica1")
	require.Eventually(t, func() bool { return count("replica1") > before }, 30*time.Second, 10*time.Millisecond,
		"the restarted replica takes no reads: %v", served)
	close(stop)
	wg.Wait()
	st := connector.Stats()
	t.Logf("%d reads, %d failed; served: %v; retries %d, refused %d; node-down %d, node-up %d",
		reads.Load(), failures.Load(), served, st.Retries, st.RetriesRefused, st.Events["node-down"], st.Events["node-up"])
	assert.Zero(t, failures.Load(), "reads failed across the kill")
}

// A Galera lab from lab up: one DSN that rwshard serves over the
// cluster, and the Galera faults (and kill and restart) from this process,
// which did not start the servers.
func TestLabGalera(t *testing.T) {
	needMariaDB(t)
	if _, err := os.Stat(lab.GaleraProvider); err != nil {
		if labtest.Required() {
			t.Fatal(lab.ErrNoGalera)
		}
		t.Skip(lab.ErrNoGalera)
	}
	parent, state := t.TempDir(), filepath.Join(t.TempDir(), "state.json")
	stopOnFailure(t, state)
	t.Cleanup(func() { cli(t, "lab", "down", "-state", state) })
	r := cli(t, "lab", "up", "-topology", "galera", "-dir", parent, "-state", state)
	require.Equal(t, exitOK, r.code, r)
	s, err := lab.Load(state)
	require.NoError(t, err)
	require.Len(t, s.Nodes, 3)
	var addrs []string
	for _, n := range s.Nodes {
		assert.Regexp(t, row(n.Name, "galera", "galera"), r.stdout)
		require.NotNil(t, n.Galera, n.Name)
		addrs = append(addrs, n.Addr())
	}
	dsn := hostsDSN(lab.AppPassword, addrs, "rwshard.topology=galera&rwshard.names=node1,node2,node3")
	assert.Contains(t, r.stdout, "  "+dsn+"\n")

	// The DSN serves: a table and a row, then a read that sees it.
	db, err := sql.Open("rwshard", dsn)
	require.NoError(t, err)
	defer db.Close()
	ctx := labtest.Ctx(t, 3*time.Minute)
	exec := func(q string) {
		t.Helper()
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	exec("CREATE TABLE glab (id INT PRIMARY KEY)")
	exec("INSERT INTO glab VALUES (1)")
	var n int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM glab").Scan(&n))
	assert.Equal(t, 1, n)

	fault := func(args ...string) result {
		return cli(t, append(append([]string{"lab", "fault"}, args...), "-state", state)...)
	}
	wsrep := func(name string) lab.WsrepState {
		t.Helper()
		l, err := lab.Attach(s)
		require.NoError(t, err)
		defer l.Release()
		w, err := l.Node(name).Wsrep(ctx)
		require.NoError(t, err)
		return w
	}
	r = fault("desync", "node2")
	require.Equal(t, exitOK, r.code, r)
	assert.True(t, wsrep("node2").Desync)
	r = fault("resync", "node2")
	require.Equal(t, exitOK, r.code, r)
	assert.Equal(t, 4, wsrep("node2").LocalState, "Synced")

	r = fault("isolate", "node3")
	require.Equal(t, exitOK, r.code, r)
	assert.NotEqual(t, "Primary", wsrep("node3").ClusterStatus)
	r = fault("rejoin", "node3")
	require.Equal(t, exitOK, r.code, r)
	assert.Equal(t, "Primary", wsrep("node3").ClusterStatus)

	// A restart from here joins the cluster with the ports the state file
	// keeps, and catches up on what was written meanwhile.
	r = fault("kill", "node3")
	require.Equal(t, exitOK, r.code, r)
	exec("INSERT INTO glab VALUES (2)")
	r = fault("restart", "node3")
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "joined the cluster again and is Synced")
	s, err = lab.Load(state)
	require.NoError(t, err)
	require.NoError(t, nodeDB(t, s.Nodes[2].Addr(), "").QueryRowContext(ctx, "SELECT COUNT(*) FROM glab").Scan(&n))
	assert.Equal(t, 2, n, "node3 caught up")

	r = cli(t, "lab", "down", "-state", state)
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "killed 3 servers")
}
