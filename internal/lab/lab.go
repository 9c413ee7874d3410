package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options describe a lab topology.
type Options struct {
	// Shards is the number of replication groups (1 for plain read/write
	// splitting).
	Shards int
	// Replicas is the number of replicas per group.
	Replicas int
	// Detach leaves the servers running after this process exits (the CLI's
	// `lab up`). Tests leave it false: their servers die with them.
	Detach bool
	// Dir is the parent of the lab's directory; os.TempDir() if empty.
	Dir string
	// ServerArgs are more mariadbd options for every node, after the
	// lab's own (which they override): "--performance-schema=ON" for a
	// test that reads performance_schema.
	ServerArgs []string
	// Galera makes the group's nodes a Galera cluster (every node
	// writable, no asynchronous replication) instead of a primary and
	// replicas; Shards must be 1.
	Galera bool
}

// RW is the read/write splitting topology: one primary and two replicas,
// named "primary", "replica1" and "replica2".
func RW() Options { return Options{Shards: 1, Replicas: 2} }

// Sharded is the sharding topology: two groups "ds_0" and "ds_1", each one
// primary and one replica ("ds_0-primary", "ds_0-replica1", …).
func Sharded() Options { return Options{Shards: 2, Replicas: 1} }

// Galera is the Galera topology: one cluster "galera" of three nodes,
// "node1", "node2" and "node3", every one Synced and writable. Node1
// bootstrapped the cluster; the others joined it by state transfer.
func Galera() Options { return Options{Shards: 1, Replicas: 2, Galera: true} }

// DirPrefix starts the name of every lab directory; processes whose
// --datadir contains it belong to a lab (see Reap).
const DirPrefix = "rwshard-lab-"

// Lab is a running set of MariaDB servers replicating on loopback.
type Lab struct {
	Dir    string
	Groups []*Group

	mu      sync.Mutex
	stopped bool
}

// Group is one replication group: a primary and its replicas. Primary
// changes on Switchover.
type Group struct {
	Name  string
	Nodes []*Node // in creation order; Nodes[0] was the first primary

	mu      sync.Mutex
	primary *Node
}

// Primary returns the group's current primary.
func (g *Group) Primary() *Node {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.primary
}

// Replicas returns the group's current replicas.
func (g *Group) Replicas() []*Node {
	p := g.Primary()
	var out []*Node
	for _, n := range g.Nodes {
		if n != p {
			out = append(out, n)
		}
	}
	return out
}

// Start creates and starts a lab and waits until every replica replicates.
// On error nothing is left running.
func Start(ctx context.Context, o Options) (l *Lab, err error) {
	if o.Shards <= 0 {
		o.Shards = 1
	}
	if o.Replicas < 0 {
		return nil, fmt.Errorf("lab: negative replica count %d", o.Replicas)
	}
	if o.Galera && o.Shards != 1 {
		return nil, fmt.Errorf("lab: a Galera lab has one group, not %d", o.Shards)
	}
	mariadbd, err := LookMariadbd()
	if err != nil {
		return nil, err
	}
	tmpl, err := template(ctx, mariadbd)
	if err != nil {
		return nil, err
	}
	parent := o.Dir
	if parent == "" {
		parent = os.TempDir()
	}
	dir, err := os.MkdirTemp(parent, DirPrefix)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	l = &Lab{Dir: dir}
	defer func() {
		if err != nil {
			l.Stop()
		}
	}()
	if o.Galera {
		return l, l.startGalera(ctx, tmpl, mariadbd, o)
	}

	id := 0
	for s := 0; s < o.Shards; s++ {
		g := &Group{Name: fmt.Sprintf("ds_%d", s)}
		for r := 0; r <= o.Replicas; r++ {
			id++
			name := "primary"
			if r > 0 {
				name = "replica" + strconv.Itoa(r)
			}
			if o.Shards > 1 {
				name = g.Name + "-" + name
			}
			port, err := pickPort()
			if err != nil {
				return l, fmt.Errorf("lab: free port: %w", err)
			}
			n := &Node{Name: name, Group: g.Name, ServerID: id, Port: port,
				Dir: filepath.Join(dir, name), mariadbd: mariadbd, detach: o.Detach, readOnly: r > 0,
				args: o.ServerArgs}
			g.Nodes = append(g.Nodes, n)
		}
		g.primary = g.Nodes[0]
		l.Groups = append(l.Groups, g)
	}

	// Copy and start every node concurrently, then wire replication.
	nodes := l.Nodes()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			if err := copyDir(tmpl, n.Dir); err != nil {
				errs[i] = fmt.Errorf("lab: copy template for %s: %w", n.Name, err)
				return
			}
			errs[i] = n.startNew(ctx)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return l, err
	}
	for _, g := range l.Groups {
		for _, r := range g.Replicas() {
			if err := r.replicateFrom(ctx, g.Primary()); err != nil {
				return l, err
			}
		}
	}
	if err := l.Sync(ctx, 30*time.Second); err != nil {
		return l, err
	}
	return l, nil
}

