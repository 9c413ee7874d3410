package rwshard

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withPoolRules configures benchConnWith's three nodes with a reporting
// pool (replica2) and rules of both kinds.
func withPoolRules(c *Config) {
	c.Pools = map[string][]string{"reporting": {"replica2"}}
	c.Backend.DBName = "shop"
	c.PoolRules = []PoolRule{
		{Pool: "reporting", Tables: []string{"report_*", "audit.*"}},
		{Pool: "reporting", Match: `(?i)^\s*/\* export \*/`},
	}
}

func TestPoolRuleTables(t *testing.T) {
	c := benchConnWith(t, func(c *Config) {
		withPoolRules(c)
		c.PoolRules = append(c.PoolRules, PoolRule{Pool: "reporting", Tables: []string{"shop.big_archive", "*.Ledger"}})
	})
	ctx := context.Background()
	for _, tc := range []struct {
		sql  string
		rule int
	}{
		{"SELECT * FROM report_daily", 1},
		{"SELECT * FROM orders o JOIN Report_Weekly w ON w.id = o.id", 1},
		{"SELECT * FROM audit.events", 1},
		{"SELECT * FROM `audit`.`login`", 1},
		{"SELECT * FROM events", 0}, // unqualified: schema shop, not audit
		{"SELECT * FROM shop.report_x", 1},
		{"SELECT * FROM reporting", 0},           // report_* wants the underscore
		{"/* export */ SELECT * FROM orders", 2}, // the regexp, comments included
		{"SELECT * FROM orders /* export */", 0}, // anchored at the start
		{"SELECT * FROM big_archive", 3},         // unqualified in the DSN's database
		{"SELECT * FROM other.big_archive", 0},   // another schema
		{"SELECT * FROM x.ledger", 3},            // *.ledger, no case
		{"SELECT * FROM orders", 0},
		{"UPDATE report_daily SET n = 1", 0},         // a write: no rule
		{"SELECT * FROM report_daily FOR UPDATE", 0}, // a locking read: primary
		{"SELECT EXTRACT(YEAR FROM report_day) FROM orders", 0},
	} {
		var r routed
		_, err := c.route(ctx, tc.sql, nil, &r)
		require.NoError(t, err, tc.sql)
		h := r.h
		assert.Equal(t, tc.rule, c.rule, tc.sql)
		if tc.rule > 0 {
			assert.Equal(t, "reporting", h.Pool, tc.sql)
		} else {
			assert.Equal(t, "", h.Pool, tc.sql)
		}
	}
}

// The rule decision is cached with the classification: routing a read a
// rule matched again costs no table scan and no regexp, which would
// allocate (route.Tables does).
func TestPoolRuleCached(t *testing.T) {
	c := benchConnWith(t, withPoolRules)
	ctx := context.Background()
	for _, q := range []string{"SELECT * FROM report_daily WHERE day = ?", "/* export */ SELECT * FROM orders", "SELECT * FROM orders"} {
		var r routed
		_, err := c.route(ctx, q, nil, &r)
		require.NoError(t, err)
		n := testing.AllocsPerRun(100, func() { _, _ = c.route(ctx, q, nil, &r) })
		assert.Zero(t, n, "allocations routing %q again", q)
	}
	// A first sight does scan: the zero above is the cache's.
	firstSight := func(c *conn) float64 {
		i := 0
		return testing.AllocsPerRun(10, func() {
			i++
			var r routed
			_, _ = c.route(ctx, "SELECT * FROM report_daily WHERE day = "+strconv.Itoa(i), nil, &r)
		})
	}
	with, without := firstSight(c), firstSight(benchConn(t))
	assert.True(t, with > without, "a first sight scans the tables: %v allocations, %v without rules", with, without)
}

func TestPoolRuleErrors(t *testing.T) {
	for _, tc := range []struct {
		rules []PoolRule
		want  string
	}{
		{[]PoolRule{{Pool: "nightly", Tables: []string{"t"}}}, `config rwshard.poolTables="nightly": rule 1: no pool "nightly"; pools: reporting`},
		{[]PoolRule{{Pool: "reporting"}}, "rule 1: give tables, a match, or both"},
		{[]PoolRule{{Pool: "reporting", Tables: []string{"t"}}, {Pool: "reporting", Tables: []string{""}}}, `rwshard.poolTables="reporting:": rule 2: empty table name`},
		{[]PoolRule{{Pool: "reporting", Tables: []string{"audit."}}}, "empty table name"},
		{[]PoolRule{{Pool: "reporting", Tables: []string{"a.b.c"}}}, "not a table"},
		{[]PoolRule{{Pool: "reporting", Tables: []string{"`t`"}}}, "not a table"},
		{[]PoolRule{{Pool: "reporting", Tables: []string{"[t"}}}, "not a table"},
		{[]PoolRule{{Pool: "reporting", Match: "(unclosed"}}, `config Config.PoolRules[0].Match="(unclosed": error parsing regexp`},
	} {
		cfg := NewConfig()
		cfg.Nodes = []Node{{Addr: "10.0.0.1:3306"}, {Addr: "10.0.0.2:3306"}, {Addr: "10.0.0.3:3306"}}
		cfg.Pools = map[string][]string{"reporting": {"replica2"}}
		cfg.PoolRules = tc.rules
		_, err := NewConnector(cfg)
		if assert.Error(t, err, "%v", tc.rules) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
}

// The cost of pool rules on the routing path: a repeated statement no
// rule matches, and one a rule matches, with rules configured and
// without; and first sights (every text new) with rules, where the table
// scan and the regexp run once per text.
func BenchmarkPoolRules(b *testing.B) {
	const online = "SELECT id, status, total FROM orders WHERE customer_id = ? AND created_at > ? ORDER BY created_at DESC LIMIT 20"
	const report = "SELECT day, SUM(total) FROM report_daily r JOIN orders o ON o.day = r.day WHERE r.day > ? GROUP BY day"
	b.Run("none/online", func(b *testing.B) { benchmarkRouteOn(b, benchConn(b), context.Background(), online) })
	b.Run("rules/online", func(b *testing.B) {
		benchmarkRouteOn(b, benchConnWith(b, withPoolRules), context.Background(), online)
	})
	b.Run("rules/report", func(b *testing.B) {
		benchmarkRouteOn(b, benchConnWith(b, withPoolRules), context.Background(), report)
	})
	b.Run("none/first-sight", func(b *testing.B) { benchmarkFirstSightOn(b, benchConn(b), online+" -- ", "") })
	b.Run("rules/first-sight", func(b *testing.B) {
		benchmarkFirstSightOn(b, benchConnWith(b, withPoolRules), online+" -- ", "")
	})
}
