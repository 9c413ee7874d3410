package shard

import (
	"strconv"
	"testing"
)

// BenchmarkRouteSingleShard routes a repeated single-shard SELECT by key
// (the statement's analysis is cached after the first call).
func BenchmarkRouteSingleShard(b *testing.B) {
	rules, _ := routeTestRules()
	r := NewRouter(rules)
	const sql = "SELECT order_id, user_id, status FROM t_order WHERE user_id = ? AND order_id = ?"
	args := routeArgs(int64(7), int64(42))
	if _, err := r.Route(sql, args); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rt, err := r.Route(sql, args)
		if err != nil || len(rt.Units) != 1 {
			b.Fatal(err)
		}
	}
}

// BenchmarkRouteInsertGeneratedKey routes a repeated one-row INSERT that
// gets a generated key.
func BenchmarkRouteInsertGeneratedKey(b *testing.B) {
	rules, _ := routeTestRules()
	r := NewRouter(rules)
	const sql = "INSERT INTO t_order (user_id, status, note) VALUES (?, ?, ?)"
	args := routeArgs(int64(7), "new", "hello")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Route(sql, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRouteMultiShardLimit routes a repeated ORDER BY … LIMIT over
// the eight nodes.
func BenchmarkRouteMultiShardLimit(b *testing.B) {
	rules, _ := routeTestRules()
	r := NewRouter(rules)
	const sql = "SELECT order_id, status FROM t_order WHERE status = ? ORDER BY created DESC LIMIT ?, ?"
	args := routeArgs("new", int64(20), int64(10))
	b.ReportAllocs()
	for b.Loop() {
		rt, err := r.Route(sql, args)
		if err != nil || len(rt.Units) != 8 {
			b.Fatal(err)
		}
	}
}

// BenchmarkRouteFirstSight routes a ~200-byte statement never seen
// before: parse, analysis, templates, then the route.
func BenchmarkRouteFirstSight(b *testing.B) {
	rules, _ := routeTestRules()
	r := NewRouter(rules)
	args := routeArgs(int64(7), int64(42))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		sql := "SELECT o.order_id, o.status, o.created, i.qty FROM t_order o JOIN t_order_item i ON i.order_id = o.order_id " +
			"WHERE o.user_id = ? AND o.order_id = ? AND o.note <> '" + strconv.Itoa(i) + "' ORDER BY o.created DESC"
		if _, err := r.Route(sql, args); err != nil {
			b.Fatal(err)
		}
	}
}
