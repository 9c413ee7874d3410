package shard

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Shapes ShardingSphere routes that rwshard used to refuse (issue 14).

// routeByOrder lists the units of the t_order node (user u, order o) and
// of its binding partners, one per call of format with the node's suffix.
func routePerNode(format string) []unitWant {
	var out []unitWant
	for d := 0; d < 2; d++ {
		for k := 0; k < 4; k++ {
			out = append(out, unitWant{ds: fmt.Sprintf("ds_%d", d), sql: fmt.Sprintf(format, k, k)})
		}
	}
	return out
}

func TestRouteUpdateShardKeyToItself(t *testing.T) {
	runRouteCases(t, []routeCase{
		{
			name: "literal: the value the WHERE clause pins", sql: "UPDATE t_order SET user_id = 1 WHERE user_id = 1 AND order_id = 2",
			reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_1", "update t_order_2 set user_id = 1 where user_id = 1 and order_id = 2", nil}},
		},
		{
			name:   "both sharding columns, the pin written the other way round",
			sql:    "UPDATE t_order SET order_id = 2, status = 'x', user_id = 1 WHERE 2 = order_id AND (user_id = 1 AND status = 'y')",
			reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_1", "update t_order_2 set order_id = 2, `status` = 'x', user_id = 1 where 2 = order_id and (user_id = 1 and `status` = 'y')", nil}},
		},
		{
			name: "arguments, equal", sql: "UPDATE t_order SET user_id = ?, status = 'x' WHERE order_id = 2 AND user_id = ?",
			args: []any{int64(3), int64(3)}, reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_1", "update t_order_2 set user_id = ?, `status` = 'x' where order_id = 2 and user_id = ?", []any{int64(3), int64(3)}}},
		},
		{
			name: "argument and literal, equal across integer types", sql: "UPDATE t_order SET user_id = ? WHERE user_id = 3 AND order_id = 1",
			args: []any{int(3)}, reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_1", "update t_order_1 set user_id = ? where user_id = 3 and order_id = 1", []any{int(3)}}},
		},
		{
			name: "string arguments, equal as bytes", sql: "UPDATE t_account SET user_id = ? WHERE user_id = ?",
			args: []any{[]byte("4"), "4"}, reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_0", "update t_account set user_id = ? where user_id = ?", []any{[]byte("4"), "4"}}},
		},
		{
			name: "SET col = col, through the alias", sql: "UPDATE t_order o SET o.user_id = user_id, note = 'n' WHERE o.user_id = 1 AND o.order_id = 1",
			reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_1", "update t_order_1 as o set o.user_id = user_id, note = 'n' where o.user_id = 1 and o.order_id = 1", nil}},
		},
		{
			name: "arguments, different", sql: "UPDATE t_order SET user_id = ? WHERE user_id = ? AND order_id = 1",
			args: []any{int64(3), int64(5)}, err: ErrShardKeyUpdate,
			errHas: []string{"table t_order, column user_id", "another value than the WHERE clause's"},
		},
		{
			name: "an integer and a string are not the same value", sql: "UPDATE t_order SET user_id = ? WHERE user_id = 3 AND order_id = 1",
			args: []any{"3"}, err: ErrShardKeyUpdate, errHas: []string{"column user_id"},
		},
		{
			name: "literals, different", sql: "UPDATE t_order SET user_id = 2 WHERE user_id = 1 AND order_id = 1",
			err: ErrShardKeyUpdate, errHas: []string{"SET user_id would move the row"},
		},
		{
			name: "pinned only in one OR branch", sql: "UPDATE t_order SET user_id = 1 WHERE user_id = 1 OR order_id = 2",
			err: ErrShardKeyUpdate, errHas: []string{"does not pin it to", "column user_id"},
		},
		{
			name: "pinned by IN, not =", sql: "UPDATE t_order SET user_id = 1 WHERE user_id IN (1) AND order_id = 2",
			err: ErrShardKeyUpdate, errHas: []string{"does not pin it to"},
		},
		{
			name: "SET to an expression", sql: "UPDATE t_order SET user_id = user_id + 0 WHERE user_id = 1 AND order_id = 2",
			err: ErrShardKeyUpdate, errHas: []string{"column user_id"},
		},
		{
			name: "SET to another table's column of the same name is not itself",
			sql:  "UPDATE t_order o SET o.order_id = x.order_id WHERE o.user_id = 1 AND o.order_id = 1",
			err:  ErrShardKeyUpdate, errHas: []string{"column order_id"},
		},
	})
}

