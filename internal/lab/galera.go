package lab

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GaleraProvider is where Debian's galera-4 package installs the wsrep
// provider library.
const GaleraProvider = "/usr/lib/galera/libgalera_smm.so"

// ErrNoGalera reports a machine without the Galera provider library.
var ErrNoGalera = errors.New("lab: " + GaleraProvider + " not found (Debian: apt-get install galera-4 rsync; see scripts/install-mariadb)")

// galeraDomain is the GTID domain of the cluster's replicated writes
// (wsrep_gtid_domain_id): every node numbers them alike, so a GTID learned
// on one node can be waited for on another.
const galeraDomain = 100

// galeraNode is what a Galera node has beyond a plain one: the ports of
// group communication (gmcast), incremental (IST) and snapshot (SST) state
// transfer, and the cluster address it joins.
type galeraNode struct {
	gcommPort, istPort, sstPort int

	mu        sync.Mutex
	peers     string // gcomm:// address of every node
	bootstrap bool   // the next start bootstraps a new cluster (gcomm://)
	startPos  string // --wsrep-start-position of the next start; "" none
	sstMethod string // wsrep_sst_method of the next start; "" rsync
	sstDonor  string // wsrep_sst_donor of the next start; "" any
	binDir    string // where the lab's SST script is (the lab directory)
}

// args are the wsrep options of n. Timeouts are short: a killed node is
// declared gone within seconds, as a test wants, not the production
// default of tens of seconds.
func (g *galeraNode) args(n *Node) []string {
	g.mu.Lock()
	addr := g.peers
	if g.bootstrap {
		addr = "gcomm://"
		g.bootstrap = false
	}
	var pos []string
	if g.startPos != "" {
		pos = []string{"--wsrep-start-position=" + g.startPos}
		g.startPos = ""
	}
	method := cmp.Or(g.sstMethod, "rsync")
	if g.sstDonor != "" {
		pos = append(pos, "--wsrep-sst-donor="+g.sstDonor)
	}
	g.sstMethod, g.sstDonor = "", ""
	g.mu.Unlock()
	return append(pos,
		"--wsrep-on=ON",
		"--wsrep-provider="+GaleraProvider,
		"--wsrep-cluster-name=rwshard-lab",
		"--wsrep-cluster-address="+addr,
		"--wsrep-node-name="+n.Name,
		"--wsrep-node-address=127.0.0.1:"+strconv.Itoa(g.gcommPort),
		"--wsrep-sst-method="+method,
		"--wsrep-sst-receive-address=127.0.0.1:"+strconv.Itoa(g.sstPort),
		"--wsrep-gtid-mode=ON",
		"--wsrep-gtid-domain-id="+strconv.Itoa(galeraDomain),
		"--gtid-domain-id="+strconv.Itoa(n.ServerID), // writes outside wsrep, if any
		"--innodb-autoinc-lock-mode=2",
		"--wsrep-provider-options="+strings.Join([]string{
			"gmcast.listen_addr=tcp://127.0.0.1:" + strconv.Itoa(g.gcommPort),
			"ist.recv_addr=127.0.0.1:" + strconv.Itoa(g.istPort),
			"evs.keepalive_period=PT0.5S",
			"evs.suspect_timeout=PT2S",
			"evs.inactive_timeout=PT3S",
			"evs.install_timeout=PT3S",
			"evs.inactive_check_period=PT0.5S",
			"gcache.size=32M",
		}, ";"),
	)
}

// recoverPosition finds the position a killed node's storage engine
// reached (mariadbd --wsrep-recover, as mysqld_safe and the systemd unit
// do before every start) for its next start: with it the node catches up
// by incremental state transfer from the others' write-set cache instead
// of copying everything.
func (n *Node) recoverPosition(ctx context.Context) error {
	log := filepath.Join(n.Dir, "recover.log")
	_ = os.Remove(log)
	if err := n.spawn(false, "--wsrep-recover", "--log-error="+log); err != nil {
		return err
	}
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if !p.wait(60 * time.Second) {
		_ = n.kill()
		return fmt.Errorf("lab: %s: mariadbd --wsrep-recover did not finish", n.Name)
	}
	n.mu.Lock()
	n.proc = nil
	n.mu.Unlock()
	p.release()
	b, _ := os.ReadFile(log)
	const mark = "WSREP: Recovered position: "
	i := bytes.LastIndex(b, []byte(mark))
	if i < 0 {
		return nil // none: the node joins by snapshot transfer
	}
	pos, _, _ := strings.Cut(string(b[i+len(mark):]), "\n")
	n.galera.mu.Lock()
	n.galera.startPos = strings.TrimSpace(pos)
	n.galera.mu.Unlock()
	return nil
}

