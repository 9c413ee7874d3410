package rwshard_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
)

// Open a primary and two replicas: the first host is the primary. Reads
// go to the replicas, everything else to the primary; sql.Open does no
// I/O.
func Example() {
	db, err := sql.Open("rwshard", "app:secret@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306),tcp(10.0.0.3:3306)/shop?parseTime=true")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()

	// A write: the primary. A read right after it: a replica that has the
	// write (causal consistency, the default), else the primary.
	if _, err := db.ExecContext(ctx, "UPDATE orders SET status = 'paid' WHERE id = ?", 42); err != nil {
		log.Print(err)
	}
	var status string
	if err := db.QueryRowContext(ctx, "SELECT status FROM orders WHERE id = ?", 42).Scan(&status); err != nil {
		log.Print(err)
	}
	// A read that must see the primary's data now.
	_ = db.QueryRowContext(hint.Primary(ctx), "SELECT balance FROM accounts WHERE id = ?", 7)
}

// ParseDSN shows what a DSN means: the nodes and rwshard's settings.
// Passwords stay out of errors and of FormatDSN's callers' logs.
func ExampleParseDSN() {
	cfg, err := rwshard.ParseDSN("app:secret@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306)/shop?rwshard.maxReplicaLag=2s&rwshard.names=main,r1")
	if err != nil {
		log.Fatal(err)
	}
	for _, n := range cfg.Nodes {
		fmt.Println(n.Name, n.Addr)
	}
	fmt.Println("database:", cfg.Backend.DBName, "max lag:", cfg.MaxReplicaLag, "consistency:", cfg.Consistency)

	_, err = rwshard.ParseDSN("app:secret@tcp(10.0.0.1:3306)/shop?rwshard.maxReplicaLag=soon")
	fmt.Println(err)
	// Output:
	// main 10.0.0.1:3306
	// r1 10.0.0.2:3306
	// database: shop max lag: 2s consistency: causal
	// rwshard: config rwshard.maxReplicaLag="soon": not a duration >= 0 such as 3s or 500ms
}

// Explain says where a statement would run now and why, without running
// it.
func ExampleExplain() {
	// Health probes off: every node is taken as up, nothing is dialed.
	db, err := sql.Open("rwshard", "app:secret@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306)/shop?rwshard.health=false")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for _, q := range []string{
		"SELECT * FROM orders WHERE id = 1",
		"SELECT * FROM orders WHERE id = 1 FOR UPDATE",
		"/* rwshard:primary */ SELECT * FROM orders WHERE id = 1",
		"UPDATE orders SET status = 'paid' WHERE id = 1",
	} {
		p, err := rwshard.Explain(ctx, db, q)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-12s %-14s %v\n", p.Kind, p.Reason, p.Targets)
	}
	// Output:
	// read         replica        [replica1]
	// locking-read locking-read   [primary]
	// read         hint-primary   [primary]
	// write        write          [primary]
}

// WithSession scopes read-your-writes to one request: its reads see its
// own writes, other requests' reads are not held back by them.
func ExampleWithSession() {
	db, err := sql.Open("rwshard", "app:secret@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306)/shop")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx := rwshard.WithSession(context.Background()) // one per request
	if _, err := db.ExecContext(ctx, "INSERT INTO payments (order_id, amount) VALUES (?, ?)", 42, 1999); err != nil {
		log.Print(err)
	}
	// Runs on a replica that has applied the INSERT, or on the primary.
	var n int
	_ = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM payments WHERE order_id = ?", 42).Scan(&n)
}

// Stats is where statements went and why; ConnectorOf finds the
// Connector behind a *sql.DB.
func ExampleConnector_Stats() {
	db, err := sql.Open("rwshard", "app:secret@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306)/shop?rwshard.health=false")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	c, err := rwshard.ConnectorOf(context.Background(), db)
	if err != nil {
		log.Fatal(err)
	}
	s := c.Stats()
	for _, n := range s.Nodes {
		fmt.Printf("%s primary=%v up=%v queries=%d\n", n.Name, n.Primary, n.Up, n.Queries)
	}
	fmt.Printf("reads %d, primary share %.2f\n", s.Reads, s.PrimaryReadShare)
	// Output:
	// primary primary=true up=true queries=0
	// replica1 primary=false up=true queries=0
	// reads 0, primary share 0.00
}
