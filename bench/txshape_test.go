package bench_test

import (
	"context"

	"testing"

	"github.com/rwshard/rwshard"
)

// A transaction shaped like TPC-C's (go-tpc's): BeginTx, statements
// prepared once on the *sql.DB and used through tx.StmtContext, four
// reads and four updates by primary key, COMMIT; go-sql-driver direct to
// the primary against rwshard over the primary and a replica with its
// defaults (causal consistency). Client CPU per transaction is what issue
// 15 compares.
func BenchmarkTxShape(b *testing.B) {
	l := rwLab.Get(b)
	setup(b, l, "CREATE TABLE IF NOT EXISTS bench (id INT PRIMARY KEY, name VARCHAR(40), n BIGINT)",
		"REPLACE INTO bench SELECT seq, CONCAT('row-', seq), seq * 7 FROM seq_1_to_1000")
	for _, s := range []side{
		{"direct", openWith(b, "mysql", l.Primary().DSN(""))},
		{"rwshard", openWith(b, rwshard.DriverName, oneReplicaDSN(l.Primary(), l.Replicas()[0], ""))},
	} {
		b.Run("side="+s.name, func(b *testing.B) {
			ctx := context.Background()
			sel, err := s.db.PrepareContext(ctx, "SELECT name, n FROM bench WHERE id = ?")
			if err != nil {
				b.Fatal(err)
			}
			upd, err := s.db.PrepareContext(ctx, "UPDATE bench SET n = n + 1 WHERE id = ?")
			if err != nil {
				b.Fatal(err)
			}
			var name string
			var n int64
			b.ReportAllocs()
			defer reportCPU(b, cpuTime())
			i := 0
			for b.Loop() {
				tx, err := s.db.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				txSel, txUpd := tx.StmtContext(ctx, sel), tx.StmtContext(ctx, upd)
				for k := range 4 {
					id := 1 + (i*4+k)%1000
					if err := txSel.QueryRowContext(ctx, id).Scan(&name, &n); err != nil {
						b.Fatal(err)
					}
					if _, err := txUpd.ExecContext(ctx, id); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