// startGalera creates the nodes of a Galera lab and starts them: the first
// bootstraps the cluster, the others join it one after the other (two
// joining at once collide and take longer), each by an rsync state
// transfer from a Synced node.
func (l *Lab) startGalera(ctx context.Context, tmpl, mariadbd string, o Options) error {
	if _, err := os.Stat(GaleraProvider); err != nil {
		return ErrNoGalera
	}
	// The rsync daemon of a state transfer runs as nobody when the server
	// runs as root: it must reach and write the joiner's data directory.
	if err := os.Chmod(l.Dir, 0o755); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	if err := os.WriteFile(filepath.Join(l.Dir, "wsrep_sst_"+sstHoldMethod), []byte(sstHoldScript), 0o755); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	g := &Group{Name: "galera"}
	var addrs []string
	for i := 0; i <= o.Replicas; i++ {
		var ports [4]int
		for j := range ports {
			p, err := pickPort()
			if err != nil {
				return fmt.Errorf("lab: free port: %w", err)
			}
			ports[j] = p
		}
		name := "node" + strconv.Itoa(i+1)
		n := &Node{Name: name, Group: g.Name, ServerID: i + 1, Port: ports[0],
			Dir: filepath.Join(l.Dir, name), mariadbd: mariadbd, detach: o.Detach, args: o.ServerArgs,
			galera: &galeraNode{gcommPort: ports[1], istPort: ports[2], sstPort: ports[3], bootstrap: i == 0, binDir: l.Dir}}
		g.Nodes = append(g.Nodes, n)
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(ports[1]))
	}
	for _, n := range g.Nodes {
		n.galera.peers = "gcomm://" + strings.Join(addrs, ",")
	}
	g.primary = g.Nodes[0]
	l.Groups = append(l.Groups, g)
	// The first node starts from the template; the others from an empty
	// directory that the state transfer fills, as a new node joins.
	if err := copyDir(tmpl, g.Nodes[0].Dir); err != nil {
		return fmt.Errorf("lab: copy template for %s: %w", g.Nodes[0].Name, err)
	}
	for _, n := range g.Nodes {
		if err := os.MkdirAll(n.Dir, 0o777); err != nil {
			return fmt.Errorf("lab: %w", err)
		}
		if err := openUp(n.Dir); err != nil {
			return err
		}
	}
	for i, n := range g.Nodes {
		err := n.startNew(ctx)
		if err == nil {
			err = l.WaitSynced(ctx, n, 60*time.Second)
		}
		if err != nil && i > 0 {
			// A failed state transfer is told in the donor's log.
			return fmt.Errorf("%w\n%s's log on state transfers:\n%s", err, g.Nodes[0].Name, g.Nodes[0].logLines("SST", "rsync"))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// giveToRsync lets the rsync daemon of a state transfer replace every
// file of dir: open to all, and owned by nobody when the lab runs as root
// (the daemon then runs as nobody, and may only change modes of its own
// files).
func giveToRsync(dir string) error {
	if err := openUp(dir); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	return filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, -1)
	})
}

// openUp lets any user read and write dir's tree (see startGalera).
func openUp(dir string) error {
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o666)
		if d.IsDir() {
			mode = 0o777
		}
		return os.Chmod(path, mode)
	})
}

// Galera reports a node of a Galera cluster.
func (n *Node) Galera() bool { return n.galera != nil }

// WsrepState is a node's Galera state as its status variables say.
type WsrepState struct {
	Ready         bool   // wsrep_ready
	LocalState    int    // wsrep_local_state: 1 Joining, 2 Donor/Desynced, 3 Joined, 4 Synced
	ClusterStatus string // wsrep_cluster_status: Primary, non-Primary, Disconnected
	ClusterSize   int    // wsrep_cluster_size
	LocalIndex    int    // wsrep_local_index
	RecvQueue     int    // wsrep_local_recv_queue: write-sets waiting to be applied
	Desync        bool   // @@wsrep_desync
}

