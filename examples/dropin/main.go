// Command dropin is code that never heard of rwshard, pointed at a
// primary and its replicas: GORM (AutoMigrate, create, read back, update,
// read back) and sqlx (insert, get, select), with no rwshard-specific call
// but the driver name. Every read back is checked against what was
// written, and the program reports how many reads the replicas served.
// Where a statement ran is read from @@server_id in the SQL itself.
//
//	go run ./dropin -dsn 'app:pw@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306),tcp(10.0.0.3:3306)/shop'
//
// (or RWSHARD_DSN in the environment; `make demo` starts a lab and passes
// its DSN). The database user needs nothing beyond GRANT ALL ON its
// database.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/jmoiron/sqlx"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	_ "github.com/rwshard/rwshard" // registers the "rwshard" driver
)

// Order is GORM's model; From is @@server_id of the server that answered a
// read (a selected expression, no column).
type Order struct {
	ID       int64
	Customer string `gorm:"size:40"`
	Total    int64
	Status   string `gorm:"size:12"`
	From     int64  `gorm:"->;-:migration"`
}

// Item is sqlx's row.
type Item struct {
	ID   int64  `db:"id"`
	Name string `db:"name"`
	From int64  `db:"served_by"`
}

func main() {
	dsn := flag.String("dsn", os.Getenv("RWSHARD_DSN"), "rwshard DSN: the primary first, then the replicas")
	rounds := flag.Int("rounds", 20, "write-then-read rounds per library")
	flag.Parse()
	if *dsn == "" {
		fmt.Fprintln(os.Stderr, "dropin: give -dsn or RWSHARD_DSN")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, os.Stdout, *dsn, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "dropin:", err)
		os.Exit(1)
	}
}

// Result is what run measured.
type Result struct {
	Reads, ReplicaReads int
}

// run is the example: every read back must see what was just written.
func run(ctx context.Context, out io.Writer, dsn string, rounds int) (Result, error) {
	var res Result
	gdb, err := gorm.Open(mysql.New(mysql.Config{DriverName: "rwshard", DSN: dsn}),
		&gorm.Config{Logger: logger.Discard})
	if err != nil {
		return res, err
	}
	sqlDB, err := gdb.DB()
	if err != nil {
		return res, err
	}
	defer sqlDB.Close()
	var primary int64
	if err := gdb.WithContext(ctx).Raw("SELECT @@server_id FOR UPDATE").Scan(&primary).Error; err != nil {
		return res, err // a locking read: the primary's own id
	}
	count := func(from int64) {
		res.Reads++
		if from != primary {
			res.ReplicaReads++
		}
	}

	// GORM: the schema, then write-then-read rounds.
	db := gdb.WithContext(ctx)
	if err := db.Migrator().DropTable(&Order{}); err != nil {
		return res, err
	}
	if err := db.AutoMigrate(&Order{}); err != nil {
		return res, err
	}
	if err := db.AutoMigrate(&Order{}); err != nil { // again: it reads the schema it just made
		return res, fmt.Errorf("second AutoMigrate: %w", err)
	}
	for i := range rounds {
		o := Order{Customer: fmt.Sprintf("c%d", i), Total: int64(100 + i), Status: "new"}
		if err := db.Create(&o).Error; err != nil {
			return res, err
		}
		var got Order
		if err := db.Select("*, @@server_id AS `from`").First(&got, o.ID).Error; err != nil {
			return res, fmt.Errorf("GORM read back of order %d: %w", o.ID, err)
		}
		count(got.From)
		if got.Total != o.Total || got.Status != "new" {
			return res, fmt.Errorf("GORM read back of order %d: %+v, want total %d status new", o.ID, got, o.Total)
		}
		if err := db.Model(&Order{}).Where("id = ?", o.ID).Update("status", "paid").Error; err != nil {
			return res, err
		}
		if err := db.Select("*, @@server_id AS `from`").First(&got, o.ID).Error; err != nil {
			return res, err
		}
		count(got.From)
		if got.Status != "paid" {
			return res, fmt.Errorf("GORM read after update of order %d: status %q, want paid", o.ID, got.Status)
		}
	}
	fmt.Fprintf(out, "GORM: AutoMigrate twice, %d orders created, read back, updated, read back: every read saw the write\n", rounds)

	// sqlx on the same DSN.
	x, err := sqlx.Open("rwshard", dsn)
	if err != nil {
		return res, err
	}
	defer x.Close()
	if _, err := x.ExecContext(ctx, "DROP TABLE IF EXISTS items"); err != nil {
		return res, err
	}
	if _, err := x.ExecContext(ctx, "CREATE TABLE items (id BIGINT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(40))"); err != nil {
		return res, err
	}
	for i := range rounds {
		r, err := x.ExecContext(ctx, "INSERT INTO items (name) VALUES (?)", fmt.Sprintf("item%d", i))
		if err != nil {
			return res, err
		}
		id, err := r.LastInsertId()
		if err != nil {
			return res, err
		}
		var it Item
		if err := x.GetContext(ctx, &it, "SELECT id, name, @@server_id AS served_by FROM items WHERE id = ?", id); err != nil {
			return res, fmt.Errorf("sqlx read back of item %d: %w", id, err)
		}
		count(it.From)
		if it.Name != fmt.Sprintf("item%d", i) {
			return res, fmt.Errorf("sqlx read back of item %d: %q", id, it.Name)
		}
		var all []Item
		if err := x.SelectContext(ctx, &all, "SELECT id, name, @@server_id AS served_by FROM items"); err != nil {
			return res, err
		}
		count(all[0].From)
		if len(all) != i+1 {
			return res, fmt.Errorf("sqlx select after insert %d: %d rows, want %d", i, len(all), i+1)
		}
	}
	fmt.Fprintf(out, "sqlx: %d items inserted, each read back at once and in the full list: every read saw the write\n", rounds)
	if res.Reads == 0 {
		return res, errors.New("no read was made")
	}
	fmt.Fprintf(out, "%d reads, %d served by replicas (%.0f%%), %d by the primary\n",
		res.Reads, res.ReplicaReads, 100*float64(res.ReplicaReads)/float64(res.Reads), res.Reads-res.ReplicaReads)
	return res, nil
}
