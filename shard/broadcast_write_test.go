package shard

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func allowBroadcastWrites(r *Rules) { r.AllowBroadcastWrites = true }

func allowBroadcastWritesOf(tables ...string) func(*Rules) {
	return func(r *Rules) {
		for _, t := range tables {
			r.Tables[t].AllowBroadcastWrites = true
		}
	}
}

// routeEveryAccount lists the two t_account units of sql.
func routeEveryAccount(sql string, args ...any) []unitWant {
	return []unitWant{{"ds_0", sql, args}, {"ds_1", sql, args}}
}

// Writes without shard key, with AllowBroadcastWrites: one unit per data
// node of the table written, all of them to apply together (Atomic).
// Without it, or for another table, the refusal is unchanged.
func TestRouteBroadcastWrites(t *testing.T) {
	cases := []struct {
		routeCase
		atomic bool
	}{
		{routeCase: routeCase{
			name: "UPDATE, rules-wide", rules: allowBroadcastWrites, write: true, reason: ReasonAllShardsWrite,
			sql: "UPDATE t_order SET status = ? WHERE status = ?", args: []any{int64(1), int64(0)},
			units: routeEvery8("update %s set `status` = ? where `status` = ?", int64(1), int64(0)),
		}, atomic: true},
		{routeCase: routeCase{
			name: "DELETE, rules-wide, qualified with a database", rules: allowBroadcastWrites, write: true, reason: ReasonAllShardsWrite,
			sql:   "DELETE FROM logic_db.t_order WHERE status = 'x'",
			units: routeEvery8("delete from %s where `status` = 'x'"),
		}, atomic: true},
		{routeCase: routeCase{
			name: "UPDATE with the key in one OR branch only", rules: allowBroadcastWritesOf("t_order"), write: true, reason: ReasonAllShardsWrite,
			sql:   "UPDATE t_order SET status = 1 WHERE user_id = 1 OR status = 0",
			units: routeEvery8("update %s set `status` = 1 where user_id = 1 or `status` = 0"),
		}, atomic: true},
		{routeCase: routeCase{
			name: "DELETE of a table with the option", rules: allowBroadcastWritesOf("t_account"), write: true, reason: ReasonAllShardsWrite,
			sql: "DELETE FROM t_account WHERE status = ?", args: []any{"old"},
			units: routeEveryAccount("delete from t_account where `status` = ?", "old"),
		}, atomic: true},
		{routeCase: routeCase{
			name: "INSERT … SELECT from itself: each node copies its own rows", rules: allowBroadcastWritesOf("t_order"), write: true, reason: ReasonAllShardsWrite,
			sql:   "INSERT INTO t_order (order_id, user_id, status) SELECT order_id, user_id, 'copy' FROM t_order WHERE status = 'x'",
			units: routeEvery8("insert into %s(order_id, user_id, `status`) select order_id, user_id, 'copy' from %s where `status` = 'x'"),
		}, atomic: true},
		{routeCase: routeCase{
			name: "INSERT … SELECT from a binding table, without a column list", rules: allowBroadcastWritesOf("t_order"), write: true,
			reason: ReasonAllShardsWrite, cols: true,
			sql: "INSERT INTO t_order SELECT order_id, user_id, 'n' FROM t_order_item WHERE qty > 1",
			units: func() []unitWant {
				u := routeEvery8("insert into %s(order_id, user_id, note) select order_id, user_id, 'n' from %s where qty > 1")
				for i := range u { // the second %s is the paired item table
					j := strings.LastIndex(u[i].sql, "t_order_")
					u[i].sql = u[i].sql[:j] + "t_order_item_" + u[i].sql[j+len("t_order_"):]
				}
				return u
			}(),
		}, atomic: true},

		// With a key the option changes nothing: not every node, not atomic.
		{routeCase: routeCase{
			name: "UPDATE by key", rules: allowBroadcastWrites, write: true, reason: ReasonSingleShard,
			sql:   "UPDATE t_order SET status = 1 WHERE user_id = 1 AND order_id = 2",
			units: []unitWant{{"ds_1", "update t_order_2 set `status` = 1 where user_id = 1 and order_id = 2", nil}},
		}},
		{routeCase: routeCase{
			name: "DELETE by key over two nodes", rules: allowBroadcastWrites, write: true, reason: ReasonMultiShard,
			sql: "DELETE FROM t_account WHERE user_id IN (1, 2)",
			units: []unitWant{{"ds_0", "delete from t_account where user_id in (1, 2)", nil},
				{"ds_1", "delete from t_account where user_id in (1, 2)", nil}},
		}},

		// Refusals, with the option or without.
		{routeCase: routeCase{
			name: "no option: UPDATE refused", sql: "UPDATE t_order SET status = 1 WHERE status = 0",
			err: ErrNoShardKey, errHas: []string{"table t_order", "column user_id, order_id"},
		}},
		{routeCase: routeCase{
			name: "no option: DELETE refused", sql: "DELETE FROM t_account WHERE status = 0",
			err: ErrNoShardKey, errHas: []string{"table t_account", "column user_id"},
		}},
		{routeCase: routeCase{
			name: "another table's option", rules: allowBroadcastWritesOf("t_order"),
			sql: "DELETE FROM t_order_item WHERE qty = 0", err: ErrNoShardKey, errHas: []string{"table t_order_item"},
		}},
		{routeCase: routeCase{
			name: "the source's option does not allow writing the target", rules: allowBroadcastWritesOf("t_order_item"),
			sql: "INSERT INTO t_order (order_id, user_id) SELECT order_id, user_id FROM t_order_item WHERE qty = 0",
			err: ErrNoShardKey, errHas: []string{"table t_order"},
		}},
		{routeCase: routeCase{
			name: "UPDATE … LIMIT: each node would apply its own", rules: allowBroadcastWrites,
			sql: "UPDATE t_order SET status = 1 WHERE status = 0 LIMIT 10", err: ErrUnsupported, errHas: []string{"LIMIT", "8 shards"},
		}},
		{routeCase: routeCase{
			name: "INSERT … SELECT … LIMIT", rules: allowBroadcastWrites,
			sql: "INSERT INTO t_order (order_id, user_id) SELECT order_id, user_id FROM t_order WHERE status = 0 LIMIT 1, 2",
			err: ErrUnsupported, errHas: []string{"LIMIT"},
		}},
		{routeCase: routeCase{
			name: "INSERT … SELECT whose rows would change nodes", rules: allowBroadcastWrites,
			sql: "INSERT INTO t_order (order_id, user_id) SELECT order_id, user_id + 1 FROM t_order WHERE status = 0",
			err: ErrUnsupported, errHas: []string{"sharding column user_id"},
		}},
		{routeCase: routeCase{
			name: "UPDATE of the sharding column", rules: allowBroadcastWrites,
			sql: "UPDATE t_order SET user_id = 3 WHERE status = 0", err: ErrShardKeyUpdate, errHas: []string{"column user_id"},
		}},
		{routeCase: routeCase{
			name: "a subquery over other nodes", rules: allowBroadcastWrites,
			sql: "DELETE FROM t_order WHERE status IN (SELECT status FROM t_order_item WHERE user_id = 1)", err: ErrUnsupported,
			errHas: []string{"t_order_item"},
		}},
	}
	for _, c := range cases {
		runRouteCases(t, []routeCase{c.routeCase})
		if c.err != nil {
			continue
		}
		rules, _ := routeTestRules()
		if c.rules != nil {
			c.rules(rules)
		}
		rt, err := NewRouter(rules).RouteContext(context.Background(), c.sql, routeArgs(c.args...), testColumns)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.atomic, rt.Atomic, "%s: Atomic", c.name)
	}

	// A read without key stays a read of every node.
	rules, _ := routeTestRules()
	rules.AllowBroadcastWrites = true
	rt, err := NewRouter(rules).Route("SELECT note FROM t_account WHERE status = 1", nil)
	require.NoError(t, err)
	assert.Equal(t, ReasonAllShards, rt.Reason)
	assert.False(t, rt.Write)
	assert.False(t, rt.Atomic)
	assert.Len(t, rt.Units, 2)
}

// The refusal without the option is a *RouteError matching ErrNoShardKey
// and nothing else, as before the option existed.
func TestRouteBroadcastWritesDefault(t *testing.T) {
	rules, _ := routeTestRules()
	r := NewRouter(rules)
	for _, sql := range []string{
		"UPDATE t_order SET status = 1 WHERE status = 0",
		"DELETE FROM t_order",
		"INSERT INTO t_order (order_id, user_id) SELECT order_id, user_id FROM t_order WHERE status = 'x'",
	} {
		_, err := r.Route(sql, nil)
		require.Error(t, err, sql)
		var re *RouteError
		require.ErrorAs(t, err, &re, sql)
		assert.Equal(t, "t_order", re.Table, sql)
		assert.ErrorIs(t, err, ErrNoShardKey, sql)
		assert.False(t, errors.Is(err, ErrUnsupported), sql)
	}
}
