// Command quickstart runs a small order service through rwshard on a
// primary and its replicas, printing where every statement ran and why:
// read/write splitting, hints, a transaction, a pinned session,
// read-your-writes in a session, and the resulting Stats. It learns which
// node is which by asking each for its @@server_id with hint.Node. The
// failure behaviour (a lagging replica fenced, a replica or the primary
// killed under load) is shown by the chaos tests (`go test -run Chaos` in
// the root module) rather than here: a program pointed at your cluster
// cannot inject faults into it.
//
//	go run ./quickstart -dsn 'app:pw@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306),tcp(10.0.0.3:3306)/shop'
//
// (or RWSHARD_DSN in the environment; `make demo` starts a lab and passes
// its DSN). The DSN lists the primary first, then the replicas. The
// program drops and creates the table orders in the DSN's database: point
// it at a scratch database.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
)

func main() {
	dsn := flag.String("dsn", os.Getenv("RWSHARD_DSN"), "rwshard DSN: the primary first, then the replicas")
	flag.Parse()
	if *dsn == "" {
		fmt.Fprintln(os.Stderr, "quickstart: give -dsn or RWSHARD_DSN")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *dsn); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// demo carries what every step needs.
type demo struct {
	ctx   context.Context
	out   io.Writer
	db    *sql.DB
	c     *rwshard.Connector
	names map[int64]string // node names by @@server_id
	last  string           // the last node of the DSN, for hint.Node
}

// run is the example on the cluster of dsn.
func run(ctx context.Context, out io.Writer, dsn string) error {
	cfg, err := rwshard.ParseDSN(dsn)
	if err != nil {
		return err
	}
	c, err := rwshard.NewConnector(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "cfg, err := rwshard.ParseDSN(%q)\nc, err := rwshard.NewConnector(cfg)\ndb := sql.OpenDB(c)\n", redact(dsn))
	db := sql.OpenDB(c)
	defer db.Close()
	// The first statements wait for health's first round of probes (at
	// most connectTimeout); waiting here says before anything runs whether
	// every node answered.
	if err := c.Ready(ctx); err != nil {
		return err
	}
	d := &demo{ctx: ctx, out: out, db: db, c: c}
	if err := d.nodes(cfg); err != nil {
		return err
	}
	for _, step := range []func() error{d.splitting, d.transaction, d.readYourWrites} {
		if err := step(); err != nil {
			return err
		}
	}
	d.stats()
	return nil
}

// nodes asks every node of cfg for its @@server_id, through rwshard with
// hint.Node (node names are "primary", "replica1", … by position in the
// DSN), so that the rows' and the queries' @@server_id name a node.
func (d *demo) nodes(cfg *rwshard.Config) error {
	fmt.Fprintln(d.out, "\nthe nodes, each asked SELECT @@server_id with hint.Node(ctx, name):")
	d.names = map[int64]string{}
	for _, n := range cfg.Nodes {
		var id int64
		if err := d.db.QueryRowContext(hint.Node(d.ctx, n.Name), "SELECT @@server_id").Scan(&id); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		if other, ok := d.names[id]; ok {
			return fmt.Errorf("%s and %s have the same server_id %d: replication needs distinct ones", other, n.Name, id)
		}
		d.names[id], d.last = n.Name, n.Name
		fmt.Fprintf(d.out, "  %-9s %s  server_id=%d\n", n.Name, n.Addr, id)
	}
	return nil
}

// node names the node of a @@server_id.
func (d *demo) node(id int64) string {
	if name, ok := d.names[id]; ok {
		return name
	}
	return fmt.Sprintf("server_id=%d", id)
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
	sid := int64(-1)
	for rows.Next() {
		vals[len(vals)-1] = &sid
		if err := rows.Scan(vals...); err != nil {
			return "", err
		}
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	if sid < 0 {
		// Without a row the node is unknown; printing server_id=0 would hide that.
		return "", fmt.Errorf("%q returned no row, so where it ran is unknown", q)
	}
	return d.node(sid), nil
}

func (d *demo) show(q, node, why string) {
	if len(q) > 62 {
		q = q[:59] + "..."
	}
	fmt.Fprintf(d.out, "  %-62s %-9s %s\n", q, node, why)
}

func (d *demo) splitting() error {
	fmt.Fprintf(d.out, "\n1. read/write splitting, decided per statement by its SQL text\n  %-62s %-9s %s\n", "statement", "ran on", "why")
	if _, err := d.db.ExecContext(d.ctx, "DROP TABLE IF EXISTS orders"); err != nil {
		return err
	}
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
	d.show("INSERT INTO orders … VALUES (…, @@server_id) ×3", d.node(writer), "write (each row records where it ran)")
	// No wait for replication: by default (rwshard.consistency=causal) a
	// read after a write through the same *sql.DB goes to a replica that
	// has applied the write, waiting there for it if need be.
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
		{hint.Node(d.ctx, d.last), "SELECT COUNT(*), @@server_id FROM orders WHERE id = 3", " (hint.Node)"},
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
	fmt.Fprintln(d.out, "\n2. a transaction runs on the primary from BEGIN to COMMIT; user variables follow the reads")
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
	d.show("SELECT status FROM orders WHERE id = 1 (in the transaction)", d.node(sid), "in-transaction")
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
	d.show("SET @greeting = 'hello'; SELECT @greeting -- one *sql.Conn", d.node(sid), "replica (@greeting="+greeting+", replayed there)")
	return nil
}

func (d *demo) readYourWrites() error {
	fmt.Fprintln(d.out, "\n3. read-your-writes: a session (one per request) reads its own write, wherever the replicas are")
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
	d.show("UPDATE …; SELECT status … (same session, at once)", d.node(sid), plan.Reason+", saw "+status)
	other := rwshard.WithSession(d.ctx)
	if plan, err = rwshard.Explain(other, d.db, "SELECT status, @@server_id FROM orders WHERE id = 2"); err != nil {
		return err
	}
	node, err := d.where(other, "SELECT status, @@server_id FROM orders WHERE id = 2")
	if err != nil {
		return err
	}
	d.show("SELECT status … (another session)", node, plan.Reason)
	return nil
}

func (d *demo) stats() {
	s := d.c.Stats()
	fmt.Fprintln(d.out, "\n4. c.Stats()")
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

func redact(dsn string) string {
	user, rest, ok := strings.Cut(dsn, ":")
	if !ok {
		return dsn
	}
	_, host, _ := strings.Cut(rest, "@")
	return user + ":***@" + host
}