func TestSameValue(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		set, where Value
		want       bool
	}{
		{int64(1), int64(1), true},
		{int64(1), uint64(1), true},
		{uint64(1 << 63), uint64(1 << 63), true},
		{uint64(1 << 63), int64(-1), false},
		{int64(1), int64(2), false},
		{int64(1), "1", false},
		{"a", []byte("a"), true},
		{"a", "A", false},
		{1.5, 1.5, true},
		{now, now.In(time.FixedZone("x", 3600)), true},
		{nil, int64(1), false},
		{int64(1), nil, true}, // WHERE col = NULL: no row
		{true, true, true},
		{struct{}{}, struct{}{}, false},
	} {
		assert.Equal(t, c.want, sameValue(c.set, c.where), "%#v, %#v", c.set, c.where)
	}
}

func TestRouteBinaryShardKey(t *testing.T) {
	runRouteCases(t, []routeCase{
		{
			name: "BINARY col = ?", sql: "SELECT * FROM t_account WHERE BINARY user_id = ?", args: []any{"3"},
			reason: ReasonSingleShard,
			units:  []unitWant{{"ds_1", "select * from t_account where convert(user_id, BINARY) = ?", []any{"3"}}},
		},
		{
			name: "col = BINARY literal, both columns", sql: "SELECT * FROM t_order WHERE user_id = BINARY 1 AND BINARY order_id = 2",
			reason: ReasonSingleShard,
			units:  []unitWant{{"ds_1", "select * from t_order_2 where user_id = convert(1, BINARY) and convert(order_id, BINARY) = 2", nil}},
		},
		{
			name: "CAST(col AS BINARY) IN (…, BINARY v)", sql: "SELECT * FROM t_account WHERE CAST(user_id AS BINARY) IN (2, BINARY 4)",
			reason: ReasonSingleShard,
			units:  []unitWant{{"ds_0", "select * from t_account where cast(user_id as BINARY) in (2, convert(4, BINARY))", nil}},
		},
		{
			name: "a write by BINARY key", sql: "DELETE FROM t_account WHERE BINARY user_id = 5",
			reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_1", "delete from t_account where convert(user_id, BINARY) = 5", nil}},
		},
		{
			name: "BINARY(n) cuts the value: every node", sql: "SELECT * FROM t_account WHERE CAST(user_id AS BINARY(1)) = 1",
			reason: ReasonAllShards, merge: &mergePlan{Limit: noLimit},
			units: []unitWant{
				{"ds_0", "select * from t_account where cast(user_id as BINARY(1)) = 1", nil},
				{"ds_1", "select * from t_account where cast(user_id as BINARY(1)) = 1", nil},
			},
		},
		{
			name: "a BINARY range is not a range of the column: no key", sql: "DELETE FROM t_account WHERE BINARY user_id < 5",
			err: ErrNoShardKey,
		},
		{
			name: "CAST to another type is not a key", sql: "DELETE FROM t_account WHERE CAST(user_id AS CHAR) = '5'",
			err: ErrNoShardKey,
		},
	})
}