// startNew starts a new node, before anything refers to its port. That
// port was free when pickPort checked it, but another process may bind it
// before mariadbd does (on 6 December another lab starting at the same
// moment took one): a node that exits because its port is taken starts
// again on another, up to three times in all.
func (n *Node) startNew(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		logged := n.logSize()
		err := n.startAndWait(ctx)
		if err == nil || attempt == 3 || !n.portTakenSince(logged) {
			return err
		}
		port, perr := pickPort()
		if perr != nil {
			return errors.Join(err, perr)
		}
		n.Port = port
	}
}

// startAndWait spawns the node and waits until it accepts connections.
func (n *Node) startAndWait(ctx context.Context) error {
	if err := n.spawn(n.detach); err != nil {
		return err
	}
	_, err := n.waitReady(ctx, 60*time.Second)
	return err
}

// replicateFrom points n at primary with GTID replication and starts it.
func (n *Node) replicateFrom(ctx context.Context, primary *Node) error {
	q := fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, "+
		"MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos, "+
		"MASTER_CONNECT_RETRY=1", primary.Port, replUser, replPassword)
	if err := n.Exec(ctx, q); err != nil {
		return err
	}
	return n.Exec(ctx, "START SLAVE")
}

// Nodes returns every node of every group.
func (l *Lab) Nodes() []*Node {
	var out []*Node
	for _, g := range l.Groups {
		out = append(out, g.Nodes...)
	}
	return out
}

// Node returns the node with the given name, or nil.
func (l *Lab) Node(name string) *Node {
	for _, n := range l.Nodes() {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// Group returns the group a node belongs to.
func (l *Lab) group(n *Node) *Group {
	for _, g := range l.Groups {
		if g.Name == n.Group {
			return g
		}
	}
	return nil
}

// Primary is the current primary of the first group.
func (l *Lab) Primary() *Node { return l.Groups[0].Primary() }

// Replicas are the current replicas of the first group.
func (l *Lab) Replicas() []*Node { return l.Groups[0].Replicas() }

// NodeByServerID maps a @@server_id to the node name, so a test can tell
// where a statement ran. Unknown ids give "server_id=N".
func (l *Lab) NodeByServerID(id int64) string {
	for _, n := range l.Nodes() {
		if int64(n.ServerID) == id {
			return n.Name
		}
	}
	return "server_id=" + strconv.FormatInt(id, 10)
}

// Sync waits until every running replica has applied everything its primary
// has binlogged (MASTER_GTID_WAIT), up to timeout.
func (l *Lab) Sync(ctx context.Context, timeout time.Duration) error {
	for _, g := range l.Groups {
		if g.Nodes[0].galera != nil {
			continue // synchronous: nothing to wait for
		}
		var pos string
		if err := g.Primary().Admin().QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
			return fmt.Errorf("lab: %s gtid_binlog_pos: %w", g.Primary().Name, err)
		}
		for _, r := range g.Replicas() {
			if !r.Running() {
				continue
			}
			if err := r.waitGTID(ctx, pos, timeout); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitGTID waits until n has applied pos.
func (n *Node) waitGTID(ctx context.Context, pos string, timeout time.Duration) error {
	var res int
	err := n.Admin().QueryRowContext(ctx, "SELECT MASTER_GTID_WAIT(?, ?)", pos, timeout.Seconds()).Scan(&res)
	if err != nil {
		return fmt.Errorf("lab: %s MASTER_GTID_WAIT(%s): %w", n.Name, pos, err)
	}
	if res != 0 {
		return fmt.Errorf("lab: %s did not reach GTID %s within %s:\n%s", n.Name, pos, timeout, n.replicaStatus(ctx))
	}
	return nil
}

// replicaStatus summarises SHOW SLAVE STATUS for error messages.
func (n *Node) replicaStatus(ctx context.Context) string {
	rows, err := n.Admin().QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		return "not a replica"
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for i, c := range cols {
		switch c {
		case "Slave_IO_Running", "Slave_SQL_Running", "Last_IO_Error", "Last_SQL_Error",
			"Seconds_Behind_Master", "Gtid_IO_Pos", "Master_Port":
			fmt.Fprintf(&b, "%s=%s ", c, vals[i])
		}
	}
	return b.String()
}

// Stop kills every server and removes the lab directory. It is safe to call
// more than once.
func (l *Lab) Stop() error {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return nil
	}
	l.stopped = true
	l.mu.Unlock()
	var errs []error
	for _, n := range l.Nodes() {
		errs = append(errs, n.kill())
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return os.RemoveAll(l.Dir)
}
