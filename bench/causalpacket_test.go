package bench_test

import (
	"context"
	"testing"
)

// What sending a causal read's GTID wait and the read in one packet
// (MaxScale's way) would save over rwshard's two round trips, measured
// with go-sql-driver alone on a replica that already has the GTID (the
// wait returns at once): two statements on one connection against one
// multi-statement packet. The one-packet form needs multiStatements and
// client-side interpolation (interpolateParams) on the connection, which
// rwshard does not turn on behind the user's back: stacked statements
// would then be accepted from any string the application builds, and
// arguments would go through the text protocol instead of the binary one.
func BenchmarkCausalWaitPacket(b *testing.B) {
	l := rwLab.Get(b)
	setup(b, l, "CREATE TABLE IF NOT EXISTS bench (id INT PRIMARY KEY, name VARCHAR(40), n BIGINT)",
		"REPLACE INTO bench SELECT seq, CONCAT('row-', seq), seq * 7 FROM seq_1_to_1000")
	replica := l.Replicas()[0]
	ctx := context.Background()
	var gtid string
	if err := openWith(b, "mysql", replica.DSN("")).QueryRowContext(ctx, "SELECT @@gtid_slave_pos").Scan(&gtid); err != nil {
		b.Fatal(err)
	}
	two := openWith(b, "mysql", replica.DSN("interpolateParams=true"))
	one := openWith(b, "mysql", replica.DSN("interpolateParams=true&multiStatements=true"))
	b.Run("two-round-trips", func(b *testing.B) {
		conn, err := two.Conn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		b.ReportAllocs()
		defer reportCPU(b, cpuTime())
		var w int
		var name string
		i := 0
		for b.Loop() {
			if err := conn.QueryRowContext(ctx, "SELECT MASTER_GTID_WAIT(?, 1)", gtid).Scan(&w); err != nil || w != 0 {
				b.Fatal(err, w)
			}
			if err := conn.QueryRowContext(ctx, "SELECT name FROM bench WHERE id = ?", 1+i%1000).Scan(&name); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("one-packet", func(b *testing.B) {
		conn, err := one.Conn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		b.ReportAllocs()
		defer reportCPU(b, cpuTime())
		var w int
		var name string
		i := 0
		for b.Loop() {
			rows, err := conn.QueryContext(ctx, "SELECT MASTER_GTID_WAIT(?, 1); SELECT name FROM bench WHERE id = ?", gtid, 1+i%1000)
			if err != nil {
				b.Fatal(err)
			}
			if !rows.Next() || rows.Scan(&w) != nil || w != 0 || !rows.NextResultSet() || !rows.Next() || rows.Scan(&name) != nil {
				b.Fatal("one-packet read failed", rows.Err())
			}
			rows.Close()
			i++
		}
	})
}