func TestRouteTableMaintenance(t *testing.T) {
	concat := &mergePlan{Limit: noLimit}
	runRouteCases(t, []routeCase{
		{
			name: "ANALYZE of sharded, broadcast and default tables: per data source", sql: "ANALYZE TABLE t_order, t_dict, t_user",
			reason: ReasonAllShards, tables: []string{"t_order", "t_dict", "t_user"}, merge: concat,
			units: []unitWant{
				{"ds_0", "ANALYZE TABLE t_order_0, t_order_1, t_order_2, t_order_3, t_dict, t_user", nil},
				{"ds_1", "ANALYZE TABLE t_order_0, t_order_1, t_order_2, t_order_3, t_dict", nil},
			},
		},
		{
			name:   "OPTIMIZE with a modifier, comment, qualifiers and a semicolon",
			sql:    "/* c */ optimize no_write_to_binlog tables shop.t_account, `t_order_item`, other.t_user;",
			reason: ReasonAllShards, merge: concat,
			units: []unitWant{
				{"ds_0", "/* c */ optimize no_write_to_binlog tables t_account, t_order_item_0, t_order_item_1, t_order_item_2, t_order_item_3, other.t_user;", nil},
				{"ds_1", "/* c */ optimize no_write_to_binlog tables t_account, t_order_item_0, t_order_item_1, t_order_item_2, t_order_item_3;", nil},
			},
		},
		{
			name: "CHECK TABLE with options", sql: "CHECK TABLE t_account FOR UPGRADE QUICK",
			reason: ReasonAllShards, merge: concat,
			units: []unitWant{
				{"ds_0", "CHECK TABLE t_account FOR UPGRADE QUICK", nil},
				{"ds_1", "CHECK TABLE t_account FOR UPGRADE QUICK", nil},
			},
		},
		{
			name: "CHECKSUM TABLE of a broadcast table: every data source", sql: "CHECKSUM TABLE t_dict EXTENDED",
			reason: ReasonAllShards, merge: concat,
			units: []unitWant{{"ds_0", "CHECKSUM TABLE t_dict EXTENDED", nil}, {"ds_1", "CHECKSUM TABLE t_dict EXTENDED", nil}},
		},
		{
			name: "REPAIR of one data source's tables: one unit, no merge", sql: "REPAIR LOCAL TABLE t_order USE_FRM",
			rules:  func(r *Rules) { r.Tables["t_order"].DataNodes = routeTestNodes(1, 2, "t_order") },
			reason: ReasonAllShards,
			units:  []unitWant{{"ds_0", "REPAIR LOCAL TABLE t_order_0, t_order_1 USE_FRM", nil}},
		},
		{
			name: "a table named like a verb", sql: "SELECT * FROM `analyze`", reason: ReasonDefault,
			units: []unitWant{{"ds_0", "SELECT * FROM `analyze`", nil}},
		},
		{
			name: "ANALYZE of default tables only: as it is", sql: "ANALYZE TABLE t_user",
			reason: ReasonDefault, units: []unitWant{{"ds_0", "ANALYZE TABLE t_user", nil}},
		},
		{
			name: "ANALYZE … UPDATE HISTOGRAM", sql: "ANALYZE TABLE t_account UPDATE HISTOGRAM ON user_id WITH 8 BUCKETS",
			err: ErrUnsupported, errHas: []string{"ANALYZE naming table t_account in a form rwshard does not read", "histograms"},
		},
		{
			name: "CHECK with an option it does not take", sql: "CHECK TABLE t_order USE_FRM",
			err: ErrUnsupported, errHas: []string{"CHECK naming table t_order", "options of CHECK TABLE"},
		},
		{
			name: "a placeholder", sql: "ANALYZE TABLE t_order, ?", err: ErrUnsupported,
		},
		{
			name: "MariaDB's ANALYZE SELECT of a sharded table", sql: "ANALYZE SELECT * FROM t_order", err: ErrUnsupported,
			errHas: []string{"table t_order"},
		},
		{
			name: "a default table without default data source", sql: "ANALYZE TABLE t_order, t_user", rules: routeNoDefault,
			err: ErrUnknownTable, errHas: []string{"table t_user"},
		},
	})
}

