package bench_test

import (
	"context"
	"testing"

	"github.com/rwshard/rwshard"
)

// What transaction replay's log costs a healthy transaction: BeginTx, a
// read, an update, commit, with rwshard.txReplay off and on (each result
// checksummed, statements and arguments kept until COMMIT).
func BenchmarkTxReplayCost(b *testing.B) {
	l := rwLab.Get(b)
	setup(b, l, "CREATE TABLE IF NOT EXISTS bench (id INT PRIMARY KEY, name VARCHAR(40), n BIGINT)",
		"REPLACE INTO bench SELECT seq, CONCAT('row-', seq), seq * 7 FROM seq_1_to_1000")
	for _, mode := range []string{"false", "true"} {
		db := openWith(b, rwshard.DriverName, oneReplicaDSN(l.Primary(), l.Replicas()[0], "rwshard.consistency=eventual&rwshard.txReplay="+mode))
		b.Run("txReplay="+mode, func(b *testing.B) {
			ctx := context.Background()
			var name string
			var n int64
			b.ReportAllocs()
			defer reportCPU(b, cpuTime())
			i := 0
			for b.Loop() {
				id := 1 + i%1000
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := tx.QueryRowContext(ctx, "SELECT name, n FROM bench WHERE id = ?", id).Scan(&name, &n); err != nil {
					b.Fatal(err)
				}
				if _, err := tx.ExecContext(ctx, "UPDATE bench SET n = n + 1 WHERE id = ?", id); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
