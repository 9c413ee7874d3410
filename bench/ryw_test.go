package bench_test

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// BenchmarkReadYourWrites: 8 goroutines, each writing a row and then
// reading it back 10 times through the same *sql.DB, with no session in
// the context (code that never heard of rwshard), replication healthy.
// One op is one write and its 10 reads. Reported per consistency mode:
// the share of reads the replicas served (replica-share), read latency
// p50 and p99, reads that did not see their write (stale-reads), and the
// round trips each replica read cost (replica-trips/read: command
// packets the replicas received, counted by a proxy in front of each,
// less the probes').
func BenchmarkReadYourWrites(b *testing.B) {
	l := rwLab.Get(b)
	setup(b, l, "CREATE TABLE IF NOT EXISTS ryw (id BIGINT PRIMARY KEY, v BIGINT)", "DELETE FROM ryw")
	var next atomic.Int64
	for _, mode := range []string{"eventual", "causal"} {
		b.Run("consistency="+mode, func(b *testing.B) {
			hosts := []string{"tcp(" + l.Primary().Addr() + ")"}
			var proxies []*lab.Proxy
			for _, r := range l.Replicas() {
				p := labtest.Proxy(b, r.Addr())
				proxies = append(proxies, p)
				hosts = append(hosts, "tcp("+p.Addr()+")")
			}
			dsn := lab.AppUser + ":" + lab.AppPassword + "@" + strings.Join(hosts, ",") + "/" + lab.AppDatabase +
				"?rwshard.consistency=" + mode
			db, err := sql.Open(rwshard.DriverName, dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetMaxIdleConns(16)
			labtest.WaitReady(b, db)
			ctx := context.Background()
			c, err := rwshard.ConnectorOf(ctx, db)
			if err != nil {
				b.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond) // lags measured
			before := c.Stats()
			commands := func() int64 {
				var n int64
				for _, p := range proxies {
					n += p.Commands()
				}
				return n
			}
			cmd0, start := commands(), time.Now()
			var mu sync.Mutex
			var lat []time.Duration
			var stale atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(4) // 8 goroutines on this 2-core machine
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				for pb.Next() {
					id := next.Add(1)
					if _, err := db.ExecContext(ctx, "INSERT INTO ryw (id, v) VALUES (?, ?)", id, id*3); err != nil {
						b.Error(err)
						return
					}
					for range 10 {
						t0 := time.Now()
						var v sql.NullInt64
						err := db.QueryRowContext(ctx, "SELECT v FROM ryw WHERE id = ?", id).Scan(&v)
						mine = append(mine, time.Since(t0))
						if err != nil && err != sql.ErrNoRows {
							b.Error(err)
							return
						}
						if !v.Valid || v.Int64 != id*3 {
							stale.Add(1)
						}
					}
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
			b.StopTimer()
			elapsed := time.Since(start)
			after := c.Stats()
			reads := after.Reads - before.Reads
			primary := after.PrimaryReads - before.PrimaryReads
			replicaReads := reads - primary
			probeTrips := int64(elapsed.Seconds()+1) * int64(len(proxies)) // one probe per replica per second
			slices.Sort(lat)
			if len(lat) > 0 && reads > 0 {
				b.ReportMetric(float64(replicaReads)/float64(reads), "replica-share")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "read-p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "read-p99-µs")
				b.ReportMetric(float64(stale.Load()), "stale-reads")
			}
			if replicaReads > 0 {
				b.ReportMetric(float64(commands()-cmd0-probeTrips)/float64(replicaReads), "replica-trips/read")
			}
		})
	}
}
