package route

import "testing"

// firstSightSQL is a typical 200-byte read: a join, a filter, an order and
// a limit.
const firstSightSQL = "SELECT o.id, o.status, o.total, c.name, c.email FROM orders AS o " +
	"JOIN customers AS c ON c.id = o.customer_id WHERE o.created_at >= ? AND o.status IN (?, ?) " +
	"ORDER BY o.created_at DESC LIMIT 50"

var benchClass Class

// BenchmarkClassifyCached is the routing path for a repeated statement.
// Budget: at most 100 ns and no allocation.
func BenchmarkClassifyCached(b *testing.B) {
	c := NewClassifier(0)
	if _, err := c.Classify(firstSightSQL); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		benchClass, _ = c.Classify(firstSightSQL)
	}
}

// BenchmarkClassifyFirstSight is the uncached classification of a
// 200-byte statement. Budget: at most 2 µs, ideally no allocation.
func BenchmarkClassifyFirstSight(b *testing.B) {
	b.SetBytes(int64(len(firstSightSQL)))
	b.ReportAllocs()
	for b.Loop() {
		benchClass, _ = Classify(firstSightSQL)
	}
}