func TestRouteDropSeveralTables(t *testing.T) {
	runRouteCases(t, []routeCase{
		{
			name: "sharded tables not bound, broadcast and default", sql: "DROP TABLE IF EXISTS t_order, t_user, t_dict, t_account",
			reason: ReasonAllShards, write: true, tables: []string{"t_order", "t_user", "t_dict", "t_account"},
			units: []unitWant{
				{"ds_0", "drop table if exists t_order_0, t_order_1, t_order_2, t_order_3, t_user, t_dict, t_account", nil},
				{"ds_1", "drop table if exists t_order_0, t_order_1, t_order_2, t_order_3, t_dict, t_account", nil},
			},
		},
		{
			name: "a broadcast and a default table", sql: "DROP TABLE shop.t_dict, shop.t_user",
			reason: ReasonAllShards, write: true,
			units: []unitWant{
				{"ds_0", "drop table t_dict, shop.t_user", nil},
				{"ds_1", "drop table t_dict", nil},
			},
		},
		{
			name: "a table twice: as MySQL, the server says 1066", sql: "DROP TABLE t_account, t_account",
			reason: ReasonAllShards, write: true,
			units: []unitWant{{"ds_0", "drop table t_account, t_account", nil}, {"ds_1", "drop table t_account, t_account", nil}},
		},
		{
			name: "TEMPORARY", sql: "DROP TEMPORARY TABLE t_order, t_user", err: ErrUnsupported,
			errHas: []string{"DROP TEMPORARY TABLE", "table t_order, t_user"},
		},
	})
}

func TestRouteForeignKeys(t *testing.T) {
	oneSource := func(r *Rules) {
		r.Tables["t_order"].DataNodes = routeTestNodes(1, 4, "t_order")
		r.Tables["t_order_item"].DataNodes = routeTestNodes(1, 4, "t_order_item")
	}
	runRouteCases(t, []routeCase{
		{
			name:   "ALTER TABLE ADD CONSTRAINT to a binding table: paired table, unique name",
			sql:    "ALTER TABLE t_order_item ADD CONSTRAINT fk_order FOREIGN KEY (order_id) REFERENCES t_order (order_id) ON DELETE CASCADE",
			reason: ReasonAllShards, write: true,
			units: routePerNode("alter table t_order_item_%d add constraint fk_order_t_order_item_%[1]d foreign key (order_id) references t_order_%d (order_id) on delete cascade"),
		},
		{
			name:   "a self-reference through the logical database",
			sql:    "ALTER TABLE t_order ADD FOREIGN KEY (parent_id) REFERENCES shop.t_order (order_id)",
			reason: ReasonAllShards, write: true,
			units: routePerNode("alter table t_order_%d add foreign key (parent_id) references t_order_%d (order_id)"),
		},
		{
			name:   "a column's REFERENCES to a qualified broadcast table",
			sql:    "CREATE TABLE t_order (kind INT REFERENCES shop.t_dict (id))",
			reason: ReasonAllShards, write: true,
			units: routeEvery8("create table %s (\n\tkind INT references t_dict (id)\n)"),
		},
		{
			name:   "a column's REFERENCES to a binding table (vitess's Walk does not see it)",
			sql:    "ALTER TABLE t_order_item ADD COLUMN o INT REFERENCES t_order (order_id)",
			reason: ReasonAllShards, write: true,
			units: routePerNode("alter table t_order_item_%d add column o INT references t_order_%d (order_id)"),
		},
		{
			name: "a column's REFERENCES to a sharded table not bound with it: refused, not sent with the logical name",
			sql:  "CREATE TABLE t_order (a INT REFERENCES t_account (user_id))",
			err:  ErrCrossShardJoin, errHas: []string{"foreign key of t_order to t_account"},
		},
		{
			name: "a default table, every data node in the default data source", rules: oneSource,
			sql:    "CREATE TABLE t_order (u INT, CONSTRAINT fk_u FOREIGN KEY (u) REFERENCES t_user (id))",
			reason: ReasonAllShards, write: true,
			units: func() []unitWant {
				var out []unitWant
				for k := 0; k < 4; k++ {
					out = append(out, unitWant{ds: "ds_0", sql: fmt.Sprintf(
						"create table t_order_%d (\n\tu INT,\n\tconstraint fk_u_t_order_%d foreign key (u) references t_user (id)\n)", k, k)})
				}
				return out
			}(),
		},
		{
			name: "a default table that other data sources lack",
			sql:  "CREATE TABLE t_order (u INT, FOREIGN KEY (u) REFERENCES t_user (id))",
			err:  ErrCrossShardJoin, errHas: []string{"foreign key of sharded table t_order to t_user", "data nodes in ds_1", "table t_order, t_user"},
		},
		{
			name: "a sharded table not bound with it",
			sql:  "ALTER TABLE t_order ADD FOREIGN KEY (user_id) REFERENCES t_account (user_id)",
			err:  ErrCrossShardJoin, errHas: []string{"foreign key of t_order to t_account, which are not binding tables"},
		},
		{
			name: "a default table referencing a sharded one",
			sql:  "CREATE TABLE t_user (o INT, FOREIGN KEY (o) REFERENCES t_order (order_id))",
			err:  ErrCrossShardJoin, errHas: []string{"foreign key of t_user, which is not sharded, to sharded table t_order"},
		},
		{
			name: "a broadcast table referencing a sharded one",
			sql:  "ALTER TABLE t_dict ADD FOREIGN KEY (o) REFERENCES t_order (order_id)",
			err:  ErrCrossShardJoin, errHas: []string{"foreign key of t_dict"},
		},
		{
			name: "CREATE TABLE … SELECT of a sharded table stays refused",
			sql:  "CREATE TABLE t_order AS SELECT * FROM t_order_item",
			err:  ErrUnsupported, errHas: []string{"subquery or derived table"},
		},
	})
}

