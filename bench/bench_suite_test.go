package bench_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/plugin/dbresolver"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// The performance suite (issue 7), run by `make bench`. Every comparison
// is with go-sql-driver/mysql straight to the same server with the same
// DSN parameters and pool settings, in the same process:
//
//   - reads: rwshard over the primary and replica1 (oneReplicaDSN), so
//     that every read goes to replica1, against direct to replica1;
//   - writes: the same rwshard handle (writes go to the primary) against
//     direct to the primary.
//
// Sub-benchmark names carry side=direct|rwshard (side=dbresolver|rwshard
// for GORM) so that `benchstat -col /side` puts the two side by side.
// Besides ns/op and allocs/op each reports cpu-ns/op: this process's CPU
// time per statement, the client-side cost that wall time (dominated by
// the round trip and a server on the same machine) hides.

// benchParams are the DSN parameter sets every comparison runs with:
// go-sql-driver's default (a parameterized statement is prepared, executed
// and closed: three round trips; rwshard caches the statement: one) and
// interpolateParams=true (one round trip on both sides).
var benchParams = []string{"", "interpolateParams=true"}

// benchTable: 1000 rows, read by the point and range selects.
func benchTable(b *testing.B, l *lab.Lab) {
	setup(b, l, "CREATE TABLE IF NOT EXISTS bench (id INT PRIMARY KEY, name VARCHAR(40), n BIGINT)",
		"REPLACE INTO bench SELECT seq, CONCAT('row-', seq), seq * 7 FROM seq_1_to_1000")
}

// pair is one comparison's handles: direct to the replica that serves
// rwshard's reads, direct to the primary, and rwshard over both.
type pair struct {
	read, write, rw *sql.DB
}

func openPair(b *testing.B, l *lab.Lab, params string) pair {
	replica := l.Replicas()[0]
	return pair{
		read:  openWith(b, "mysql", replica.DSN(params)),
		write: openWith(b, "mysql", l.Primary().DSN(params)),
		rw:    openWith(b, rwshard.DriverName, oneReplicaDSN(l.Primary(), replica, params)),
	}
}

// sides names the two handles of a comparison.
func (p pair) reads() []side  { return []side{{"direct", p.read}, {"rwshard", p.rw}} }
func (p pair) writes() []side { return []side{{"direct", p.write}, {"rwshard", p.rw}} }

type side struct {
	name string
	db   *sql.DB
}

// BenchmarkRangeSelect: a 10-row range select by primary key, every row
// scanned.
func BenchmarkRangeSelect(b *testing.B) {
	l := rwLab.Get(b)
	benchTable(b, l)
	for _, params := range benchParams {
		p := openPair(b, l, params)
		for _, s := range p.reads() {
			b.Run(fmt.Sprintf("params=%q/side=%s", params, s.name), func(b *testing.B) { benchRange(b, s.db) })
		}
	}
}

func benchRange(b *testing.B, db *sql.DB) {
	ctx := context.Background()
	var id int
	var name string
	var n int64
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	i := 0
	for b.Loop() {
		lo := 1 + i%991
		rows, err := db.QueryContext(ctx, "SELECT id, name, n FROM bench WHERE id BETWEEN ? AND ?", lo, lo+9)
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for rows.Next() {
			if err := rows.Scan(&id, &name, &n); err != nil {
				b.Fatal(err)
			}
			got++
		}
		if err := rows.Close(); err != nil {
			b.Fatal(err)
		}
		if got != 10 {
			b.Fatalf("%d rows, want 10", got)
		}
		i++
	}
}

// BenchmarkInsert: a single-row INSERT in autocommit, on the primary. The
// table is emptied after each run, and the replicas caught up before the
// next benchmark starts, so neither the table nor the replication backlog
// grows from run to run.
func BenchmarkInsert(b *testing.B) {
	l := rwLab.Get(b)
	setup(b, l, "CREATE TABLE IF NOT EXISTS bench_ins (id BIGINT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(40), n BIGINT)",
		"TRUNCATE TABLE bench_ins")
	for _, params := range benchParams {
		p := openPair(b, l, params)
		for _, s := range p.writes() {
			b.Run(fmt.Sprintf("params=%q/side=%s", params, s.name), func(b *testing.B) {
				b.Cleanup(func() { emptyTable(b, l, p.write, "bench_ins") })
				benchInsert(b, s.db)
			})
		}
	}
}

