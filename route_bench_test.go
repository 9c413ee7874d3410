package rwshard

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strconv"
	"testing"

	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/router"
)

// nullConnector is a backend that is never dialed: the routing benchmarks
// stop before I/O.
type nullConnector struct{}

func (nullConnector) Connect(context.Context) (driver.Conn, error) {
	return nil, errors.New("not dialed")
}
func (nullConnector) Driver() driver.Driver { return nil }

func benchConn(tb testing.TB) *conn {
	tb.Helper()
	cfg := NewConfig()
	cfg.Health = false
	for range 3 {
		cfg.dbs = append(cfg.dbs, sql.OpenDB(nullConnector{}))
		cfg.Nodes = append(cfg.Nodes, Node{Name: defaultName(len(cfg.Nodes))})
	}
	c, err := NewConnector(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	dc, _ := c.Connect(context.Background())
	return dc.(*conn)
}

// decide is the whole routing decision: classify (cached), hints from the
// context and the comment, the decision, the read rules and the balancer's
// pick, or the primary.
func (c *conn) decide(ctx context.Context, q string) (*node, error) {
	_, d, h, err := c.route(ctx, q)
	if err != nil {
		return nil, err
	}
	if d.Target == router.ToReplica {
		f := c.filter(ctx, h)
		if n, _ := c.cl.pickReader(&f); n != nil {
			return n, nil
		}
	}
	return c.cl.primary(), nil
}

func benchmarkRoute(b *testing.B, ctx context.Context, q string) {
	c := benchConn(b)
	if _, err := c.decide(ctx, q); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.decide(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRouteRepeated(b *testing.B) {
	q := "SELECT id, status, total FROM orders WHERE customer_id = ? AND created_at > ? ORDER BY created_at DESC LIMIT 20"
	b.Run("read", func(b *testing.B) { benchmarkRoute(b, context.Background(), q) })
	b.Run("read-hinted", func(b *testing.B) { benchmarkRoute(b, hint.MaxLag(hint.Replica(context.Background()), 1e9), q) })
	b.Run("write", func(b *testing.B) {
		benchmarkRoute(b, context.Background(), "UPDATE orders SET status = ? WHERE id = ?")
	})
	b.Run("locking-read", func(b *testing.B) {
		benchmarkRoute(b, context.Background(), "SELECT status FROM orders WHERE id = ? FOR UPDATE")
	})
}

// First sight: a 200-byte statement the classifier cache has not seen
// (100k distinct texts cycle through a 4096-entry cache: every one misses).
func BenchmarkRouteFirstSight(b *testing.B) {
	c := benchConn(b)
	base := "SELECT o.id, o.status, o.total, c.name FROM orders o JOIN customers c ON c.id = o.customer_id " +
		"WHERE o.customer_id = ? AND o.created_at > ? AND o.status IN ('paid', 'shipped') ORDER BY o.created_at DESC LIMIT "
	qs := make([]string, 100_000)
	for i := range qs {
		qs[i] = base + strconv.Itoa(i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := c.decide(ctx, qs[i%len(qs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
