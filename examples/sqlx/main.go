// Command sqlx shows sqlx on rwshard. It opens sqlx.Open("rwshard", dsn)
// over a primary and its replicas, and prints each statement and where
// rwshard ran it:
//
//   - Exec and NamedExec writes (the schema, a batch INSERT, an UPDATE)
//     run on the primary;
//   - Get and Select run on a replica;
//   - a transaction (BeginTxx) runs on the primary from start to end;
//   - hint.Primary in the context sends a read that must be fresh to the
//     primary;
//   - hint.Node(ctx, name) runs a statement on one node: the program asks
//     each node for its @@server_id that way (node names are "primary",
//     "replica1", … by position in the DSN).
//
// "ran on" comes from rwshard's Stats counters; the rows say it too:
// written_by is @@server_id of the server that ran the write, read_from
// is @@server_id of the server that ran the read.
//
//	go run ./sqlx -dsn 'app:pw@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306),tcp(10.0.0.3:3306)/shop'
//
// (or RWSHARD_DSN in the environment; `make demo` starts a lab and passes
// its DSN). The program drops and creates the table orders in the DSN's
// database: point it at a scratch database.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
)

// Order is one row; ReadFrom is @@server_id of the server that ran the
// SELECT.
type Order struct {
	ID        int64  `db:"id"`
	Customer  string `db:"customer"`
	Total     int64  `db:"total"` // cents
	Status    string `db:"status"`
	WrittenBy int64  `db:"written_by"`
	ReadFrom  int64  `db:"read_from"`
}

const (
	dropTable = `DROP TABLE IF EXISTS orders`
	schema    = `CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, customer VARCHAR(40),
		total BIGINT, status VARCHAR(12), written_by BIGINT)`
	insert    = `INSERT INTO orders (customer, total, status, written_by) VALUES (:customer, :total, 'new', @@server_id)`
	selectAll = `SELECT *, @@server_id AS read_from FROM orders ORDER BY id`
	selectOne = `SELECT *, @@server_id AS read_from FROM orders WHERE id = ?`
	pay       = `UPDATE orders SET status = :status, written_by = @@server_id WHERE id = :id`
)

func main() {
	dsn := flag.String("dsn", os.Getenv("RWSHARD_DSN"), "rwshard DSN: the primary first, then the replicas")
	flag.Parse()
	if *dsn == "" {
		fmt.Fprintln(os.Stderr, "sqlx: give -dsn or RWSHARD_DSN")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *dsn); err != nil {
		fmt.Fprintln(os.Stderr, "sqlx:", err)
		os.Exit(1)
	}
}

