package rwshard

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/rwshard/rwshard/hint"
)

// nullConnector is a backend that is never dialed: the routing benchmarks
// stop before I/O.
type nullConnector struct{}

func (nullConnector) Connect(context.Context) (driver.Conn, error) {
	return nil, errors.New("not dialed")
}
func (nullConnector) Driver() driver.Driver { return nil }

func benchConn(tb testing.TB) *conn { return benchConnWith(tb, nil) }

// benchConnWith is benchConn with the Config changed by edit first.
func benchConnWith(tb testing.TB, edit func(*Config)) *conn {
	tb.Helper()
	cfg := NewConfig()
	cfg.Health = false
	for range 3 {
		cfg.dbs = append(cfg.dbs, sql.OpenDB(nullConnector{}))
		cfg.Nodes = append(cfg.Nodes, Node{Name: defaultName(len(cfg.Nodes))})
	}
	if edit != nil {
		edit(cfg)
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
	var p plan
	if err := c.plan(ctx, q, nil, &p); err != nil {
		return nil, err
	}
	if p.where == toReplicas {
		if n := c.cl.pick(p.targets); n != nil {
			return n, nil
		}
	}
	return c.cl.primary(), nil
}

func benchmarkRoute(b *testing.B, ctx context.Context, q string) {
	benchmarkRouteOn(b, benchConn(b), ctx, q)
}

func benchmarkRouteOn(b *testing.B, c *conn, ctx context.Context, q string) {
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
	// A read on a logical connection pinned by session state (SET, a
	// temporary table…): it stays on the held primary connection.
	b.Run("session-read", func(b *testing.B) {
		c := benchConn(b)
		c.dirty = true
		benchmarkRouteOn(b, c, context.Background(), q)
	})
	b.Run("read-comment-hint", func(b *testing.B) {
		benchmarkRoute(b, context.Background(), "/* rwshard:max_lag=1s */ "+q)
	})
	b.Run("multi-statement", func(b *testing.B) {
		benchmarkRoute(b, context.Background(), "SELECT id FROM orders WHERE customer_id = ?; SELECT name FROM customers WHERE id = ?")
	})
}

// First sight per statement class: 200-byte statements the classifier
// cache has not seen, as BenchmarkRouteFirstSight (the read) does.
func BenchmarkRouteFirstSightClass(b *testing.B) {
	for _, tc := range []struct{ name, base string }{
		{"write", "UPDATE orders SET status = 'shipped', shipped_at = NOW(), carrier = ?, tracking = ? " +
			"WHERE customer_id = ? AND status = 'paid' AND created_at > ? AND warehouse IN (1, 2, 3) AND id = "},
		{"locking-read", "SELECT o.id, o.status, o.total FROM orders o WHERE o.customer_id = ? AND o.created_at > ? " +
			"AND o.status IN ('paid', 'shipped') ORDER BY o.created_at DESC LIMIT 1 FOR UPDATE /* batch "},
		{"read-comment-hint", "/* rwshard:max_lag=1s */ SELECT o.id, o.status, o.total, c.name FROM orders o " +
			"JOIN customers c ON c.id = o.customer_id WHERE o.customer_id = ? AND o.created_at > ? LIMIT "},
		{"multi-statement", "SELECT o.id, o.status FROM orders o WHERE o.customer_id = ? AND o.created_at > ?; " +
			"SELECT c.name, c.email FROM customers c WHERE c.id = ? AND c.status = 'active' LIMIT "},
	} {
		suffix := ""
		if strings.HasSuffix(tc.base, "/* batch ") {
			suffix = " */"
		}
		b.Run(tc.name, func(b *testing.B) { benchmarkFirstSight(b, tc.base, suffix) })
	}
}

// First sight: a 200-byte statement the classifier cache has not seen
// (100k distinct texts cycle through a 4096-entry cache: every one misses).
func BenchmarkRouteFirstSight(b *testing.B) {
	benchmarkFirstSight(b, "SELECT o.id, o.status, o.total, c.name FROM orders o JOIN customers c ON c.id = o.customer_id "+
		"WHERE o.customer_id = ? AND o.created_at > ? AND o.status IN ('paid', 'shipped') ORDER BY o.created_at DESC LIMIT ", "")
}

// benchmarkFirstSight routes 100k distinct statements, base + a number +
// suffix, in turn.
func benchmarkFirstSight(b *testing.B, base, suffix string) {
	benchmarkFirstSightOn(b, benchConn(b), base, suffix)
}

func benchmarkFirstSightOn(b *testing.B, c *conn, base, suffix string) {
	qs := make([]string, 100_000)
	for i := range qs {
		qs[i] = base + strconv.Itoa(i) + suffix
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