func benchInsert(b *testing.B, db *sql.DB) {
	ctx := context.Background()
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	i := 0
	for b.Loop() {
		if _, err := db.ExecContext(ctx, "INSERT INTO bench_ins (name, n) VALUES (?, ?)", "row", i); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// emptyTable truncates a table on the primary and waits for the replicas.
func emptyTable(b *testing.B, l *lab.Lab, primary *sql.DB, table string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := primary.ExecContext(ctx, "TRUNCATE TABLE "+table); err != nil {
		b.Error(err)
	}
	if err := l.Sync(ctx, 30*time.Second); err != nil {
		b.Error(err)
	}
}

// concurrencyLevels are the goroutine counts of BenchmarkConcurrency.
var concurrencyLevels = []int{1, 8, 64}

// BenchmarkConcurrency: point selects from 1, 8 and 64 goroutines at once
// (RunParallel with GOMAXPROCS × p goroutines: p = 4 and 32 on a 2-core
// machine), reporting throughput (ops/s). Pools hold up to 64 connections
// and keep them idle, on both sides (rwshard's node pools too), so that
// neither side measures connection churn.
func BenchmarkConcurrency(b *testing.B) {
	l := rwLab.Get(b)
	benchTable(b, l)
	replica := l.Replicas()[0]
	for _, params := range benchParams {
		rwParams := "rwshard.maxIdleConns=64&rwshard.maxOpenConns=64"
		if params != "" {
			rwParams = params + "&" + rwParams
		}
		sides := []side{
			{"direct", openPool(b, "mysql", replica.DSN(params), 64)},
			{"rwshard", openPool(b, rwshard.DriverName, oneReplicaDSN(l.Primary(), replica, rwParams), 64)},
		}
		for _, g := range concurrencyLevels {
			p, actual := parallelism(g)
			for _, s := range sides {
				b.Run(fmt.Sprintf("params=%q/goroutines=%d/side=%s", params, actual, s.name), func(b *testing.B) {
					benchParallel(b, s.db, p)
				})
			}
		}
	}
}

// parallelism returns the SetParallelism argument for about g goroutines
// (0: a plain loop, one goroutine) and the goroutine count it gives.
func parallelism(g int) (p, goroutines int) {
	if g <= 1 {
		return 0, 1
	}
	procs := runtime.GOMAXPROCS(0)
	p = max(1, (g+procs-1)/procs)
	return p, p * procs
}

func openPool(b *testing.B, driverName, dsn string, conns int) *sql.DB {
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxIdleConns(conns)
	db.SetMaxOpenConns(conns)
	b.Cleanup(func() { db.Close() })
	return db
}

const pointSelect = "SELECT name, n FROM bench WHERE id = ?"

func benchParallel(b *testing.B, db *sql.DB, p int) {
	ctx := context.Background()
	// Warm the pools up to the goroutine count before the clock starts.
	var wg sync.WaitGroup
	for g := range max(1, p*runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			var name string
			var n int64
			if err := db.QueryRowContext(ctx, pointSelect, 1+g%1000).Scan(&name, &n); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	b.ReportAllocs()
	start := cpuTime()
	b.ResetTimer()
	if p == 0 {
		var name string
		var n int64
		for i := 0; i < b.N; i++ {
			if err := db.QueryRowContext(ctx, pointSelect, 1+i%1000).Scan(&name, &n); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		b.SetParallelism(p)
		b.RunParallel(func(pb *testing.PB) {
			var name string
			var n int64
			i := 0
			for pb.Next() {
				if err := db.QueryRowContext(ctx, pointSelect, 1+i%1000).Scan(&name, &n); err != nil {
					b.Error(err)
					return
				}
				i += 7
			}
		})
	}
	b.StopTimer()
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "ops/s")
	}
	reportCPU(b, start)
}

// gormRow is the bench table as a GORM model.
type gormRow struct {
	ID   int `gorm:"primaryKey"`
	Name string
	N    int64
}

func (gormRow) TableName() string { return "bench" }

// gormNew is a row GORM inserts (auto-increment key).
type gormNew struct {
	ID   int64 `gorm:"primaryKey;autoIncrement"`
	Name string
	N    int64
}

func (gormNew) TableName() string { return "bench_gorm" }

// BenchmarkGORM: GORM with gorm.io/plugin/dbresolver (the primary as
// source, replica1 as its one replica) against GORM on rwshard
// (gorm.io/driver/mysql with DriverName "rwshard") over the same two
// servers, same DSN parameters, same pool settings, GORM's default
// configuration (Create runs in a transaction). First by primary key reads
// from replica1 on both sides; Create writes on the primary.
func BenchmarkGORM(b *testing.B) {
	l := rwLab.Get(b)
	benchTable(b, l)
	setup(b, l, "CREATE TABLE IF NOT EXISTS bench_gorm (id BIGINT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(40), n BIGINT)",
		"TRUNCATE TABLE bench_gorm")
	cfg := func() *gorm.Config { return &gorm.Config{Logger: logger.Discard} }
	replica := l.Replicas()[0]
	for _, params := range benchParams {
		resolved, err := gorm.Open(mysql.Open(l.Primary().DSN(params)), cfg())
		if err != nil {
			b.Fatal(err)
		}
		if err := resolved.Use(dbresolver.Register(dbresolver.Config{
			Replicas: []gorm.Dialector{mysql.Open(replica.DSN(params))},
		}).SetMaxIdleConns(16).SetMaxOpenConns(64)); err != nil {
			b.Fatal(err)
		}
		onRwshard, err := gorm.Open(mysql.New(mysql.Config{
			DriverName: rwshard.DriverName,
			DSN:        oneReplicaDSN(l.Primary(), replica, params),
		}), cfg())
		if err != nil {
			b.Fatal(err)
		}
		for _, g := range []*gorm.DB{resolved, onRwshard} {
			sqlDB, err := g.DB()
			if err != nil {
				b.Fatal(err)
			}
			sqlDB.SetMaxIdleConns(16)
			sqlDB.SetMaxOpenConns(64)
			b.Cleanup(func() { sqlDB.Close() })
		}
		primary := openWith(b, "mysql", l.Primary().DSN(""))
		for _, s := range []struct {
			name string
			db   *gorm.DB
		}{{"dbresolver", resolved}, {"rwshard", onRwshard}} {
			b.Run(fmt.Sprintf("params=%q/op=first/side=%s", params, s.name), func(b *testing.B) {
				ctx := context.Background()
				b.ReportAllocs()
				defer reportCPU(b, cpuTime())
				i := 0
				for b.Loop() {
					var r gormRow
					if err := s.db.WithContext(ctx).First(&r, 1+i%1000).Error; err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
			b.Run(fmt.Sprintf("params=%q/op=create/side=%s", params, s.name), func(b *testing.B) {
				b.Cleanup(func() { emptyTable(b, l, primary, "bench_gorm") })
				ctx := context.Background()
				b.ReportAllocs()
				defer reportCPU(b, cpuTime())
				i := 0
				for b.Loop() {
					if err := s.db.WithContext(ctx).Create(&gormNew{Name: "row", N: int64(i)}).Error; err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkHealthProbe measures what rwshard's health checks cost the
// servers: it opens rwshard over the lab (primary + 2 replicas, each
// reached through a proxy that counts the queries sent: lab.Proxy) with
// the default probe settings, lets it idle for probeWindow and reads each
// node's statement counters before and after. The same window is first
// measured with rwshard closed, as the lab's own background. It runs once
// whatever -benchtime says (one iteration takes twice probeWindow).
//
// Reported: queries (round trips) per node per second, probe sets (one
// probe of one node: SHOW REPLICA STATUS counts them) per node per second,
// and statements per node per second. Budget (DESIGN §10): at most one
// probe query per node per interval (1 s).
func BenchmarkHealthProbe(b *testing.B) {
	const probeWindow = 10 * time.Second
	l := rwLab.Get(b)
	nodes := l.Nodes()
	for b.Loop() {
		idle := probeCounts(b, nodes, probeWindow, func() func() { return func() {} })
		var proxies []*lab.Proxy
		var queries []int64
		busy := probeCounts(b, nodes, probeWindow, func() func() {
			cfg, err := rwshard.ParseDSN(labDSN(l, ""))
			if err != nil {
				b.Fatal(err)
			}
			proxies = proxies[:0]
			for i, n := range nodes {
				proxies = append(proxies, labtest.Proxy(b, n.Addr()))
				cfg.Nodes[i].Addr = proxies[i].Addr()
			}
			c, err := rwshard.NewConnector(cfg)
			if err != nil {
				b.Fatal(err)
			}
			db := sql.OpenDB(c)
			// Connect once and wait for the first probe round (each node's
			// first probe also reads @@version, once): the window then
			// sees the steady state only.
			if err := db.Ping(); err != nil {
				b.Fatal(err)
			}
			time.Sleep(2 * rwshard.NewConfig().ProbeInterval)
			queries = queries[:0]
			for _, p := range proxies {
				queries = append(queries, p.Commands())
			}
			return func() {
				for i, p := range proxies {
					queries[i] = p.Commands() - queries[i]
				}
				db.Close()
			}
		})
		var maxQueries, maxSets, maxStmts, maxIdle float64
		for i, n := range nodes {
			secs := probeWindow.Seconds()
			q := float64(queries[i]) / secs
			sets := float64(busy[i].sets-idle[i].sets) / secs
			stmts := float64(busy[i].stmts-idle[i].stmts) / secs
			b.Logf("%s: %.2f queries/s, %.2f probe sets/s, %.2f statements/s (%d SELECT, %d SHOW REPLICA STATUS, %d other; %d new connections) over %s; background without rwshard: %.2f statements/s",
				n.Name, q, sets, stmts, busy[i].selects-idle[i].selects, busy[i].sets-idle[i].sets,
				busy[i].stmts-busy[i].selects-busy[i].sets-(idle[i].stmts-idle[i].selects-idle[i].sets),
				busy[i].conns-idle[i].conns, probeWindow, float64(idle[i].stmts)/secs)
			maxQueries = max(maxQueries, q)
			maxSets = max(maxSets, sets)
			maxStmts = max(maxStmts, stmts)
			maxIdle = max(maxIdle, float64(idle[i].stmts)/secs)
		}
		b.ReportMetric(maxQueries, "queries/node/s")
		b.ReportMetric(maxSets, "probe-sets/node/s")
		b.ReportMetric(maxStmts, "stmts/node/s")
		b.ReportMetric(maxIdle, "background-stmts/node/s")
	}
}

// probeCount is one node's statement counters over a window, the
// measuring statements themselves taken out.
type probeCount struct {
	stmts   int64 // Questions
	selects int64 // Com_select
	sets    int64 // Com_show_slave_status: one per probe set
	conns   int64 // Connections
}

// probeCounts reads every node's counters, runs start, waits window, calls
// the function start returned, and reads them again.
func probeCounts(b *testing.B, nodes []*lab.Node, window time.Duration, start func() func()) []probeCount {
	stop := start()
	before := make([]map[string]int64, len(nodes))
	for i, n := range nodes {
		before[i] = labtest.NodeStatus(b, n)
	}
	time.Sleep(window)
	after := make([]map[string]int64, len(nodes))
	for i, n := range nodes {
		after[i] = labtest.NodeStatus(b, n)
	}
	stop()
	out := make([]probeCount, len(nodes))
	for i := range nodes {
		d := func(k string) int64 { return after[i][k] - before[i][k] }
		out[i] = probeCount{
			stmts:   d("Questions") - 1, // the second SHOW GLOBAL STATUS
			selects: d("Com_select"),
			sets:    d("Com_show_slave_status"),
			conns:   d("Connections"),
		}
	}
	return out
}

// BenchmarkOverhead isolates rwshard's own cost per statement, without a
// server: a driver that answers at once (instantDriver) behind
// database/sql directly, against rwshard.OpenDB over two pools of it (a
// primary and a replica). The difference is what rwshard adds in CPU time
// and allocations: routing, the checkout from the node's pool, the rows
// wrapper, the counters. It needs no lab.
func BenchmarkOverhead(b *testing.B) {
	open := func() *sql.DB {
		db := sql.OpenDB(instantConnector{})
		db.SetMaxIdleConns(64)
		b.Cleanup(func() { db.Close() })
		return db
	}
	direct := open()
	rw, err := rwshard.OpenDB(open(), []*sql.DB{open()})
	if err != nil {
		b.Fatal(err)
	}
	rw.SetMaxIdleConns(64)
	b.Cleanup(func() { rw.Close() })
	ctx := context.Background()
	for _, s := range []side{{"direct", direct}, {"rwshard", rw}} {
		b.Run("op=query/side="+s.name, func(b *testing.B) { benchQuery(b, s.db) })
		// The same from 64 goroutines: contention in the pools and the
		// shared counters.
		b.Run("op=query-parallel/side="+s.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				var name string
				var n int64
				for pb.Next() {
					if err := s.db.QueryRowContext(ctx, pointSelect, 42).Scan(&name, &n); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		b.Run("op=prepared/side="+s.name, func(b *testing.B) { benchPrepared(b, s.db) })
		b.Run("op=exec/side="+s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.db.ExecContext(ctx, "INSERT INTO bench_ins (name, n) VALUES (?, ?)", "row", 42); err != nil {
					b.Fatal(err)
				}
			}
		})
		// A transaction of one INSERT, as GORM's Create runs it.
		b.Run("op=tx/side="+s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tx, err := s.db.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := tx.ExecContext(ctx, "INSERT INTO bench_ins (name, n) VALUES (?, ?)", "row", 42); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// instantDriver answers every query with one row ("row", 7) and every exec
// with one affected row, at once.
type instantConnector struct{}

func (instantConnector) Connect(context.Context) (driver.Conn, error) { return instantConn{}, nil }
func (instantConnector) Driver() driver.Driver                        { return instantDriver{} }

type instantDriver struct{}

func (instantDriver) Open(string) (driver.Conn, error) { return instantConn{}, nil }

type instantConn struct{}

func (instantConn) Prepare(string) (driver.Stmt, error) { return instantStmt{}, nil }
func (instantConn) Close() error                        { return nil }
func (instantConn) Begin() (driver.Tx, error)           { return instantTx{}, nil }
func (instantConn) QueryContext(context.Context, string, []driver.NamedValue) (driver.Rows, error) {
	return &instantRows{}, nil
}
func (instantConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	return driver.RowsAffected(1), nil
}

type instantStmt struct{}

func (instantStmt) Close() error  { return nil }
func (instantStmt) NumInput() int { return -1 }
func (instantStmt) Exec([]driver.Value) (driver.Result, error) {
	return driver.RowsAffected(1), nil
}
func (instantStmt) Query([]driver.Value) (driver.Rows, error) { return &instantRows{}, nil }

type instantTx struct{}

func (instantTx) Commit() error   { return nil }
func (instantTx) Rollback() error { return nil }

type instantRows struct{ done bool }

var instantColumns = []string{"name", "n"}

func (*instantRows) Columns() []string { return instantColumns }
func (*instantRows) Close() error      { return nil }
func (r *instantRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0], dest[1] = "row", int64(7)
	return nil
}