// run is the example on the cluster of dsn.
func run(ctx context.Context, out io.Writer, dsn string) error {
	cfg, err := rwshard.ParseDSN(dsn)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "sqlx.Open(%q, %q)\n", rwshard.DriverName, redact(dsn))
	// sqlx does not know the driver name "rwshard" and falls back to "?"
	// placeholders, which is what MySQL wants. (To say so explicitly:
	// sqlx.BindDriver(rwshard.DriverName, sqlx.QUESTION).)
	db, err := sqlx.Open(rwshard.DriverName, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := rwshard.ConnectorOf(ctx, db.DB)
	if err != nil {
		return err
	}
	r := &report{out: out, c: c}
	// sqlx.Open does no I/O: until health has probed a replica once, reads
	// go to the primary (route "starting"). A service that wants its
	// replicas from its first read waits at start-up.
	if err := c.Ready(ctx); err != nil {
		return err
	}

	// Which node is which: each node's @@server_id, asked on that node.
	names := map[int64]string{}
	var ids []int64
	for _, n := range cfg.Nodes {
		var id int64
		if err := db.GetContext(hint.Node(ctx, n.Name), &id, "SELECT @@server_id"); err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		if other, ok := names[id]; ok {
			return fmt.Errorf("%s and %s have the same server_id %d: replication needs distinct ones", other, n.Name, id)
		}
		names[id], ids = n.Name, append(ids, id)
	}
	r.step(`db.GetContext(hint.Node(ctx, name), &id, "SELECT @@server_id") for each node`)
	for _, id := range ids {
		fmt.Fprintf(out, "  %s: server_id %d\n", names[id], id)
	}
	node := func(id int64) string {
		if name, ok := names[id]; ok {
			return name
		}
		return fmt.Sprintf("server_id=%d", id)
	}

	// The table of an earlier run goes first.
	if _, err := db.ExecContext(ctx, dropTable); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return err
	}
	r.step("db.ExecContext(ctx, dropTable); db.ExecContext(ctx, schema)", dropTable, schema)

	orders := []Order{{Customer: "ada", Total: 1050}, {Customer: "grace", Total: 2000}}
	if _, err := db.NamedExecContext(ctx, insert, orders); err != nil {
		return err
	}
	r.step("db.NamedExecContext(ctx, insert, orders)", named(insert, orders))

	// No wait for replication: by default (rwshard.consistency=causal) a
	// read after a write through the same *sql.DB goes to a replica that
	// has applied the write, waiting there for it if need be.
	var all []Order
	if err := db.SelectContext(ctx, &all, selectAll); err != nil {
		return err
	}
	r.step("db.SelectContext(ctx, &all, selectAll)", selectAll)
	for _, o := range all {
		fmt.Fprintf(out, "  order %d: written_by %s, read_from %s\n", o.ID, node(o.WrittenBy), node(o.ReadFrom))
	}

	var o Order
	if err := db.GetContext(ctx, &o, selectOne, 2); err != nil {
		return err
	}
	r.step("db.GetContext(ctx, &o, selectOne, 2)", selectOne)
	fmt.Fprintf(out, "  order %d: read_from %s\n", o.ID, node(o.ReadFrom))

	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var inTx Order
	if err := tx.GetContext(ctx, &inTx, selectOne, 1); err != nil {
		return err
	}
	inTx.Status = "paid"
	if _, err := tx.NamedExecContext(ctx, pay, inTx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	r.step("db.BeginTxx; tx.GetContext; tx.NamedExecContext; tx.Commit", selectOne, named(pay, inTx))
	fmt.Fprintf(out, "  order %d: read_from %s\n", inTx.ID, node(inTx.ReadFrom))

	// A read that must see the latest commit whatever the consistency
	// setting (with rwshard.consistency=eventual a replica may lag) asks
	// for the primary.
	var fresh Order
	if err := db.GetContext(hint.Primary(ctx), &fresh, selectOne, 1); err != nil {
		return err
	}
	r.step("db.GetContext(hint.Primary(ctx), &fresh, selectOne, 1)", selectOne)
	fmt.Fprintf(out, "  order %d: status %s, written_by %s, read_from %s\n",
		fresh.ID, fresh.Status, node(fresh.WrittenBy), node(fresh.ReadFrom))
	return nil
}

// report prints statements with where rwshard ran them: the change in
// rwshard's Stats since the last step, by node and by route reason.
type report struct {
	out  io.Writer
	c    *rwshard.Connector
	last rwshard.Stats
}

func (r *report) step(call string, sql ...string) {
	now := r.c.Stats()
	fmt.Fprintf(r.out, "\n%s\n", call)
	for _, q := range sql {
		fmt.Fprintf(r.out, "    %s\n", strings.Join(strings.Fields(q), " "))
	}
	var nodes []string
	for i, n := range now.Nodes {
		var before uint64
		if i < len(r.last.Nodes) {
			before = r.last.Nodes[i].Queries
		}
		if d := n.Queries - before; d > 0 {
			nodes = append(nodes, fmt.Sprintf("%s×%d", n.Name, d))
		}
	}
	var reasons []string
	for reason, v := range now.Routes {
		if d := v - r.last.Routes[reason]; d > 0 {
			reasons = append(reasons, fmt.Sprintf("%s×%d", reason, d))
		}
	}
	slices.Sort(reasons)
	fmt.Fprintf(r.out, "  ran on %s  (%s)\n", strings.Join(nodes, " "), strings.Join(reasons, " "))
	r.last = now
}

// named is the SQL that NamedExec sends for q and arg.
func named(q string, arg any) string {
	s, _, err := sqlx.Named(q, arg)
	if err != nil {
		return err.Error()
	}
	return s
}

func redact(dsn string) string {
	user, rest, ok := strings.Cut(dsn, ":")
	if !ok {
		return dsn
	}
	_, host, _ := strings.Cut(rest, "@")
	return user + ":***@" + host
}
