// Command gorm shows GORM on rwshard. It opens GORM with
// gorm.io/driver/mysql on the "rwshard" driver over a primary and its
// replicas, and prints every statement GORM sends and where rwshard ran
// it:
//
//   - writes run on the primary, including the INSERT … RETURNING that GORM
//     sends through Query on MariaDB ≥ 10.5: rwshard classifies by the SQL
//     text, not by the database/sql method;
//   - plain reads run on a replica;
//   - a transaction runs on the primary from start to end;
//   - db.WithContext(hint.Primary(ctx)) sends a read that must be fresh to
//     the primary (and keeps AutoMigrate's schema checks off the replicas);
//   - db.WithContext(hint.Node(ctx, name)) runs a statement on one node: the
//     program asks each node for its @@server_id that way (node names are
//     "primary", "replica1", … by position in the DSN).
//
// "ran on" comes from rwshard's Stats counters; the rows say it too:
// written_by is @@server_id of the server that ran the INSERT, read_from
// is @@server_id of the server that ran the SELECT.
//
//	go run ./gorm -dsn 'app:pw@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306),tcp(10.0.0.3:3306)/shop'
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
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
)

// Order is the model. WrittenBy defaults to @@server_id in the table, and
// GORM reads it back with RETURNING; ReadFrom is no column: reads select
// @@server_id into it (readFrom).
type Order struct {
	ID        int64
	Customer  string `gorm:"size:40"`
	Total     int64  // cents
	Status    string `gorm:"size:12"`
	WrittenBy int64  `gorm:"default:(@@server_id)"`
	ReadFrom  int64  `gorm:"->;-:migration"`
}

const readFrom = "*, @@server_id AS read_from"

func main() {
	dsn := flag.String("dsn", os.Getenv("RWSHARD_DSN"), "rwshard DSN: the primary first, then the replicas")
	flag.Parse()
	if *dsn == "" {
		fmt.Fprintln(os.Stderr, "gorm: give -dsn or RWSHARD_DSN")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *dsn); err != nil {
		fmt.Fprintln(os.Stderr, "gorm:", err)
		os.Exit(1)
	}
}

