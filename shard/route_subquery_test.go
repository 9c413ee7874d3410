package shard

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unbound takes t_order out of its binding group.
func unbound(r *Rules) { r.BindingGroups = nil }

// Subqueries and derived tables over sharded tables: routed when linked
// with the query around them by the binding column (any number of nodes)
// or when they and the statement resolve to one node; refused, naming the
// table, when their rows could be elsewhere.
func TestRouteSubqueries(t *testing.T) {
	runRouteCases(t, []routeCase{
		// Linked: IN on the pairing column.
		{
			name: "IN over a binding table, keyed: one node", reason: ReasonSingleShard,
			sql:  "SELECT * FROM t_order WHERE order_id IN (SELECT order_id FROM t_order_item WHERE user_id = ? AND order_id = ?)",
			args: []any{int64(1), int64(2)},
			units: []unitWant{{"ds_1", "select * from t_order_2 where order_id in (select order_id from t_order_item_2 where user_id = ? and order_id = ?)",
				[]any{int64(1), int64(2)}}},
		},
		{
			name: "IN over a binding table: each node its own rows", reason: ReasonMultiShard,
			sql: "SELECT order_id FROM t_order WHERE order_id IN (SELECT order_id FROM t_order_item WHERE qty > 1) AND user_id = 1 ORDER BY order_id",
			units: []unitWant{
				{"ds_1", "select order_id, WEIGHT(order_id) from t_order_0 where order_id in (select order_id from t_order_item_0 where qty > 1) and user_id = 1 order by order_id asc", nil},
				{"ds_1", "select order_id, WEIGHT(order_id) from t_order_1 where order_id in (select order_id from t_order_item_1 where qty > 1) and user_id = 1 order by order_id asc", nil},
				{"ds_1", "select order_id, WEIGHT(order_id) from t_order_2 where order_id in (select order_id from t_order_item_2 where qty > 1) and user_id = 1 order by order_id asc", nil},
				{"ds_1", "select order_id, WEIGHT(order_id) from t_order_3 where order_id in (select order_id from t_order_item_3 where qty > 1) and user_id = 1 order by order_id asc", nil},
			},
			merge: &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 0}}, Limit: noLimit, Visible: 1, Weights: []weight{{Column: 0, Weight: 1}}},
		},
		{
			name: "one table placed by one column: IN on it", reason: ReasonAllShards,
			sql: "SELECT * FROM t_account WHERE user_id IN (SELECT a.user_id FROM t_account a WHERE a.status = 'x')",
			units: []unitWant{
				{"ds_0", "select * from t_account where user_id in (select a.user_id from t_account as a where a.`status` = 'x')", nil},
				{"ds_1", "select * from t_account where user_id in (select a.user_id from t_account as a where a.`status` = 'x')", nil},
			},
			merge: &mergePlan{Limit: noLimit},
		},
		// Linked: correlated on the pairing column.
		{
			name: "EXISTS correlated on the binding column, keyed", reason: ReasonSingleShard,
			sql:   "SELECT o.order_id FROM t_order o WHERE o.user_id = 1 AND o.order_id = 2 AND EXISTS (SELECT 1 FROM t_order_item i WHERE i.order_id = o.order_id)",
			units: []unitWant{{"ds_1", "select o.order_id from t_order_2 as o where o.user_id = 1 and o.order_id = 2 and exists (select 1 from t_order_item_2 as i where i.order_id = o.order_id)", nil}},
		},
		{
			name: "EXISTS narrows by the subquery's keys", reason: ReasonSingleShard,
			sql:   "SELECT o.order_id FROM t_order o WHERE EXISTS (SELECT 1 FROM t_order_item i WHERE o.order_id = i.order_id AND i.user_id = 0 AND i.order_id = 3)",
			units: []unitWant{{"ds_0", "select o.order_id from t_order_3 as o where exists (select 1 from t_order_item_3 as i where o.order_id = i.order_id and i.user_id = 0 and i.order_id = 3)", nil}},
		},
		{
			name: "NOT EXISTS correlated: each node its own rows, not narrowed", reason: ReasonMultiShard,
			sql: "SELECT o.order_id FROM t_order o WHERE o.user_id = 0 AND o.order_id IN (1, 2) AND NOT EXISTS (SELECT 1 FROM t_order_item i WHERE i.order_id = o.order_id AND i.order_id = 3)",
			units: []unitWant{
				{"ds_0", "select o.order_id from t_order_1 as o where o.user_id = 0 and o.order_id in (1, 2) and not exists (select 1 from t_order_item_1 as i where i.order_id = o.order_id and i.order_id = 3)", nil},
				{"ds_0", "select o.order_id from t_order_2 as o where o.user_id = 0 and o.order_id in (1, 2) and not exists (select 1 from t_order_item_2 as i where i.order_id = o.order_id and i.order_id = 3)", nil},
			},
			merge: &mergePlan{Limit: noLimit},
		},
		// Pinned: a subquery of its own keys on the statement's node.
		{
			name: "a subquery not linked, on the same node", reason: ReasonSingleShard,
			sql:  "SELECT * FROM t_order o WHERE o.user_id = ? AND o.order_id = ? AND o.status IN (SELECT status FROM t_order_item i WHERE i.user_id = ? AND i.order_id = ?)",
			args: []any{int64(1), int64(2), int64(1), int64(6)},
			units: []unitWant{{"ds_1", "select * from t_order_2 as o where o.user_id = ? and o.order_id = ? and o.`status` in (select `status` from t_order_item_2 as i where i.user_id = ? and i.order_id = ?)",
				[]any{int64(1), int64(2), int64(1), int64(6)}}},
		},
		{
			name: "a broadcast table filtered by a keyed subquery", reason: ReasonSingleShard,
			sql:   "SELECT * FROM t_dict WHERE k IN (SELECT status FROM t_order WHERE user_id = 1 AND order_id = 1)",
			units: []unitWant{{"ds_1", "select * from t_dict where k in (select `status` from t_order_1 where user_id = 1 and order_id = 1)", nil}},
		},
		{
			name: "BETWEEN a keyed scalar subquery", reason: ReasonSingleShard,
			sql:   "SELECT * FROM t_account WHERE user_id = 2 AND amount BETWEEN (SELECT amount FROM t_account WHERE user_id = 4) AND 100",
			units: []unitWant{{"ds_0", "select * from t_account where user_id = 2 and amount between (select amount from t_account where user_id = 4) and 100", nil}},
		},
		// Derived tables.
		{
			name: "a keyed derived table", reason: ReasonSingleShard,
			sql:   "SELECT d.order_id, COUNT(*) FROM (SELECT order_id, user_id FROM t_order WHERE user_id = 1 AND order_id = 2) d GROUP BY d.order_id",
			units: []unitWant{{"ds_1", "select d.order_id, count(*) from (select order_id, user_id from t_order_2 where user_id = 1 and order_id = 2) as d group by d.order_id", nil}},
		},
		{
			name: "the outer conditions reach the derived table through its columns", reason: ReasonSingleShard,
			sql:   "SELECT * FROM (SELECT order_id AS oid, user_id AS uid, status FROM t_order) d WHERE d.uid = 1 AND oid = 3",
			units: []unitWant{{"ds_1", "select * from (select order_id as oid, user_id as uid, `status` from t_order_3) as d where d.uid = 1 and oid = 3", nil}},
		},
		{
			name: "a column list of the derived table", reason: ReasonSingleShard,
			sql:   "SELECT * FROM (SELECT user_id, order_id FROM t_order) AS d (u, o) WHERE u = 0 AND o = 1",
			units: []unitWant{{"ds_0", "select * from (select user_id, order_id from t_order_1) as d(u, o) where u = 0 and o = 1", nil}},
		},
		{
			name: "a derived table of plain rows over several nodes, merged", reason: ReasonMultiShard,
			sql: "SELECT d.status, COUNT(*) FROM (SELECT status FROM t_order WHERE user_id = 1 AND order_id IN (1, 2)) d GROUP BY d.status",
			units: []unitWant{
				{"ds_1", "select d.`status`, count(*), WEIGHT(d.`status`) from (select `status` from t_order_1 where user_id = 1 and order_id in (1, 2)) as d group by d.`status` order by d.`status` asc", nil},
				{"ds_1", "select d.`status`, count(*), WEIGHT(d.`status`) from (select `status` from t_order_2 where user_id = 1 and order_id in (1, 2)) as d group by d.`status` order by d.`status` asc", nil},
			},
			merge: &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 0}}, GroupBy: []int{0}, Aggregates: []aggregate{{Kind: aggCount, Index: 1}}, Limit: noLimit,
				Visible: 2, Weights: []weight{{Column: 0, Weight: 2}}},
		},
		{
			name: "nested: a derived table over an IN of a binding table", reason: ReasonSingleShard,
			sql:   "SELECT * FROM (SELECT order_id, status FROM t_order WHERE user_id = 1 AND order_id = 2 AND status IN (SELECT status FROM t_order_item WHERE user_id = 1 AND order_id = 2)) AS temp",
			units: []unitWant{{"ds_1", "select * from (select order_id, `status` from t_order_2 where user_id = 1 and order_id = 2 and `status` in (select `status` from t_order_item_2 where user_id = 1 and order_id = 2)) as temp", nil}},
		},
		// Writes.
		{
			name: "DELETE … IN over a binding table", write: true, reason: ReasonSingleShard,
			sql:   "DELETE FROM t_order WHERE user_id = 1 AND order_id = 2 AND order_id IN (SELECT order_id FROM t_order_item WHERE qty = 0)",
			units: []unitWant{{"ds_1", "delete from t_order_2 where user_id = 1 and order_id = 2 and order_id in (select order_id from t_order_item_2 where qty = 0)", nil}},
		},
		{
			name: "UPDATE … EXISTS correlated", write: true, reason: ReasonMultiShard,
			sql: "UPDATE t_order o SET o.status = 'has items' WHERE o.user_id = 0 AND o.order_id IN (1, 2) AND EXISTS (SELECT 1 FROM t_order_item i WHERE i.order_id = o.order_id)",
			units: []unitWant{
				{"ds_0", "update t_order_1 as o set o.`status` = 'has items' where o.user_id = 0 and o.order_id in (1, 2) and exists (select 1 from t_order_item_1 as i where i.order_id = o.order_id)", nil},
				{"ds_0", "update t_order_2 as o set o.`status` = 'has items' where o.user_id = 0 and o.order_id in (1, 2) and exists (select 1 from t_order_item_2 as i where i.order_id = o.order_id)", nil},
			},
		},
		{
			name: "INSERT … SELECT from a keyed derived table", write: true, reason: ReasonSingleShard,
			sql:  "INSERT INTO t_order (order_id, user_id, status) SELECT d.order_id, d.user_id, d.status FROM (SELECT order_id, user_id, status FROM t_order_item WHERE user_id = ? AND order_id = ?) d WHERE d.order_id = ?",
			args: []any{int64(1), int64(2), int64(2)},
			units: []unitWant{{"ds_1", "insert into t_order_2(order_id, user_id, `status`) select d.order_id, d.user_id, d.`status` from (select order_id, user_id, `status` from t_order_item_2 where user_id = ? and order_id = ?) as d where d.order_id = ?",
				[]any{int64(1), int64(2), int64(2)}}},
		},
		{
			name: "REPLACE … SELECT without a column list from a derived table", write: true, reason: ReasonSingleShard, cols: true,
			sql:   "REPLACE INTO t_order SELECT t.order_id, t.user_id, t.note FROM (SELECT order_id, user_id, note FROM t_order WHERE user_id = 0 AND order_id = 1) t",
			units: []unitWant{{"ds_0", "replace into t_order_1(order_id, user_id, note) select t.order_id, t.user_id, t.note from (select order_id, user_id, note from t_order_1 where user_id = 0 and order_id = 1) as t", nil}},
		},

		// Refused: the rows could be on other nodes.
		{
			name: "a subquery of another node's keys", err: ErrUnsupported,
			sql:    "SELECT * FROM t_order o WHERE o.user_id = 1 AND o.order_id = 2 AND o.status IN (SELECT status FROM t_order_item i WHERE i.user_id = 1 AND i.order_id = 3)",
			errHas: []string{"subquery or derived table over sharded table t_order_item", "2 data nodes", "table t_order_item"},
		},
		{
			name: "a subquery without keys", err: ErrUnsupported,
			sql:    "SELECT * FROM t_order o WHERE o.user_id = 1 AND o.order_id = 2 AND o.status IN (SELECT status FROM t_order_item i WHERE i.user_id = 1)",
			errHas: []string{"sharded table t_order_item"},
		},
		{
			name: "a statement without keys, a keyed subquery", err: ErrUnsupported,
			sql:    "SELECT * FROM t_order WHERE status IN (SELECT status FROM t_order_item WHERE user_id = 1 AND order_id = 2)",
			errHas: []string{"sharded table t_order_item"},
		},
		{
			name: "correlated on a column that does not pair the tables", err: ErrUnsupported,
			sql:    "SELECT * FROM t_order o WHERE o.user_id = 1 AND EXISTS (SELECT 1 FROM t_order_item i WHERE i.user_id = o.user_id)",
			errHas: []string{"sharded table t_order_item"},
		},
		{
			name: "correlated without a qualifier", err: ErrUnsupported,
			sql:    "SELECT * FROM t_order o WHERE o.user_id = 1 AND EXISTS (SELECT 1 FROM t_order_item i WHERE i.order_id = order_id)",
			errHas: []string{"sharded table t_order_item"},
		},
		{
			name: "NOT IN is not a link (NULL)", err: ErrUnsupported,
			sql:    "SELECT * FROM t_order WHERE user_id = 1 AND order_id NOT IN (SELECT order_id FROM t_order_item WHERE user_id = 1)",
			errHas: []string{"sharded table t_order_item"},
		},
		{
			name: "= of a subquery is not a link", err: ErrUnsupported,
			sql:    "SELECT * FROM t_order WHERE user_id = 1 AND order_id = (SELECT order_id FROM t_order_item WHERE user_id = 1 AND qty = 9)",
			errHas: []string{"sharded table t_order_item"},
		},
		{
			name: "the same table with two sharding columns, not bound", err: ErrUnsupported, rules: unbound,
			sql:    "SELECT * FROM t_order WHERE user_id = 1 AND order_id IN (SELECT o.order_id FROM t_order o WHERE o.status = 'x')",
			errHas: []string{"sharded table t_order"},
		},
		{
			name: "a derived table that groups, over several nodes", err: ErrUnsupported,
			sql:    "SELECT COUNT(*) FROM (SELECT user_id, COUNT(*) AS c FROM t_order GROUP BY user_id) d",
			errHas: []string{"sharded table t_order", "8 data nodes"},
		},
		{
			name: "a derived table with LIMIT, over several nodes", err: ErrUnsupported,
			sql:    "SELECT * FROM (SELECT order_id FROM t_order WHERE user_id = 1 LIMIT 3) d",
			errHas: []string{"sharded table t_order"},
		},
		{
			name: "a derived table joined with a sharded table", err: ErrUnsupported,
			sql:    "SELECT * FROM t_order o JOIN (SELECT order_id FROM t_order_item) d ON d.order_id = o.order_id WHERE o.user_id = 1",
			errHas: []string{"sharded table t_order_item"},
		},
		{
			name: "a derived table joined with a broadcast table: one node only", err: ErrUnsupported,
			sql:    "SELECT * FROM t_dict d LEFT JOIN (SELECT status FROM t_order WHERE user_id = 1) o ON o.status = d.k",
			errHas: []string{"sharded table t_order", "4 data nodes"},
		},
		{
			name: "a derived table joined with a broadcast table, keyed", reason: ReasonSingleShard,
			sql:   "SELECT * FROM t_dict d LEFT JOIN (SELECT status FROM t_order WHERE user_id = 1 AND order_id = 1) o ON o.status = d.k",
			units: []unitWant{{"ds_1", "select * from t_dict as d left join (select `status` from t_order_1 where user_id = 1 and order_id = 1) as o on o.`status` = d.k", nil}},
		},
		{
			name: "a broadcast table LEFT JOIN a sharded one, over several nodes", err: ErrUnsupported,
			sql:    "SELECT * FROM t_dict d LEFT JOIN t_order o ON o.status = d.k",
			errHas: []string{"outer join", "sharded table t_order"},
		},
		{
			name: "a sharded table RIGHT JOIN a broadcast one, over several nodes", err: ErrUnsupported,
			sql:    "SELECT * FROM t_order o RIGHT JOIN t_dict d ON o.status = d.k WHERE d.v = 1",
			errHas: []string{"outer join", "sharded table t_order"},
		},
		{
			name: "a broadcast table LEFT JOIN a sharded one, on one node", reason: ReasonSingleShard,
			sql:   "SELECT * FROM t_dict d LEFT JOIN t_order o ON o.status = d.k WHERE o.user_id = 1 AND o.order_id = 1",
			units: []unitWant{{"ds_1", "select * from t_dict as d left join t_order_1 as o on o.`status` = d.k where o.user_id = 1 and o.order_id = 1", nil}},
		},
		{
			name: "a sharded table LEFT JOIN a broadcast one, over several nodes", reason: ReasonMultiShard,
			sql: "SELECT o.order_id, d.v FROM t_order o LEFT JOIN t_dict d ON d.k = o.status WHERE o.user_id = 0 AND o.order_id IN (1, 2)",
			units: []unitWant{
				{"ds_0", "select o.order_id, d.v from t_order_1 as o left join t_dict as d on d.k = o.`status` where o.user_id = 0 and o.order_id in (1, 2)", nil},
				{"ds_0", "select o.order_id, d.v from t_order_2 as o left join t_dict as d on d.k = o.`status` where o.user_id = 0 and o.order_id in (1, 2)", nil},
			},
			merge: &mergePlan{Limit: noLimit},
		},
		{
			name: "INSERT … SELECT of a broadcast table LEFT JOIN a sharded one", err: ErrUnsupported,
			sql:    "INSERT INTO t_order (order_id, user_id) SELECT o.order_id, o.user_id FROM t_dict d LEFT JOIN t_order o ON o.status = d.k WHERE o.user_id = 1 AND o.order_id = 1",
			errHas: []string{"outer join", "no sharding values"},
		},
		{
			name: "a subquery in SET of another node", err: ErrUnsupported,
			sql:    "UPDATE t_order o SET o.note = (SELECT MAX(i.qty) FROM t_order_item i WHERE i.user_id = 0) WHERE o.user_id = 1 AND o.order_id = 2",
			errHas: []string{"sharded table t_order_item"},
		},
		{
			name: "a correlated subquery in SET", write: true, reason: ReasonSingleShard,
			sql:   "UPDATE t_order o SET o.note = (SELECT MAX(i.qty) FROM t_order_item i WHERE i.order_id = o.order_id) WHERE o.user_id = 1 AND o.order_id = 2",
			units: []unitWant{{"ds_1", "update t_order_2 as o set o.note = (select max(i.qty) from t_order_item_2 as i where i.order_id = o.order_id) where o.user_id = 1 and o.order_id = 2", nil}},
		},
		{
			name: "a subquery in ON DUPLICATE KEY UPDATE of another node", err: ErrUnsupported,
			sql:    "INSERT INTO t_order (order_id, user_id, note) SELECT order_id, user_id, note FROM t_order WHERE user_id = 1 AND order_id = 2 ON DUPLICATE KEY UPDATE note = (SELECT MAX(qty) FROM t_order_item WHERE user_id = 0)",
			errHas: []string{"sharded table t_order_item"},
		},
		{
			name: "a subquery in ORDER BY of DELETE, of another node", err: ErrUnsupported,
			sql:    "DELETE FROM t_order WHERE user_id = 1 AND order_id = 2 ORDER BY (SELECT MAX(qty) FROM t_order_item WHERE user_id = 0) LIMIT 1",
			errHas: []string{"sharded table t_order_item"},
		},
		{
			name: "= ANY of a subquery is not a link", err: ErrUnsupported,
			sql:    "SELECT * FROM t_order WHERE user_id = 1 AND order_id = ANY (SELECT order_id FROM t_order_item WHERE user_id = 1)",
			errHas: []string{"sharded table t_order_item"},
		},
		{
			name: "a derived column that is not the sharding column", reason: ReasonAllShards,
			sql: "SELECT * FROM (SELECT status AS user_id FROM t_account) d WHERE user_id = 1",
			units: []unitWant{
				{"ds_0", "select * from (select `status` as user_id from t_account) as d where user_id = 1", nil},
				{"ds_1", "select * from (select `status` as user_id from t_account) as d where user_id = 1", nil},
			},
			merge: &mergePlan{Limit: noLimit},
		},
		{
			name: "a subquery over a table not bound", err: ErrCrossShardJoin,
			sql: "SELECT * FROM t_order WHERE user_id IN (SELECT user_id FROM t_account WHERE user_id = 1)",
		},
		{
			name: "a binding join in a subquery on columns that do not pair", err: ErrCrossShardJoin,
			sql:    "SELECT * FROM t_dict WHERE k IN (SELECT i.status FROM t_order_item i JOIN t_order o ON o.user_id = i.user_id WHERE i.user_id = 1 AND i.order_id = 2)",
			errHas: []string{"t_order_item.order_id = t_order.order_id"},
		},
		{
			name: "a self-join in a subquery", err: ErrCrossShardJoin,
			sql:    "SELECT * FROM t_dict WHERE k IN (SELECT a.status FROM t_order a JOIN t_order b ON a.order_id = b.order_id WHERE a.user_id = 1 AND a.order_id = 2)",
			errHas: []string{"joined with itself"},
		},
		{
			name: "UNION in a subquery", err: ErrUnsupported,
			sql:    "SELECT * FROM t_order WHERE user_id = 1 AND order_id = 2 AND status IN (SELECT status FROM t_order_item WHERE user_id = 1 AND order_id = 2 UNION SELECT 'x')",
			errHas: []string{"UNION in a subquery"},
		},
		{
			name: "a subquery in GROUP BY over several nodes", err: ErrUnsupported,
			sql:    "SELECT COUNT(*) FROM t_order o WHERE o.user_id = 1 GROUP BY (SELECT MAX(qty) FROM t_order_item i WHERE i.order_id = o.order_id)",
			errHas: []string{"GROUP BY or HAVING"},
		},
		{
			name: "an UPDATE of a broadcast table that reads a sharded one", err: ErrUnsupported,
			sql:    "UPDATE t_dict SET v = 'x' WHERE k IN (SELECT status FROM t_order WHERE user_id = 1 AND order_id = 1)",
			errHas: []string{"UPDATE of table t_dict"},
		},
		{
			name: "a DELETE without its own key", err: ErrNoShardKey,
			sql: "DELETE FROM t_order WHERE order_id IN (SELECT order_id FROM t_order_item WHERE user_id = 1 AND order_id = 2) AND status = 'x' OR note = 'y'",
		},
		{
			name: "INSERT … VALUES with a subquery", err: ErrUnsupported,
			sql:    "INSERT INTO t_order (order_id, user_id, status) VALUES (1, 2, (SELECT status FROM t_order_item WHERE user_id = 2 AND order_id = 1))",
			errHas: []string{"subquery or derived table of INSERT"},
		},
		{
			name: "INSERT … SELECT from a derived table whose sharding column is something else", err: ErrUnsupported,
			sql:    "INSERT INTO t_order (order_id, user_id) SELECT d.order_id, d.u FROM (SELECT order_id, user_id + 1 AS u FROM t_order WHERE user_id = 1 AND order_id = 2) d",
			errHas: []string{"sharding column user_id", "d.u"},
		},
	})
}

