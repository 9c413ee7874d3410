package bench_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/rwshard/rwshard"
)

// nopTracer does nothing: what the hook itself costs.
type nopTracer struct{}

func (nopTracer) StatementStart(ctx context.Context, _ rwshard.StatementStart) context.Context {
	return ctx
}
func (nopTracer) StatementEnd(context.Context, rwshard.StatementEnd) {}

// The Tracer hook: point selects through rwshard without a tracer (the
// meters every statement updates: latency histogram, counters) and with a
// tracer that does nothing (the hook's own cost: the StatementEnd it
// builds, the redacted text), against go-sql-driver direct to the same
// replica.
func BenchmarkTracer(b *testing.B) {
	l := rwLab.Get(b)
	setup(b, l, "CREATE TABLE IF NOT EXISTS bench (id INT PRIMARY KEY, name VARCHAR(40), n BIGINT)",
		"REPLACE INTO bench SELECT seq, CONCAT('row-', seq), seq * 7 FROM seq_1_to_1000")
	replica := l.Replicas()[0]
	direct := openWith(b, "mysql", replica.DSN(""))
	plain := openWith(b, rwshard.DriverName, oneReplicaDSN(l.Primary(), replica, ""))
	cfg, err := rwshard.ParseDSN(oneReplicaDSN(l.Primary(), replica, ""))
	if err != nil {
		b.Fatal(err)
	}
	cfg.Tracer = nopTracer{}
	c, err := rwshard.NewConnector(cfg)
	if err != nil {
		b.Fatal(err)
	}
	traced := sql.OpenDB(c)
	traced.SetMaxIdleConns(16)
	b.Cleanup(func() { traced.Close() })
	for _, side := range []struct {
		name string
		db   *sql.DB
	}{{"direct", direct}, {"rwshard", plain}, {"rwshard-nop-tracer", traced}} {
		b.Run(side.name, func(b *testing.B) { benchQuery(b, side.db) })
	}
}
