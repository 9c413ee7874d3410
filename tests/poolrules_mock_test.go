package rwshard_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/hint"
)

// mockPoolRules: replica2 is the reporting pool, replica3 the batch pool;
// reads of report tables or the audit schema go to reporting, reads
// tagged /* export */ to batch, other reads to replica1.
func mockPoolRules(c *rwshard.Config) {
	c.Pools = map[string][]string{"reporting": {"replica2"}, "batch": {"replica3"}}
	c.PoolRules = []rwshard.PoolRule{
		{Pool: "reporting", Tables: []string{"report_*", "audit.*"}},
		{Pool: "batch", Match: `(?i)^/\* export \*/`},
	}
}

// Pool rules choose among replicas only, and a pool hint beats them.
func TestMockPoolRulesRoute(t *testing.T) {
	withPool := func(name string) func(context.Context) context.Context {
		return func(ctx context.Context) context.Context { return hint.Pool(ctx, name) }
	}
	tests := []struct {
		name string
		ctx  func(context.Context) context.Context
		sql  string
		exec bool
		want string
	}{
		{"table rule", nil, "SELECT day, total FROM report_daily", false, "replica2"},
		{"schema rule", nil, "SELECT * FROM audit.events e JOIN users u ON u.id = e.uid", false, "replica2"},
		{"regexp rule", nil, "/* export */ SELECT * FROM orders", false, "replica3"},
		{"no rule", nil, "SELECT * FROM orders", false, "replica1"},
		{"no rule: another schema's table", nil, "SELECT * FROM events", false, "replica1"},
		{"context pool hint beats the rule", withPool("batch"), "SELECT day FROM report_daily", false, "replica3"},
		{"comment pool hint beats the rule", nil, "/* rwshard:pool=batch */ SELECT day FROM report_daily", false, "replica3"},
		{"node hint beats the rule", mockNodeHint("replica1"), "SELECT day FROM report_daily", false, "replica1"},
		{"primary hint beats the rule", hint.Primary, "SELECT day FROM report_daily", false, "primary"},
		{"replica hint: the rule still chooses", hint.Replica, "SELECT day FROM report_daily", false, "replica2"},
		{"locking read stays on the primary", nil, "SELECT day FROM report_daily FOR UPDATE", false, "primary"},
		{"session read stays on the primary", nil, "SELECT LAST_INSERT_ID() FROM report_daily", false, "primary"},
		{"write stays on the primary", nil, "INSERT INTO report_daily (day) SELECT day FROM audit.days", true, "primary"},
		{"write matched by the regexp stays", nil, "/* export */ DELETE FROM orders WHERE id = 1", true, "primary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := newMockCluster(t, 3, mockPoolRules)
			for range 3 { // the cached decision routes alike
				mc.node(tt.want).expect(tt.sql, tt.exec)
				mc.ranOn(mockCtx(tt.ctx), mc.db, tt.want, tt.sql, tt.exec)
			}
			mc.verify()
		})
	}
}

// In a transaction and on a pinned session a rule moves nothing.
func TestMockPoolRulesBoundToPrimary(t *testing.T) {
	mc := newMockCluster(t, 3, mockPoolRules)
	ctx := context.Background()
	const q = "SELECT day FROM report_daily"
	p := mc.primary()
	p.mock.ExpectBegin()
	p.expectRead(q)
	p.mock.ExpectCommit()
	tx, err := mc.db.BeginTx(ctx, nil)
	require.NoError(t, err)
	mc.ranOn(ctx, tx, "primary", q, false)
	require.NoError(t, tx.Commit())

	p.expectWrite("SET @x = 1")
	p.expectRead(q)
	conn := mc.conn(ctx, "SET @x = 1")
	mc.ranOn(ctx, conn, "primary", q, false)
	mc.verify()
}

// The route log and Explain name the rule that chose the pool, and only
// when a rule did.
func TestMockPoolRulesLogAndExplain(t *testing.T) {
	var buf bytes.Buffer
	mc := newMockCluster(t, 3, func(c *rwshard.Config) {
		mockPoolRules(c)
		c.RouteLog = true
		c.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	})
	ctx := context.Background()
	const q = "SELECT day FROM report_daily"
	mc.node("replica2").expectRead(q)
	mc.ranOn(ctx, mc.db, "replica2", q, false)
	assert.Contains(t, buf.String(), `pool=reporting rule="1: tables report_*|audit.*"`)

	buf.Reset()
	mc.node("replica2").expectRead(q)
	mc.ranOn(hint.Pool(ctx, "reporting"), mc.db, "replica2", q, false)
	assert.Contains(t, buf.String(), "pool=reporting")
	assert.NotContains(t, buf.String(), "rule=", "a hint chose the pool, not a rule")

	p, err := rwshard.Explain(ctx, mc.db, "/* export */ SELECT * FROM orders")
	require.NoError(t, err)
	assert.Equal(t, []string{"replica3"}, p.Targets)
	assert.Equal(t, "batch", p.Pool)
	assert.Equal(t, `2: match "(?i)^/\\* export \\*/"`, p.PoolRule)
	assert.Empty(t, p.Hint, "no hint applied")
	assert.Contains(t, p.String(), `pool: batch (rule 2: match "(?i)^/\\* export \\*/")`)

	p, err = rwshard.Explain(hint.Pool(ctx, "reporting"), mc.db, "/* export */ SELECT * FROM orders")
	require.NoError(t, err)
	assert.Equal(t, "reporting", p.Pool)
	assert.Empty(t, p.PoolRule)
	assert.Equal(t, "context: pool=reporting", p.Hint)
	mc.verify()
}
