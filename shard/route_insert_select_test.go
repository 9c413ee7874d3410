package shard

import "testing"

// INSERT … SELECT into a sharded table (ShardingSphere routes it when the
// source is the target itself, a binding table or a broadcast table): one
// unit per data node the SELECT's conditions choose, both sides renamed to
// that node's tables; refused where a row could land on the wrong node.
func TestRouteInsertSelect(t *testing.T) {
	runRouteCases(t, []routeCase{
		{
			name: "from itself, by key", write: true, reason: ReasonSingleShard,
			sql:  "INSERT INTO t_order (order_id, user_id, status) SELECT order_id, user_id, status FROM t_order WHERE user_id = ? AND order_id = ?",
			args: []any{int64(1), int64(2)},
			units: []unitWant{{"ds_1", "insert into t_order_2(order_id, user_id, `status`) select order_id, user_id, `status` from t_order_2 where user_id = ? and order_id = ?",
				[]any{int64(1), int64(2)}}},
		},
		{
			name: "from a binding table, qualified columns, ON DUPLICATE KEY UPDATE", write: true, reason: ReasonSingleShard,
			sql: "INSERT INTO t_order (order_id, user_id, status) SELECT i.order_id, i.user_id, 'copied' FROM t_order_item i WHERE i.user_id = 2 AND i.order_id = 3 " +
				"ON DUPLICATE KEY UPDATE status = VALUES(status)",
			units: []unitWant{{"ds_0", "insert into t_order_3(order_id, user_id, `status`) select i.order_id, i.user_id, 'copied' from t_order_item_3 as i where i.user_id = 2 and i.order_id = 3 " +
				"on duplicate key update `status` = values(`status`)", nil}},
		},
		{
			name: "several nodes: each copies its own rows", write: true, reason: ReasonMultiShard,
			sql: "INSERT INTO t_order (order_id, user_id) SELECT order_id, user_id FROM t_order WHERE user_id IN (1, 2) AND order_id = 5",
			units: []unitWant{
				{"ds_0", "insert into t_order_1(order_id, user_id) select order_id, user_id from t_order_1 where user_id in (1, 2) and order_id = 5", nil},
				{"ds_1", "insert into t_order_1(order_id, user_id) select order_id, user_id from t_order_1 where user_id in (1, 2) and order_id = 5", nil},
			},
		},
		{
			name: "a broadcast table joined in", write: true, reason: ReasonSingleShard,
			sql:   "INSERT INTO t_order (order_id, user_id, status) SELECT o.order_id, o.user_id, d.v FROM t_order o JOIN t_dict d ON d.k = o.status WHERE o.user_id = 1 AND o.order_id = 1",
			units: []unitWant{{"ds_1", "insert into t_order_1(order_id, user_id, `status`) select o.order_id, o.user_id, d.v from t_order_1 as o join t_dict as d on d.k = o.`status` where o.user_id = 1 and o.order_id = 1", nil}},
		},
		{
			name: "a sharding column fed by something else", err: ErrUnsupported,
			sql:    "INSERT INTO t_order (order_id, user_id) SELECT order_id, user_id + 1 FROM t_order WHERE user_id = 1 AND order_id = 1",
			errHas: []string{"sharding column user_id", "user_id + 1"},
		},
		{
			name: "sharding columns swapped", err: ErrUnsupported,
			sql:    "INSERT INTO t_order (order_id, user_id) SELECT user_id, order_id FROM t_order WHERE user_id = 1 AND order_id = 1",
			errHas: []string{"sharding column"},
		},
		{
			name: "no column list, without a column source", err: ErrUnsupported,
			sql:    "INSERT INTO t_order SELECT order_id, user_id, note FROM t_order WHERE user_id = 1 AND order_id = 1",
			errHas: []string{"needs the table's columns", "RouteContext"},
		},
		// Without a column list (Router.RouteContext): the table's
		// columns, then as with the list.
		{
			name: "no column list: the table's columns", write: true, reason: ReasonSingleShard, cols: true,
			sql:  "INSERT INTO t_order SELECT order_id, user_id, note FROM t_order WHERE user_id = ? AND order_id = ? ON DUPLICATE KEY UPDATE note = ?",
			args: []any{int64(1), int64(2), "n"},
			units: []unitWant{{"ds_1", "insert into t_order_2(order_id, user_id, note) select order_id, user_id, note from t_order_2 where user_id = ? and order_id = ? on duplicate key update note = ?",
				[]any{int64(1), int64(2), "n"}}},
		},
		{
			name: "REPLACE without a column list from a binding table, several nodes", write: true, reason: ReasonMultiShard, cols: true,
			sql: "REPLACE INTO t_order SELECT i.order_id, i.user_id, 'copied' FROM t_order_item i WHERE i.user_id IN (2, 3) AND i.order_id = 5",
			units: []unitWant{
				{"ds_0", "replace into t_order_1(order_id, user_id, note) select i.order_id, i.user_id, 'copied' from t_order_item_1 as i where i.user_id in (2, 3) and i.order_id = 5", nil},
				{"ds_1", "replace into t_order_1(order_id, user_id, note) select i.order_id, i.user_id, 'copied' from t_order_item_1 as i where i.user_id in (2, 3) and i.order_id = 5", nil},
			},
		},
		{
			name: "no column list: a sharding column fed by something else", err: ErrUnsupported, cols: true,
			sql:    "INSERT INTO t_order SELECT order_id, user_id + 1, note FROM t_order WHERE user_id = 1 AND order_id = 1",
			errHas: []string{"sharding column user_id", "user_id + 1"},
		},
		{
			name: "no column list: columns swapped", err: ErrUnsupported, cols: true,
			sql:    "INSERT INTO t_order SELECT user_id, order_id, note FROM t_order WHERE user_id = 1 AND order_id = 1",
			errHas: []string{"sharding column"},
		},
		{
			name: "no column list: one value fewer leaves the generated key out", err: ErrUnsupported, cols: true,
			sql:    "INSERT INTO t_order SELECT user_id, note FROM t_order WHERE user_id = 1",
			errHas: []string{"generated key column order_id"},
		},
		{
			name: "no column list: another count", err: ErrUnsupported, cols: true,
			sql:    "INSERT INTO t_order SELECT order_id FROM t_order WHERE user_id = 1 AND order_id = 1",
			errHas: []string{"1 values per row, table t_order has 3 columns (order_id, user_id, note)"},
		},
		{
			name: "no column list: SELECT *", err: ErrUnsupported, cols: true,
			sql:    "INSERT INTO t_order SELECT * FROM t_order WHERE user_id = 1 AND order_id = 1",
			errHas: []string{"SELECT *", "name the columns"},
		},
		{
			name: "no column list: no sharding condition", err: ErrNoShardKey, cols: true,
			sql: "INSERT INTO t_order SELECT order_id, user_id, note FROM t_order WHERE note = 'x'",
		},
		{
			name: "the generated key left out", err: ErrUnsupported,
			sql:    "INSERT INTO t_order (user_id, status) SELECT user_id, status FROM t_order WHERE user_id = 1",
			errHas: []string{"generated key column order_id"},
		},
		{
			name: "from a table not bound", err: ErrCrossShardJoin,
			sql: "INSERT INTO t_order (order_id, user_id) SELECT user_id, user_id FROM t_account WHERE user_id = 1",
		},
		{
			name: "no sharding condition", err: ErrNoShardKey,
			sql: "INSERT INTO t_order (order_id, user_id) SELECT order_id, user_id FROM t_order WHERE status = 'x'",
		},
		{
			name: "LIMIT over several nodes", err: ErrUnsupported,
			sql:    "INSERT INTO t_order (order_id, user_id) SELECT order_id, user_id FROM t_order WHERE user_id IN (1, 2) AND order_id = 5 LIMIT 1",
			errHas: []string{"LIMIT"},
		},
		{
			name: "a column count that does not match", err: ErrUnsupported,
			sql:    "INSERT INTO t_order (order_id, user_id, status) SELECT order_id, user_id FROM t_order WHERE user_id = 1 AND order_id = 1",
			errHas: []string{"2 values for 3 columns"},
		},
		{
			name: "into a table that is not sharded", err: ErrUnsupported,
			sql:    "INSERT INTO t_user (id) SELECT order_id FROM t_order WHERE user_id = 1 AND order_id = 1",
			errHas: []string{"not sharded"},
		},
	})
}
