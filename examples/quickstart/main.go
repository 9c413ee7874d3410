// Command quickstart starts a local MariaDB replication lab (one primary,
// two replicas, real GTID replication on loopback) and runs a small order
// service workload through rwshard, printing where every statement ran and
// why.
//
//	make demo        # or: go run ./examples/quickstart
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/lab"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	begin := time.Now()
	fmt.Println("starting the lab: 1 primary + 2 replicas, GTID replication on 127.0.0.1 ...")
	l, err := lab.Start(ctx, lab.RW())
	if err != nil {
		return err
	}
	defer l.Stop()
	fmt.Printf("lab up and replicating in %s\n", time.Since(begin).Round(10*time.Millisecond))
	for _, n := range l.Nodes() {
		fmt.Printf("  %-9s %s  server_id=%d\n", n.Name, n.Addr(), n.ServerID)
	}

	dsn := fmt.Sprintf("%s:%s@tcp(%s),tcp(%s),tcp(%s)/%s?parseTime=true",
		lab.AppUser, lab.AppPassword, l.Primary().Addr(), l.Replicas()[0].Addr(), l.Replicas()[1].Addr(), lab.AppDatabase)
	fmt.Printf("\nsql.Open(%q, %q)\n", rwshard.DriverName, redact(dsn))
	db, err := sql.Open(rwshard.DriverName, dsn)
	if err != nil {
		return err
	}
	defer db.Close()

	w := &where{l: l, db: db}
	fmt.Println("\nstatement                                                          ran on")
	w.exec(ctx, "CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, customer INT, total DECIMAL(10,2), status VARCHAR(12), server INT)")
	for i := 1; i <= 3; i++ {
		w.exec(ctx, fmt.Sprintf("INSERT INTO orders (customer, total, status, server) VALUES (%d, %d.50, 'new', @@server_id)", i, 10*i))
	}
	var server int64
	if err := db.QueryRowContext(hint.Primary(ctx), "SELECT MAX(server) FROM orders HAVING MIN(server) = MAX(server)").Scan(&server); err != nil {
		return err
	}
	fmt.Printf("  %-64s %s\n", "  every INSERT stored @@server_id of where it ran", l.NodeByServerID(server))
	if err := l.Sync(ctx, 10*time.Second); err != nil {
		return err
	}
	for range 4 {
		w.query(ctx, "SELECT COUNT(*) AS orders, @@server_id FROM orders")
	}
	w.query(ctx, "SELECT status, @@server_id FROM orders WHERE id = 1 FOR UPDATE")
	w.query(ctx, "/* rwshard:primary */ SELECT total, @@server_id FROM orders WHERE id = 2")
	w.query(hint.Node(ctx, "replica2"), "SELECT customer, @@server_id FROM orders WHERE id = 3   -- with hint.Node(ctx, \"replica2\")")

	fmt.Println("\na transaction runs on the primary from BEGIN to COMMIT:")
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	var status string
	var sid int64
	if err := tx.QueryRowContext(ctx, "SELECT status, @@server_id FROM orders WHERE id = 1").Scan(&status, &sid); err != nil {
		return err
	}
	fmt.Printf("  %-64s %s\n", "  SELECT status FROM orders WHERE id = 1 (in the transaction)", l.NodeByServerID(sid))
	if _, err := tx.ExecContext(ctx, "UPDATE orders SET status = 'paid' WHERE id = 1"); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}

	fmt.Println("\nsession state pins a *sql.Conn to one primary connection:")
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "SET @greeting = 'hello'"); err != nil {
		return err
	}
	var greeting string
	if err := conn.QueryRowContext(ctx, "SELECT @greeting, @@server_id").Scan(&greeting, &sid); err != nil {
		return err
	}
	conn.Close()
	fmt.Printf("  %-64s %s (@greeting=%q)\n", "  SET @greeting = 'hello'; SELECT @greeting", l.NodeByServerID(sid), greeting)

	fmt.Println("\nthe application user cannot write on a replica (read_only, no SUPER):")
	rdb, err := sql.Open("mysql", l.Replicas()[0].DSN(""))
	if err != nil {
		return err
	}
	defer rdb.Close()
	_, err = rdb.ExecContext(ctx, "INSERT INTO orders (customer) VALUES (9)")
	fmt.Printf("  INSERT straight to %s → %v\n", l.Replicas()[0].Name, err)
	fmt.Println("\nstopping the lab.")
	return nil
}

// where prints the node each statement ran on, from @@server_id.
type where struct {
	l  *lab.Lab
	db *sql.DB
}

func (w *where) exec(ctx context.Context, q string) {
	if _, err := w.db.ExecContext(ctx, q); err != nil {
		fmt.Printf("  %-64s error: %v\n", short(q), err)
		return
	}
	fmt.Printf("  %-64s %s\n", short(q), "(write)")
}

func (w *where) query(ctx context.Context, q string) {
	rows, err := w.db.QueryContext(ctx, q)
	if err != nil {
		fmt.Printf("  %-64s error: %v\n", short(q), err)
		return
	}
	defer rows.Close()
	var v any
	var sid int64
	for rows.Next() {
		if err := rows.Scan(&v, &sid); err != nil {
			fmt.Printf("  %-64s error: %v\n", short(q), err)
			return
		}
	}
	fmt.Printf("  %-64s %s\n", short(q), w.l.NodeByServerID(sid))
}

func short(q string) string {
	if len(q) > 64 {
		return q[:61] + "..."
	}
	return q
}

func redact(dsn string) string {
	user, rest, ok := strings.Cut(dsn, ":")
	if !ok {
		return dsn
	}
	_, host, _ := strings.Cut(rest, "@")
	return user + ":***@" + host
}