// Wsrep reads n's Galera state.
func (n *Node) Wsrep(ctx context.Context) (WsrepState, error) {
	var s WsrepState
	rows, err := n.Admin().QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN "+
		"('wsrep_ready', 'wsrep_local_state', 'wsrep_cluster_status', 'wsrep_cluster_size', 'wsrep_local_index', "+
		"'wsrep_local_recv_queue')")
	if err != nil {
		return s, fmt.Errorf("lab: %s wsrep status: %w", n.Name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return s, err
		}
		switch strings.ToLower(k) {
		case "wsrep_ready":
			s.Ready = v == "ON"
		case "wsrep_local_state":
			s.LocalState, _ = strconv.Atoi(v)
		case "wsrep_cluster_status":
			s.ClusterStatus = v
		case "wsrep_cluster_size":
			s.ClusterSize, _ = strconv.Atoi(v)
		case "wsrep_local_index":
			s.LocalIndex, _ = strconv.Atoi(v)
		case "wsrep_local_recv_queue":
			s.RecvQueue, _ = strconv.Atoi(v)
		}
	}
	if err := rows.Err(); err != nil {
		return s, err
	}
	var desync sql.NullBool
	if err := n.Admin().QueryRowContext(ctx, "SELECT @@wsrep_desync").Scan(&desync); err != nil {
		return s, fmt.Errorf("lab: %s wsrep_desync: %w", n.Name, err)
	}
	s.Desync = desync.Bool
	return s, nil
}

// WaitSynced waits until n is ready, Synced and in the Primary component,
// up to timeout.
func (l *Lab) WaitSynced(ctx context.Context, n *Node, timeout time.Duration) error {
	return n.waitWsrep(ctx, timeout, "Synced", func(s WsrepState) bool {
		return s.Ready && s.LocalState == 4 && s.ClusterStatus == "Primary"
	})
}

