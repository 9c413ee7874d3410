// Command sqlx shows sqlx on rwshard. It starts a local MariaDB replication
// lab (one primary, two replicas), opens sqlx.Open("rwshard", dsn), and
// prints each statement and where rwshard ran it:
//
//   - NamedExec writes (a batch INSERT, an UPDATE) run on the primary;
//   - Get and Select run on a replica;
//   - a transaction (BeginTxx) runs on the primary from start to end;
//   - hint.Primary in the context sends a read that must be fresh to the
//     primary.
//
// "ran on" comes from rwshard's Stats counters; the rows say it too:
// written_by is @@server_id of the server that ran the write, read_from
// is @@server_id of the server that ran the read.
//
//	go run ./examples/sqlx
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/lab"
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
	schema = `CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, customer VARCHAR(40),
		total BIGINT, status VARCHAR(12), written_by BIGINT)`
	insert    = `INSERT INTO orders (customer, total, status, written_by) VALUES (:customer, :total, 'new', @@server_id)`
	selectAll = `SELECT *, @@server_id AS read_from FROM orders ORDER BY id`
	selectOne = `SELECT *, @@server_id AS read_from FROM orders WHERE id = ?`
	pay       = `UPDATE orders SET status = :status, written_by = @@server_id WHERE id = :id`
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Println("starting the lab: 1 primary + 2 replicas, GTID replication on 127.0.0.1 ...")
	l, err := lab.Start(ctx, lab.RW())
	if err == nil {
		err = run(ctx, os.Stdout, l)
		l.Stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sqlx:", err)
		os.Exit(1)
	}
}

// run is the example on a running lab.
func run(ctx context.Context, out io.Writer, l *lab.Lab) error {
	dsn := fmt.Sprintf("%s:%s@tcp(%s),tcp(%s),tcp(%s)/%s?parseTime=true",
		lab.AppUser, lab.AppPassword, l.Primary().Addr(), l.Replicas()[0].Addr(), l.Replicas()[1].Addr(), lab.AppDatabase)
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

	if _, err := db.ExecContext(ctx, schema); err != nil {
		return err
	}
	r.step("db.ExecContext(ctx, schema)", schema)

	orders := []Order{{Customer: "ada", Total: 1050}, {Customer: "grace", Total: 2000}}
	if _, err := db.NamedExecContext(ctx, insert, orders); err != nil {
		return err
	}
	r.step("db.NamedExecContext(ctx, insert, orders)", named(insert, orders))

	// The lab waits for the replicas here so that the reads below find the
	// rows. A service would read its own writes with rwshard.WithSession.
	if err := l.Sync(ctx, 10*time.Second); err != nil {
		return err
	}
	var all []Order
	if err := db.SelectContext(ctx, &all, selectAll); err != nil {
		return err
	}
	r.step("db.SelectContext(ctx, &all, selectAll)", selectAll)
	for _, o := range all {
		fmt.Fprintf(out, "  order %d: written_by %s, read_from %s\n", o.ID, l.NodeByServerID(o.WrittenBy), l.NodeByServerID(o.ReadFrom))
	}

	var o Order
	if err := db.GetContext(ctx, &o, selectOne, 2); err != nil {
		return err
	}
	r.step("db.GetContext(ctx, &o, selectOne, 2)", selectOne)
	fmt.Fprintf(out, "  order %d: read_from %s\n", o.ID, l.NodeByServerID(o.ReadFrom))

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
	fmt.Fprintf(out, "  order %d: read_from %s\n", inTx.ID, l.NodeByServerID(inTx.ReadFrom))

	// The replicas may not have the update yet: read it from the primary.
	var fresh Order
	if err := db.GetContext(hint.Primary(ctx), &fresh, selectOne, 1); err != nil {
		return err
	}
	r.step("db.GetContext(hint.Primary(ctx), &fresh, selectOne, 1)", selectOne)
	fmt.Fprintf(out, "  order %d: status %s, written_by %s, read_from %s\n",
		fresh.ID, fresh.Status, l.NodeByServerID(fresh.WrittenBy), l.NodeByServerID(fresh.ReadFrom))
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
