package bench_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	_ "github.com/rwshard/rwshard/shard" // registers sharding with the driver
)

// shardBench is a sharded lab with 100k orders in 4 physical tables
// (2 data sources × 2 tables), shared by the sharding benchmarks.
var shardBench struct {
	l  *lab.Lab
	db *sql.DB
}

func shardBenchDB(b *testing.B) (*lab.Lab, *sql.DB) {
	b.Helper()
	if shardBench.db != nil {
		return shardBench.l, shardBench.db
	}
	l := labtest.Fresh(b, lab.Sharded())
	ctx := context.Background()
	rules := labtest.RulesFile(b, l)
	db, err := sql.Open(rwshard.DriverName, "/app?rwshard.rulesFile="+url.QueryEscape(rules))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close(); shardBench.db = nil })
	if _, err := db.ExecContext(ctx, "CREATE TABLE t_order (order_id BIGINT PRIMARY KEY, user_id INT NOT NULL, "+
		"amount DECIMAL(10,2), status VARCHAR(10), note VARCHAR(20) NULL, KEY (amount))"); err != nil {
		b.Fatal(err)
	}
	const rows, batch = 100_000, 1000
	for start := 1; start <= rows; start += batch {
		var ph []string
		var args []any
		for id := start; id < start+batch; id++ {
			ph = append(ph, "(?, ?, ?, 'new')")
			args = append(args, id, id%97, fmt.Sprintf("%d.%02d", (id*7919)%100000, id%100))
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO t_order (order_id, user_id, amount, status) VALUES "+strings.Join(ph, ","), args...); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Sync(ctx, time.Minute); err != nil {
		b.Fatal(err)
	}
	shardBench.l, shardBench.db = l, db
	return l, db
}

// BenchmarkShardPointSelect: a point select by the full shard key through
// the sharded rwshard against go-sql-driver/mysql straight to the physical
// table on the same replica, same parameters.
func BenchmarkShardPointSelect(b *testing.B) {
	l, db := shardBenchDB(b)
	ctx := context.Background()
	replica := l.Groups[0].Replicas()[0] // user 4 → ds_0; order 101 → t_order_1
	directDB := openWith(b, "mysql", replica.DSN(""))
	var amount string
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := directDB.QueryRowContext(ctx, "SELECT amount FROM t_order_1 WHERE order_id = ? AND user_id = ?", 101, 4).Scan(&amount); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rwshard", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := db.QueryRowContext(ctx, "SELECT amount FROM t_order WHERE order_id = ? AND user_id = ?", 101, 4).Scan(&amount); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkShardMergeLimit: ORDER BY … LIMIT 10 OFFSET 100 over the 4
// physical tables (100k rows) against the slowest of the four single-table
// queries it is made of, and against those four queries sent at once
// straight through go-sql-driver (parallel-direct: what this machine can
// do without rwshard). Memory: B/op stays in the order of shards ×
// (offset+limit) rows, whatever the table size.
func BenchmarkShardMergeLimit(b *testing.B) {
	l, db := shardBenchDB(b)
	ctx := context.Background()
	var id int64
	var amount string
	b.Run("merged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rows, err := db.QueryContext(ctx, "SELECT order_id, amount FROM t_order ORDER BY amount DESC, order_id DESC LIMIT 100, 10")
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				if err := rows.Scan(&id, &amount); err != nil {
					b.Fatal(err)
				}
				n++
			}
			rows.Close()
			if n != 10 {
				b.Fatalf("%d rows", n)
			}
		}
	})
	// The four shard queries, each to its own data source's replica
	// straight through go-sql-driver, rows scanned one by one.
	shardQuery := func(b *testing.B, db *sql.DB, table int) {
		rows, err := db.QueryContext(ctx, fmt.Sprintf("SELECT order_id, amount FROM t_order_%d ORDER BY amount DESC, order_id DESC LIMIT 0, 110", table))
		if err != nil {
			b.Error(err)
			return
		}
		defer rows.Close()
		var id int64
		var amount string
		for rows.Next() {
			if err := rows.Scan(&id, &amount); err != nil {
				b.Error(err)
				return
			}
		}
	}
	var direct []*sql.DB
	for _, g := range l.Groups {
		direct = append(direct, openWith(b, "mysql", g.Replicas()[0].DSN("")))
	}
	for gi := range l.Groups {
		for ti := range 2 {
			b.Run(fmt.Sprintf("single/ds_%d.t_order_%d", gi, ti), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					shardQuery(b, direct[gi], ti)
				}
			})
		}
	}
	// The floor of this machine: the four shard queries at once, direct,
	// without routing or merge.
	b.Run("parallel-direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var wg sync.WaitGroup
			for u := range 4 {
				wg.Go(func() { shardQuery(b, direct[u/2], u%2) })
			}
			wg.Wait()
		}
	})
}
