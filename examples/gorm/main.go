// Command gorm shows GORM on rwshard. It starts a local MariaDB
// replication lab (one primary, two replicas), opens GORM with
// gorm.io/driver/mysql on the "rwshard" driver, and prints every statement
// GORM sends and where rwshard ran it:
//
//   - writes run on the primary, including the INSERT … RETURNING that GORM
//     sends through Query on MariaDB ≥ 10.5: rwshard classifies by the SQL
//     text, not by the database/sql method;
//   - plain reads run on a replica;
//   - a transaction runs on the primary from start to end;
//   - db.WithContext(hint.Primary(ctx)) sends a read that must be fresh to
//     the primary (and keeps AutoMigrate's schema checks off the replicas).
//
// "ran on" comes from rwshard's Stats counters; the rows say it too:
// written_by is @@server_id of the server that ran the INSERT, read_from
// is @@server_id of the server that ran the SELECT.
//
//	go run ./examples/gorm
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

	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/lab"
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Println("starting the lab: 1 primary + 2 replicas, GTID replication on 127.0.0.1 ...")
	l, err := lab.Start(ctx, lab.RW())
	if err == nil {
		err = run(ctx, os.Stdout, l)
		l.Stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gorm:", err)
		os.Exit(1)
	}
}

// run is the example on a running lab.
func run(ctx context.Context, out io.Writer, l *lab.Lab) error {
	dsn := fmt.Sprintf("%s:%s@tcp(%s),tcp(%s),tcp(%s)/%s?parseTime=true",
		lab.AppUser, lab.AppPassword, l.Primary().Addr(), l.Replicas()[0].Addr(), l.Replicas()[1].Addr(), lab.AppDatabase)
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

	// AutoMigrate reads information_schema before it creates or alters:
	// on a lagging replica it would miss a column it added a moment ago.
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
		fmt.Fprintf(out, "  order %d: written_by %s\n", o.ID, l.NodeByServerID(o.WrittenBy))
	}

	// The lab waits for the replicas here so that the reads below find the
	// rows. A service would read its own writes with rwshard.WithSession.
	if err := l.Sync(ctx, 10*time.Second); err != nil {
		return err
	}
	var all []Order
	if err := db.WithContext(ctx).Select(readFrom).Find(&all).Error; err != nil {
		return err
	}
	r.step("db.Select(readFrom).Find(&all)")
	fmt.Fprintf(out, "  %d orders, read_from %s\n", len(all), l.NodeByServerID(all[0].ReadFrom))

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
	fmt.Fprintf(out, "  order %d: read_from %s\n", inTx.ID, l.NodeByServerID(inTx.ReadFrom))

	// The replicas may not have the update yet: read it from the primary.
	var fresh Order
	if err := db.WithContext(hint.Primary(ctx)).Select(readFrom).First(&fresh, orders[0].ID).Error; err != nil {
		return err
	}
	r.step("db.WithContext(hint.Primary(ctx)).Select(readFrom).First(&fresh, 1)")
	fmt.Fprintf(out, "  order %d: status %s, read_from %s\n", fresh.ID, fresh.Status, l.NodeByServerID(fresh.ReadFrom))
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
