package bench_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/rwshard/rwshard"
)

// Session variables without pinning: point selects on one *sql.Conn after
// SET time_zone (the setting applied once per backend connection, reads
// still on the replicas) against the same reads without the SET, and
// against go-sql-driver direct to a replica with the same SET. The
// replica-share metric says where the reads ran.
func BenchmarkSessionVars(b *testing.B) {
	l := rwLab.Get(b)
	setup(b, l, "CREATE TABLE IF NOT EXISTS bench (id INT PRIMARY KEY, name VARCHAR(40), n BIGINT)",
		"REPLACE INTO bench SELECT seq, CONCAT('row-', seq), seq * 7 FROM seq_1_to_1000")
	replica := l.Replicas()[0]
	direct := openWith(b, "mysql", replica.DSN(""))
	rw := openWith(b, rwshard.DriverName, oneReplicaDSN(l.Primary(), replica, ""))
	c, err := rwshard.ConnectorOf(context.Background(), rw)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		db   *sql.DB
		set  bool
	}{{"direct/set", direct, true}, {"rwshard/no-set", rw, false}, {"rwshard/set", rw, true}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			conn, err := tc.db.Conn(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			if tc.set {
				if _, err := conn.ExecContext(ctx, "SET time_zone = '+05:00'"); err != nil {
					b.Fatal(err)
				}
			}
			before := c.Stats()
			var name string
			var n int64
			b.ReportAllocs()
			defer reportCPU(b, cpuTime())
			i := 0
			for b.Loop() {
				if err := conn.QueryRowContext(ctx, "SELECT name, n FROM bench WHERE id = ?", 1+i%1000).Scan(&name, &n); err != nil {
					b.Fatal(err)
				}
				i++
			}
			if tc.db == rw {
				after := c.Stats()
				reads := after.Reads - before.Reads
				if reads > 0 {
					b.ReportMetric(1-float64(after.PrimaryReads-before.PrimaryReads)/float64(reads), "replica-share")
				}
			}
		})
	}
}