// waitWsrep polls n's Galera state until ok, up to timeout.
func (n *Node) waitWsrep(ctx context.Context, timeout time.Duration, what string, ok func(WsrepState) bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last WsrepState
	var err error
	for {
		if last, err = n.Wsrep(ctx); err == nil && ok(last) {
			return nil
		}
		if !n.Running() {
			return fmt.Errorf("lab: %s exited while waiting for it to be %s:\n%s", n.Name, what, n.logTail())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lab: %s not %s after %s (%+v, %v)\n%s", n.Name, what, timeout, last, err, n.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Desync sets wsrep_desync on n: on, the node leaves flow control and
// reports wsrep_local_state 2 (Donor/Desynced), as an operator does it
// before a backup; off, it becomes Synced again once it caught up.
func (l *Lab) Desync(ctx context.Context, n *Node, on bool) error {
	if err := n.Exec(ctx, "SET GLOBAL wsrep_desync = "+onOff(on)); err != nil {
		return err
	}
	if on {
		return nil
	}
	return l.WaitSynced(ctx, n, 30*time.Second)
}

// StallApply holds n's applier at the first write-set that writes table
// (FLUSH TABLES table WITH READ LOCK on a connection of its own): the
// write-sets after it queue (wsrep_local_recv_queue grows) while n stays
// Synced and not desynced, as a node whose disk cannot keep up. release
// lets it apply them; a test may call it from its body and its cleanup:
// calls after the first return the first's result.
func (l *Lab) StallApply(ctx context.Context, n *Node, table string) (release func() error, err error) {
	c, err := n.Admin().Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("lab: %s: %w", n.Name, err)
	}
	if _, err := c.ExecContext(ctx, "FLUSH TABLES "+table+" WITH READ LOCK"); err != nil {
		c.Close()
		return nil, fmt.Errorf("lab: %s: stall apply on %s: %w", n.Name, table, err)
	}
	return sync.OnceValue(func() error {
		defer c.Close()
		_, err := c.ExecContext(context.Background(), "UNLOCK TABLES")
		return err
	}), nil
}

// Isolate cuts n off from the cluster's group communication
// (gmcast.isolate=1): the others go on as the Primary component without
// it, while n, alone, is non-Primary and answers queries with error 1047.
// Isolate(n, false) lets it join again and waits until it is Synced.
func (l *Lab) Isolate(ctx context.Context, n *Node, on bool) error {
	v := "0"
	if on {
		v = "1"
	}
	if err := n.Exec(ctx, "SET GLOBAL wsrep_provider_options = 'gmcast.isolate="+v+"'"); err != nil {
		return err
	}
	if on {
		return n.waitWsrep(ctx, 30*time.Second, "non-Primary", func(s WsrepState) bool {
			return s.ClusterStatus != "Primary"
		})
	}
	return l.WaitSynced(ctx, n, 60*time.Second)
}

// logLines returns the lines of the node's error log that contain one of
// words, the last 40 of them.
func (n *Node) logLines(words ...string) string {
	b, _ := os.ReadFile(filepath.Join(n.Dir, "error.log"))
	var out []string
	for line := range strings.Lines(string(b)) {
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	if len(out) > 40 {
		out = out[len(out)-40:]
	}
	return strings.Join(out, "")
}

// sstHoldMethod is the lab's state transfer method: rsync, but the donor
// holds before it copies while the hold file (sstHold, in the lab
// directory) exists, so that it stays a donor as long as a test needs.
const (
	sstHoldMethod = "labhold"
	sstHold       = "sst-hold"
	sstHoldScript = `#!/bin/sh
# rwshard lab: rsync state transfer whose donor waits while sst-hold exists.
for a in "$@"; do
	if [ "$a" = donor ]; then
		n=0
		while [ -e "$(dirname "$0")/` + sstHold + `" ] && [ $n -lt 1200 ]; do
			sleep 0.1
			n=$((n + 1))
		done
	fi
done
exec wsrep_sst_rsync "$@"
`
)

// Donor makes donor a state-transfer donor and keeps it one until release
// is called: joiner (another node, not node1, whose files the rsync
// daemon could not replace) is killed, loses its saved state and starts
// again asking donor for a snapshot (wsrep_sst_donor), with the lab's
// method, whose donor side waits. Donor then reports wsrep_local_state 2
// (Donor/Desynced) with wsrep_desync OFF, as a real donor does, and the
// joiner is not up. release lets the transfer run and waits until both
// are Synced.
func (l *Lab) Donor(ctx context.Context, donor, joiner *Node) (release func(context.Context) error, err error) {
	if donor.galera == nil || joiner.galera == nil || donor == joiner || joiner == l.Nodes()[0] {
		return nil, fmt.Errorf("lab: donor %s, joiner %s: two Galera nodes, the joiner not %s", donor.Name, joiner.Name, l.Nodes()[0].Name)
	}
	hold := filepath.Join(l.Dir, sstHold)
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	if err := joiner.kill(); err != nil {
		return nil, err
	}
	if err := os.Remove(filepath.Join(joiner.Dir, "grastate.dat")); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("lab: %w", err)
	}
	if err := giveToRsync(joiner.Dir); err != nil {
		return nil, err
	}
	joiner.galera.mu.Lock()
	joiner.galera.sstMethod, joiner.galera.sstDonor = sstHoldMethod, donor.Name
	joiner.galera.mu.Unlock()
	if err := joiner.spawn(joiner.detach); err != nil {
		return nil, err
	}
	started := make(chan error, 1)
	go func() {
		_, err := joiner.waitReady(context.WithoutCancel(ctx), 3*time.Minute)
		started <- err
	}()
	release = func(ctx context.Context) error {
		if err := os.Remove(hold); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("lab: %w", err)
		}
		if err := <-started; err != nil {
			return err
		}
		if err := l.WaitSynced(ctx, joiner, time.Minute); err != nil {
			return err
		}
		return l.WaitSynced(ctx, donor, time.Minute)
	}
	err = donor.waitWsrep(ctx, time.Minute, "a donor", func(s WsrepState) bool {
		return s.LocalState == 2 && !s.Desync
	})
	if err != nil {
		_ = release(ctx)
		return nil, err
	}
	return release, nil
}