// routeViewRules adds t_order_view, a sharded view bound with t_order.
func routeViewRules(r *Rules) {
	o := r.Tables["t_order"]
	r.Tables["t_order_view"] = &TableRule{Logical: "t_order_view", DataNodes: routeTestNodes(2, 4, "t_order_view"),
		DatabaseStrategy: o.DatabaseStrategy, TableStrategy: o.TableStrategy}
	r.BindingGroups = [][]string{{"t_order", "t_order_item", "t_order_view"}}
}

func TestRouteViews(t *testing.T) {
	runRouteCases(t, []routeCase{
		{
			name: "CREATE VIEW: a view per data node over its tables", rules: routeViewRules,
			sql:    "CREATE VIEW t_order_view AS SELECT t_order.order_id, user_id FROM t_order WHERE status = 'ok'",
			reason: ReasonAllShards, write: true,
			units: routePerNode("create view t_order_view_%d as select t_order.order_id, user_id from t_order_%d as t_order where `status` = 'ok'"),
		},
		{
			name: "CREATE OR REPLACE VIEW over a binding join and a broadcast table", rules: routeViewRules,
			sql:    "CREATE OR REPLACE VIEW t_order_view (a, b) AS SELECT o.order_id, i.item_id FROM t_order o JOIN t_order_item i ON o.order_id = i.order_id JOIN t_dict d ON d.k = o.status",
			reason: ReasonAllShards, write: true,
			units: routePerNode("create or replace view t_order_view_%d(a, b) as select o.order_id, i.item_id from t_order_%d as o join t_order_item_%[1]d as i on o.order_id = i.order_id join t_dict as d on d.k = o.`status`"),
		},
		{
			name: "a query of the view routes like its table", rules: routeViewRules,
			sql: "SELECT * FROM t_order_view WHERE user_id = 1 AND order_id = 2", reason: ReasonSingleShard,
			units: []unitWant{{"ds_1", "select * from t_order_view_2 where user_id = 1 and order_id = 2", nil}},
		},
		{
			name: "DROP VIEW: per data source", rules: routeViewRules, sql: "DROP VIEW IF EXISTS t_order_view, v",
			reason: ReasonAllShards, write: true,
			units: []unitWant{
				{"ds_0", "drop view if exists t_order_view_0, t_order_view_1, t_order_view_2, t_order_view_3, v", nil},
				{"ds_1", "drop view if exists t_order_view_0, t_order_view_1, t_order_view_2, t_order_view_3", nil},
			},
		},
		{
			name: "a view over a broadcast table in the default data source", sql: "CREATE VIEW v AS SELECT * FROM t_dict",
			reason: ReasonDefault, write: true, units: []unitWant{{"ds_0", "CREATE VIEW v AS SELECT * FROM t_dict", nil}},
		},
		{
			name: "a view that aggregates", rules: routeViewRules,
			sql: "CREATE VIEW t_order_view AS SELECT user_id, COUNT(*) FROM t_order GROUP BY user_id",
			err: ErrUnsupported, errHas: []string{"view t_order_view that groups or aggregates"},
		},
		{
			name: "a view with DISTINCT", rules: routeViewRules, sql: "CREATE VIEW t_order_view AS SELECT DISTINCT user_id FROM t_order",
			err: ErrUnsupported, errHas: []string{"groups or aggregates"},
		},
		{
			name: "a view with LIMIT", rules: routeViewRules, sql: "CREATE VIEW t_order_view AS SELECT * FROM t_order LIMIT 3",
			err: ErrUnsupported, errHas: []string{"LIMIT"},
		},
		{
			name: "a view with a window", rules: routeViewRules,
			sql: "CREATE VIEW t_order_view AS SELECT order_id, ROW_NUMBER() OVER (ORDER BY order_id) FROM t_order",
			err: ErrUnsupported, errHas: []string{"window"},
		},
		{
			name: "a view over a UNION", rules: routeViewRules,
			sql: "CREATE VIEW t_order_view AS SELECT order_id FROM t_order UNION SELECT order_id FROM t_order_item",
			err: ErrUnsupported,
		},
		{
			name: "a view over a table not bound with it", rules: routeViewRules, sql: "CREATE VIEW t_order_view AS SELECT * FROM t_account",
			err: ErrCrossShardJoin, errHas: []string{"view t_order_view over t_account, which are not binding tables"},
		},
		{
			name: "a view over a binding join without the pairing column", rules: routeViewRules,
			sql: "CREATE VIEW t_order_view AS SELECT o.order_id FROM t_order o JOIN t_order_item i ON o.user_id = i.user_id",
			err: ErrCrossShardJoin, errHas: []string{"joined without t_order.order_id = t_order_item.order_id"},
		},
		{
			name: "a sharded view over a default table", rules: routeViewRules, sql: "CREATE VIEW t_order_view AS SELECT * FROM t_user",
			err: ErrUnsupported, errHas: []string{"does not select from a sharded table bound with it"},
		},
		{
			name: "a view over a subquery of a sharded table", rules: routeViewRules,
			sql: "CREATE VIEW t_order_view AS SELECT * FROM t_order WHERE order_id IN (SELECT order_id FROM t_order_item)",
			err: ErrUnsupported, errHas: []string{"subquery"},
		},
		{
			name: "ALTER VIEW stays refused", rules: routeViewRules, sql: "ALTER VIEW t_order_view AS SELECT * FROM t_order",
			err: ErrUnsupported, errHas: []string{"t_order"},
		},
	})
}

