// Command quickstart starts a local MariaDB replication lab (one primary,
// two replicas, real GTID replication on loopback) and runs a small order
// service through rwshard, printing where every statement ran and why:
// read/write splitting, hints, a transaction, a pinned session, a lagging
// replica fenced, read-your-writes in a session, a replica killed while
// reads go on, and the resulting Stats.
//
//	make demo        # or: go run ./examples/quickstart
package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/lab"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	begin := time.Now()
	fmt.Println("starting the lab: 1 primary + 2 replicas, GTID replication on 127.0.0.1 ...")
	l, err := lab.Start(ctx, lab.RW())
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
	fmt.Printf("lab up and replicating in %s\n", time.Since(begin).Round(10*time.Millisecond))
	err = run(ctx, os.Stdout, l)
	l.Stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// demo carries what every step needs.
type demo struct {
	ctx context.Context
	out io.Writer
	l   *lab.Lab
	db  *sql.DB
	c   *rwshard.Connector
}

func run(ctx context.Context, out io.Writer, l *lab.Lab) error {
	for _, n := range l.Nodes() {
		fmt.Fprintf(out, "  %-9s %s  server_id=%d\n", n.Name, n.Addr(), n.ServerID)
	}
	hosts := []string{"tcp(" + l.Primary().Addr() + ")"}
	for _, r := range l.Replicas() {
		hosts = append(hosts, "tcp("+r.Addr()+")")
	}
	// resetSession: the pinned session shown below ends with its *sql.Conn
	// instead of staying with the pooled connection (go-sql-driver's way,
	// rwshard's default), so the later reads are not pinned to the primary.
	dsn := fmt.Sprintf("%s:%s@%s/%s?parseTime=true&rwshard.probeInterval=250ms&rwshard.maxReplicaLag=1s&rwshard.resetSession=true",
		lab.AppUser, lab.AppPassword, strings.Join(hosts, ","), lab.AppDatabase)
	fmt.Fprintf(out, "\nsql.Open(%q, %q)\n", rwshard.DriverName, redact(dsn))
	db, err := sql.Open(rwshard.DriverName, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := rwshard.ConnectorOf(ctx, db)
	if err != nil {
		return err
	}
	d := &demo{ctx: ctx, out: out, l: l, db: db, c: c}
	for _, step := range []func() error{d.splitting, d.transaction, d.lagFence, d.readYourWrites, d.replicaKilled} {
		if err := step(); err != nil {
			return err
		}
	}
	d.stats()
	fmt.Fprintln(out, "\nstopping the lab.")
	return nil
}

// where runs a query whose last column is @@server_id and names the node.
func (d *demo) where(ctx context.Context, q string, args ...any) (string, error) {
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	for i := range vals {
		vals[i] = new(any)
	}
	var sid int64
	for rows.Next() {
		vals[len(vals)-1] = &sid
		if err := rows.Scan(vals...); err != nil {
			return "", err
		}
	}
	return d.l.NodeByServerID(sid), rows.Err()
}

func (d *demo) show(q, node, why string) {
	if len(q) > 62 {
		q = q[:59] + "..."
	}
	fmt.Fprintf(d.out, "  %-62s %-9s %s\n", q, node, why)
}

func (d *demo) splitting() error {
	fmt.Fprintf(d.out, "\n1. read/write splitting, decided per statement by its SQL text\n  %-62s %-9s %s\n", "statement", "ran on", "why")
	if _, err := d.db.ExecContext(d.ctx, "CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, customer INT, "+
		"total DECIMAL(10,2), status VARCHAR(12), written_by INT)"); err != nil {
		return err
	}
	for i := 1; i <= 3; i++ {
		if _, err := d.db.ExecContext(d.ctx, "INSERT INTO orders (customer, total, status, written_by) VALUES (?, ?, 'new', @@server_id)", i, 10*i); err != nil {
			return err
		}
	}
	var writer int64
	if err := d.db.QueryRowContext(hint.Primary(d.ctx), "SELECT MAX(written_by) FROM orders").Scan(&writer); err != nil {
		return err
	}
	d.show("INSERT INTO orders … VALUES (…, @@server_id) ×3", d.l.NodeByServerID(writer), "write (each row records where it ran)")
	if err := d.l.Sync(d.ctx, 10*time.Second); err != nil {
		return err
	}
	for _, s := range []struct {
		ctx  context.Context
		q    string
		note string
	}{
		{d.ctx, "SELECT COUNT(*), @@server_id FROM orders", ""},
		{d.ctx, "SELECT COUNT(*), @@server_id FROM orders", ""},
		{d.ctx, "SELECT status, @@server_id FROM orders WHERE id = 1 FOR UPDATE", ""},
		{d.ctx, "SELECT LAST_INSERT_ID(), @@server_id", ""},
		{d.ctx, "/* rwshard:primary */ SELECT total, @@server_id FROM orders WHERE id = 2", ""},
		{hint.Node(d.ctx, "replica2"), "SELECT customer, @@server_id FROM orders WHERE id = 3", " (hint.Node)"},
	} {
		plan, err := rwshard.Explain(s.ctx, d.db, s.q)
		if err != nil {
			return err
		}
		node, err := d.where(s.ctx, s.q)
		if err != nil {
			return err
		}
		d.show(s.q, node, plan.Reason+s.note)
	}
	return nil
}

func (d *demo) transaction() error {
	fmt.Fprintln(d.out, "\n2. a transaction runs on the primary from BEGIN to COMMIT; session state pins a connection")
	tx, err := d.db.BeginTx(d.ctx, nil)
	if err != nil {
		return err
	}
	var status string
	var sid int64
	if err := tx.QueryRowContext(d.ctx, "SELECT status, @@server_id FROM orders WHERE id = 1").Scan(&status, &sid); err != nil {
		tx.Rollback()
		return err
	}
	if _, err := tx.ExecContext(d.ctx, "UPDATE orders SET status = 'paid' WHERE id = 1"); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	d.show("SELECT status FROM orders WHERE id = 1 (in the transaction)", d.l.NodeByServerID(sid), "in-transaction")
	conn, err := d.db.Conn(d.ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(d.ctx, "SET @greeting = 'hello'"); err != nil {
		return err
	}
	var greeting string
	if err := conn.QueryRowContext(d.ctx, "SELECT @greeting, @@server_id").Scan(&greeting, &sid); err != nil {
		return err
	}
	d.show("SET @greeting = 'hello'; SELECT @greeting -- one *sql.Conn", d.l.NodeByServerID(sid), "session-pinned (@greeting="+greeting+")")
	return nil
}

// nodeStats returns one node's stats.
func (d *demo) nodeStats(name string) rwshard.NodeStats {
	for _, n := range d.c.Stats().Nodes {
		if n.Name == name {
			return n
		}
	}
	return rwshard.NodeStats{}
}

func (d *demo) lagFence() error {
	slow := d.l.Replicas()[0]
	fmt.Fprintf(d.out, "\n3. %s falls 5 s behind (MASTER_DELAY=5) while the primary takes writes; maxReplicaLag=1s\n", slow.Name)
	if err := d.l.Lag(d.ctx, slow, 5*time.Second); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for !d.nodeStats(slow.Name).Fenced || !d.nodeStats(slow.Name).LagKnown {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s was not fenced", slow.Name)
		}
		if _, err := d.db.ExecContext(d.ctx, "UPDATE orders SET total = total + 1 WHERE id = 2"); err != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	n := d.nodeStats(slow.Name)
	fmt.Fprintf(d.out, "  %s fenced: measured lag %s (from GTID positions, whatever Seconds_Behind_Master says)\n", slow.Name, n.Lag.Round(100*time.Millisecond))
	seen := map[string]int{}
	for range 6 {
		node, err := d.where(d.ctx, "SELECT COUNT(*), @@server_id FROM orders")
		if err != nil {
			return err
		}
		seen[node]++
	}
	fmt.Fprintf(d.out, "  6 reads while fenced went to: %s\n", counts(seen))
	if err := d.l.Lag(d.ctx, slow, 0); err != nil {
		return err
	}
	for d.nodeStats(slow.Name).Fenced {
		if time.Now().After(deadline.Add(20 * time.Second)) {
			return fmt.Errorf("%s stayed fenced", slow.Name)
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Fprintf(d.out, "  delay removed: %s caught up and is back in rotation\n", slow.Name)
	return nil
}

func (d *demo) readYourWrites() error {
	fmt.Fprintln(d.out, "\n4. read-your-writes: a session (one per request) reads its own write, wherever the replicas are")
	sess := rwshard.WithSession(d.ctx)
	if _, err := d.db.ExecContext(sess, "UPDATE orders SET status = 'shipped' WHERE id = 2"); err != nil {
		return err
	}
	var status string
	var sid int64
	if err := d.db.QueryRowContext(sess, "SELECT status, @@server_id FROM orders WHERE id = 2").Scan(&status, &sid); err != nil {
		return err
	}
	plan, err := rwshard.Explain(sess, d.db, "SELECT status, @@server_id FROM orders WHERE id = 2")
	if err != nil {
		return err
	}
	d.show("UPDATE …; SELECT status … (same session, at once)", d.l.NodeByServerID(sid), plan.Reason+", saw "+status)
	other := rwshard.WithSession(d.ctx)
	node, err := d.where(other, "SELECT status, @@server_id FROM orders WHERE id = 2")
	if err != nil {
		return err
	}
	d.show("SELECT status … (another session)", node, "replica")
	return nil
}

func (d *demo) replicaKilled() error {
	victim := d.l.Replicas()[1]
	fmt.Fprintf(d.out, "\n5. %s is killed (SIGKILL) under reads\n", victim.Name)
	if err := d.l.Kill(victim); err != nil {
		return err
	}
	seen := map[string]int{}
	failed := 0
	for range 40 {
		node, err := d.where(d.ctx, "SELECT COUNT(*), @@server_id FROM orders")
		if err != nil {
			failed++
			continue
		}
		seen[node]++
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintf(d.out, "  40 reads: %d failed; served by %s; %s up: %v\n", failed, counts(seen), victim.Name, d.nodeStats(victim.Name).Up)
	if err := d.l.Restart(d.ctx, victim); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for !d.nodeStats(victim.Name).Up && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintf(d.out, "  restarted: %s up again: %v\n", victim.Name, d.nodeStats(victim.Name).Up)
	return nil
}

func (d *demo) stats() {
	s := d.c.Stats()
	fmt.Fprintln(d.out, "\n6. rwshard.ConnectorOf(ctx, db).Stats()")
	reasons := make([]string, 0, len(s.Routes))
	for r := range s.Routes {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(d.out, "  route %-20s %d\n", r, s.Routes[r])
	}
	fmt.Fprintf(d.out, "  reads %d, served by the primary %d (%.0f%%), fallbacks %d, read retries %d\n",
		s.Reads, s.PrimaryReads, 100*s.PrimaryReadShare, s.Fallbacks, s.Retries)
	for _, n := range s.Nodes {
		role := "replica"
		if n.Primary {
			role = "primary"
		}
		fmt.Fprintf(d.out, "  %-9s %-8s up=%-5v fenced=%-5v queries=%-4d errors=%d\n", n.Name, role, n.Up, n.Fenced, n.Queries, n.Errors)
	}
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func redact(dsn string) string {
	user, rest, ok := strings.Cut(dsn, ":")
	if !ok {
		return dsn
	}
	_, host, _ := strings.Cut(rest, "@")
	return user + ":***@" + host
}
