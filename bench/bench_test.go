package bench_test

import (
	"context"
	"database/sql"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
)

// Point selects through rwshard (primary + replica1) against
// go-sql-driver/mysql straight to replica1, same server, same parameters,
// same pool settings, in the same run. Compare with benchstat or read the
// ns/op side by side; the README records the ratios.
//
//	make bench    # go test -run '^$' -bench . -count 6
func BenchmarkPointSelect(b *testing.B) {
	l := rwLab.Get(b)
	setup(b, l, "CREATE TABLE IF NOT EXISTS bench (id INT PRIMARY KEY, name VARCHAR(40), n BIGINT)",
		"REPLACE INTO bench SELECT seq, CONCAT('row-', seq), seq * 7 FROM seq_1_to_1000")
	replica := l.Replicas()[0]
	for _, params := range []string{"", "interpolateParams=true"} {
		directDB := openWith(b, "mysql", replica.DSN(params))
		rwDB := openWith(b, rwshard.DriverName, oneReplicaDSN(l.Primary(), replica, params))
		for _, side := range []struct {
			name string
			db   *sql.DB
		}{{"direct", directDB}, {"rwshard", rwDB}} {
			name := fmt.Sprintf("params=%q/%s", params, side.name)
			b.Run(name+"/query", func(b *testing.B) { benchQuery(b, side.db) })
			b.Run(name+"/prepared", func(b *testing.B) { benchPrepared(b, side.db) })
		}
	}
}

func openWith(b *testing.B, driverName, dsn string) *sql.DB {
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxIdleConns(16)
	db.SetMaxOpenConns(64)
	b.Cleanup(func() { db.Close() })
	return db
}

// oneReplicaDSN routes every read to replica: the comparison is with the
// same server.
func oneReplicaDSN(primary, replica *lab.Node, params string) string {
	dsn := fmt.Sprintf("%s:%s@tcp(%s),tcp(%s)/%s", lab.AppUser, lab.AppPassword, primary.Addr(), replica.Addr(), lab.AppDatabase)
	if params != "" {
		dsn += "?" + params
	}
	return dsn
}

// cpuTime is this process's user+system CPU time: the client-side cost
// of a statement, which wall time (dominated by the round trip and the
// server, and noisy on a small machine) hides.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds a cpu-ns/op metric.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func benchQuery(b *testing.B, db *sql.DB) {
	ctx := context.Background()
	var name string
	var n int64
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	i := 0
	for b.Loop() {
		if err := db.QueryRowContext(ctx, "SELECT name, n FROM bench WHERE id = ?", 1+i%1000).Scan(&name, &n); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func benchPrepared(b *testing.B, db *sql.DB) {
	ctx := context.Background()
	st, err := db.PrepareContext(ctx, "SELECT name, n FROM bench WHERE id = ?")
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var name string
	var n int64
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	i := 0
	for b.Loop() {
		if err := st.QueryRowContext(ctx, 1+i%1000).Scan(&name, &n); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