func TestRouteLogicalDatabaseQualifier(t *testing.T) {
	runRouteCases(t, []routeCase{
		{
			name: "DELETE FROM logic_db.t", sql: "DELETE FROM logic_db.t_order WHERE user_id = ? AND order_id = ?",
			args: []any{int64(1), int64(2)}, reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_1", "delete from t_order_2 where user_id = ? and order_id = ?", []any{int64(1), int64(2)}}},
		},
		{
			name: "qualified columns too", sql: "DELETE FROM logic_db.t_order WHERE logic_db.t_order.user_id = 1 AND t_order.order_id IN (1, 5)",
			reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_1", "delete from t_order_1 where t_order_1.user_id = 1 and t_order_1.order_id in (1, 5)", nil}},
		},
		{
			name: "a broadcast table", sql: "DELETE FROM logic_db.t_dict WHERE k = 1", reason: ReasonBroadcastWrite, write: true,
			units: []unitWant{{"ds_0", "delete from t_dict where k = 1", nil}, {"ds_1", "delete from t_dict where k = 1", nil}},
		},
		{
			name: "without a shard key: refused, as every write (ShardingSphere goes to every node)",
			sql:  "DELETE FROM logic_db.t_account WHERE status = ?", args: []any{"OK"},
			err: ErrNoShardKey, errHas: []string{"table t_account"},
		},
	})
}