// run is the example on the cluster of dsn.
func run(ctx context.Context, out io.Writer, dsn string) error {
	cfg, err := rwshard.ParseDSN(dsn)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "gorm.Open(mysql.New(mysql.Config{DriverName: %q, DSN: %q}))\n", rwshard.DriverName, redact(dsn))
	r := &report{out: out}
	// Without SkipDefaultTransaction GORM wraps every Create, Update and
	// Delete in a transaction of its own: on the primary too, but then the
	// route reason is "in-transaction" and the INSERT … RETURNING below
	// would not show how rwshard classifies it.
	db, err := gorm.Open(mysql.New(mysql.Config{DriverName: rwshard.DriverName, DSN: dsn}),
		&gorm.Config{Logger: r, SkipDefaultTransaction: true})
	if err != nil {
		return err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	if r.c, err = rwshard.ConnectorOf(ctx, sqlDB); err != nil {
		return err
	}
	r.sql = append(r.sql, "SELECT VERSION()") // sent by gorm.Open, around the GORM logger
	r.step("gorm.Open")
	// sql.Open does no I/O: until health has probed a replica once, reads
	// go to the primary (route "starting"), as gorm.Open's did. A service
	// that wants its replicas from its first read waits at start-up.
	if err := r.c.Ready(ctx); err != nil {
		return err
	}

	// Which node is which: each node's @@server_id, asked on that node.
	names := map[int64]string{}
	var ids []int64
	for _, n := range cfg.Nodes {
		var id int64
		if err := db.WithContext(hint.Node(ctx, n.Name)).Raw("SELECT @@server_id").Scan(&id).Error; err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		if other, ok := names[id]; ok {
			return fmt.Errorf("%s and %s have the same server_id %d: replication needs distinct ones", other, n.Name, id)
		}
		names[id], ids = n.Name, append(ids, id)
	}
	r.step(`db.WithContext(hint.Node(ctx, name)).Raw("SELECT @@server_id").Scan(&id) for each node`)
	for _, id := range ids {
		fmt.Fprintf(out, "  %s: server_id %d\n", names[id], id)
	}
	node := func(id int64) string {
		if name, ok := names[id]; ok {
			return name
		}
		return fmt.Sprintf("server_id=%d", id)
	}

	// The table of an earlier run goes first. AutoMigrate reads
	// information_schema before it creates or alters: on a lagging replica
	// it would miss a column it added a moment ago.
	if err := db.WithContext(hint.Primary(ctx)).Migrator().DropTable(&Order{}); err != nil {
		return err
	}
	r.step("db.WithContext(hint.Primary(ctx)).Migrator().DropTable(&Order{})")
	if err := db.WithContext(hint.Primary(ctx)).AutoMigrate(&Order{}); err != nil {
		return err
	}
	r.step("db.WithContext(hint.Primary(ctx)).AutoMigrate(&Order{})")

	orders := []Order{{Customer: "ada", Total: 1050, Status: "new"}, {Customer: "grace", Total: 2000, Status: "new"}}
	if err := db.WithContext(ctx).Create(&orders).Error; err != nil {
		return err
	}
	r.step("db.Create(&orders)")
	for _, o := range orders {
		fmt.Fprintf(out, "  order %d: written_by %s\n", o.ID, node(o.WrittenBy))
	}

	// No wait for replication: by default (rwshard.consistency=causal) a
	// read after a write through the same *sql.DB goes to a replica that
	// has applied the write, waiting there for it if need be.
	var all []Order
	if err := db.WithContext(ctx).Select(readFrom).Find(&all).Error; err != nil {
		return err
	}
	r.step("db.Select(readFrom).Find(&all)")
	fmt.Fprintf(out, "  %d orders, read_from %s\n", len(all), node(all[0].ReadFrom))

	var inTx Order
	err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Select(readFrom).First(&inTx, orders[0].ID).Error; err != nil {
			return err
		}
		return tx.Model(&inTx).Update("status", "paid").Error
	})
	if err != nil {
		return err
	}
	r.step("db.Transaction(First, Update)")
	fmt.Fprintf(out, "  order %d: read_from %s\n", inTx.ID, node(inTx.ReadFrom))

	// A read that must see the latest commit whatever the consistency
	// setting (with rwshard.consistency=eventual a replica may lag) asks
	// for the primary.
	var fresh Order
	if err := db.WithContext(hint.Primary(ctx)).Select(readFrom).First(&fresh, orders[0].ID).Error; err != nil {
		return err
	}
	r.step("db.WithContext(hint.Primary(ctx)).Select(readFrom).First(&fresh, 1)")
	fmt.Fprintf(out, "  order %d: status %s, read_from %s\n", fresh.ID, fresh.Status, node(fresh.ReadFrom))
	return nil
}

// report is a GORM logger that keeps the SQL GORM sends; step prints it
// with where rwshard ran it: the change in rwshard's Stats since the last
// step, by node and by route reason.
type report struct {
	out  io.Writer
	c    *rwshard.Connector
	last rwshard.Stats
	sql  []string
}

func (r *report) LogMode(logger.LogLevel) logger.Interface { return r }
func (r *report) Info(context.Context, string, ...any)     {}
func (r *report) Warn(context.Context, string, ...any)     {}
func (r *report) Error(context.Context, string, ...any)    {}

func (r *report) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	q, _ := fc()
	r.sql = append(r.sql, strings.Join(strings.Fields(q), " "))
}

func (r *report) step(call string) {
	now := r.c.Stats()
	fmt.Fprintf(r.out, "\n%s\n", call)
	for _, q := range r.sql {
		fmt.Fprintf(r.out, "    %s\n", q)
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
	r.last, r.sql = now, nil
}

func redact(dsn string) string {
	user, rest, ok := strings.Cut(dsn, ":")
	if !ok {
		return dsn
	}
	_, host, _ := strings.Cut(rest, "@")
	return user + ":***@" + host
}