// A statement whose subquery is not linked routes per call: where its
// arguments put it on the statement's node; refused where they do not.
func TestRouteSubqueryPerCall(t *testing.T) {
	rules, _ := routeTestRules()
	r := NewRouter(rules)
	sql := "SELECT * FROM t_order o WHERE o.user_id = ? AND o.order_id = ? AND o.status IN (SELECT status FROM t_order_item i WHERE i.user_id = ? AND i.order_id = ?)"
	rt, err := r.Route(sql, routeArgs(int64(0), int64(1), int64(2), int64(5)))
	require.NoError(t, err)
	require.Len(t, rt.Units, 1)
	assert.Equal(t, "ds_0", rt.Units[0].DataSource)
	_, err = r.Route(sql, routeArgs(int64(0), int64(1), int64(1), int64(1)))
	require.ErrorIs(t, err, ErrUnsupported)
	var re *RouteError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "t_order_item", re.Table)
	// A subquery that no row satisfies runs where the statement does.
	rt, err = r.Route(sql, routeArgs(int64(0), int64(1), nil, int64(1)))
	require.NoError(t, err)
	require.Len(t, rt.Units, 1)
	assert.Equal(t, "ds_0", rt.Units[0].DataSource)

	// Through RouteContext too (the INSERT … SELECT without a column list).
	ins := "INSERT INTO t_order SELECT t.order_id, t.user_id, 'x' FROM (SELECT order_id, user_id FROM t_order_item WHERE user_id = ? AND order_id = ?) t"
	rt, err = r.RouteContext(context.Background(), ins, routeArgs(int64(1), int64(3)), testColumns)
	require.NoError(t, err)
	require.Len(t, rt.Units, 1)
	assert.Equal(t, "insert into t_order_3(order_id, user_id, note) select t.order_id, t.user_id, 'x' from (select order_id, user_id from t_order_item_3 where user_id = ? and order_id = ?) as t", rt.Units[0].SQL)
}

// An IN link narrows only in the top-level AND; elsewhere the subquery must
// be on the statement's node.
func TestRouteSubqueryINPosition(t *testing.T) {
	rules, _ := routeTestRules()
	r := NewRouter(rules)
	for _, sql := range []string{
		"SELECT * FROM t_order WHERE user_id = 1 AND NOT (order_id IN (SELECT order_id FROM t_order_item WHERE qty > 1))",
		"SELECT order_id IN (SELECT order_id FROM t_order_item WHERE qty > 1) FROM t_order WHERE user_id = 1",
		"SELECT * FROM t_order WHERE user_id = 1 AND (order_id IN (SELECT order_id FROM t_order_item WHERE qty > 1) OR status = 'x')",
	} {
		_, err := r.Route(sql, nil)
		require.ErrorIs(t, err, ErrUnsupported, sql)
		assert.Contains(t, err.Error(), "sharded table t_order_item", sql)
	}
	rt, err := r.Route("SELECT * FROM t_order WHERE user_id = 1 AND order_id = 2 AND NOT (order_id IN (SELECT order_id FROM t_order_item WHERE user_id = 1 AND order_id = 2))", nil)
	require.NoError(t, err)
	assert.Len(t, rt.Units, 1)
}
