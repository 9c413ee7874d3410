package shard

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"vitess.io/vitess/go/vt/sqlparser"
)

// unitWant is an expected unit: data source, exact SQL, argument values.
type unitWant struct {
	ds   string
	sql  string
	args []any
}

// routeCase is one golden routing test.
type routeCase struct {
	name   string
	rules  func(*Rules) // adjusts testRules
	sql    string
	args   []any
	reason string
	units  []unitWant
	write  bool
	lastID int64
	tables []string
	merge  *mergePlan // expected merge; nil: none
	cols   bool       // route with Router.RouteContext and testColumns
	// errors
	err    error    // sentinel the error must match
	errHas []string // substrings of the message
}

func runRouteCases(t *testing.T, cases []routeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rules, _ := routeTestRules()
			if c.rules != nil {
				c.rules(rules)
			}
			r := NewRouter(rules)
			var rt *Route
			var err error
			if c.cols {
				rt, err = r.RouteContext(context.Background(), c.sql, routeArgs(c.args...), testColumns)
			} else {
				rt, err = r.Route(c.sql, routeArgs(c.args...))
			}
			if c.err != nil || c.errHas != nil {
				require.Error(t, err)
				if c.err != nil {
					assert.ErrorIs(t, err, c.err)
				}
				var re *RouteError
				require.ErrorAs(t, err, &re)
				msg := err.Error()
				assert.True(t, strings.HasPrefix(msg, "rwshard: shard: "), msg)
				assert.Contains(t, msg, quoteStatement(c.sql))
				for _, s := range c.errHas {
					assert.Contains(t, msg, s)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.reason, rt.Reason, "reason")
			assert.Equal(t, c.write, rt.Write, "write")
			assert.Equal(t, c.lastID, rt.LastInsertID, "LastInsertID")
			if c.tables != nil {
				assert.Equal(t, c.tables, rt.Tables, "tables")
			}
			for i := range c.units {
				c.units[i].sql = expandWeights(c.units[i].sql)
			}
			assert.Equal(t, c.units, routeUnits(rt), "units")
			if c.merge == nil {
				assert.Nil(t, rt.merge, "merge")
			} else if assert.NotNil(t, rt.merge, "merge") {
				assert.Equal(t, *c.merge, *rt.merge, "merge")
			}
			assert.NoError(t, routeCheckMerge(rt), "merge plan")
			// Whatever routes parses again.
			p := sqlparser.NewTestParser()
			for _, u := range rt.Units {
				if u.SQL == c.sql || routeUnparsed(u.SQL) {
					continue // as it came, or vitess does not read it
				}
				_, err := p.Parse(u.SQL)
				assert.NoError(t, err, u.SQL)
			}
		})
	}
}

func routeUnits(rt *Route) []unitWant {
	out := make([]unitWant, len(rt.Units))
	for i, u := range rt.Units {
		out[i] = unitWant{ds: u.DataSource, sql: u.SQL}
		for j, a := range u.Args {
			if a.Ordinal != j+1 {
				out[i].sql += fmt.Sprintf(" /* bad ordinal %d at %d */", a.Ordinal, j)
			}
			out[i].args = append(out[i].args, a.Value)
		}
	}
	return out
}

// every8 lists the eight t_order units of sql (with %s for the table).
func routeEvery8(format string, args ...any) []unitWant {
	var out []unitWant
	for d := 0; d < 2; d++ {
		for t := 0; t < 4; t++ {
			out = append(out, unitWant{
				ds:   fmt.Sprintf("ds_%d", d),
				sql:  strings.ReplaceAll(format, "%s", fmt.Sprintf("t_order_%d", t)),
				args: args,
			})
		}
	}
	return out
}

func routeNoDefault(r *Rules) { r.DefaultDataSource = "" }

func TestRouteDefaultAndBroadcast(t *testing.T) {
	runRouteCases(t, []routeCase{
		{
			name: "default table, SQL unchanged", sql: "SELECT * FROM t_user WHERE id = ?", args: []any{int64(3)},
			reason: ReasonDefault, tables: []string{"t_user"},
			units: []unitWant{{"ds_0", "SELECT * FROM t_user WHERE id = ?", []any{int64(3)}}},
		},
		{
			name: "default table write", sql: "UPDATE t_user SET name = 'x' WHERE id = 1",
			reason: ReasonDefault, write: true,
			units: []unitWant{{"ds_0", "UPDATE t_user SET name = 'x' WHERE id = 1", nil}},
		},
		{
			name: "default table without default data source", rules: routeNoDefault,
			sql: "SELECT * FROM t_user", err: ErrUnknownTable, errHas: []string{"table t_user"},
		},
		{
			name: "no table", sql: "SELECT 1", reason: ReasonDefault,
			units: []unitWant{{"ds_0", "SELECT 1", nil}},
		},
		{
			name: "no table without default data source: any data source", rules: routeNoDefault,
			sql: "SELECT NOW()", reason: ReasonBroadcastRead,
			units: []unitWant{{"ds_0", "SELECT NOW()", nil}},
		},
		{
			name: "SET without default data source", rules: routeNoDefault,
			sql: "SET @x = 1", err: ErrUnsupported, errHas: []string{"no table"},
		},
		{
			name: "SQL the parser does not read goes to the default data source",
			sql:  "HANDLER t_user OPEN", reason: ReasonDefault,
			units: []unitWant{{"ds_0", "HANDLER t_user OPEN", nil}},
		},
		{
			name: "SQL the parser does not read, naming a sharded table",
			sql:  "HANDLER t_order OPEN", err: ErrUnsupported, errHas: []string{"parser", "table t_order"},
		},
		{
			name: "statement whose AST loses the table", sql: "LOAD DATA INFILE '/tmp/x' INTO TABLE t_order",
			err: ErrUnsupported, errHas: []string{"t_order"},
		},
		{
			name:   "information_schema query naming a table in a string",
			sql:    "SELECT column_name FROM information_schema.columns WHERE table_name = 't_order'",
			reason: ReasonDefault,
			units:  []unitWant{{"ds_0", "SELECT column_name FROM information_schema.columns WHERE table_name = 't_order'", nil}},
		},
		{
			name: "broadcast read: one data source", sql: "SELECT name FROM t_dict WHERE id = ?", args: []any{int64(1)},
			reason: ReasonBroadcastRead, tables: []string{"t_dict"},
			units: []unitWant{{"ds_0", "SELECT name FROM t_dict WHERE id = ?", []any{int64(1)}}},
		},
		{
			name: "broadcast read without default: first data source", rules: routeNoDefault,
			sql: "SELECT name FROM t_dict", reason: ReasonBroadcastRead,
			units: []unitWant{{"ds_0", "SELECT name FROM t_dict", nil}},
		},
		{
			name: "broadcast joined with a default table: default data source",
			sql:  "SELECT * FROM t_user u JOIN t_dict d ON u.kind = d.id", reason: ReasonDefault,
			units: []unitWant{{"ds_0", "SELECT * FROM t_user u JOIN t_dict d ON u.kind = d.id", nil}},
		},
		{
			name: "broadcast insert: every data source", sql: "INSERT INTO t_dict (id, name) VALUES (?, ?)", args: []any{int64(1), "a"},
			reason: ReasonBroadcastWrite, write: true,
			units: []unitWant{
				{"ds_0", "INSERT INTO t_dict (id, name) VALUES (?, ?)", []any{int64(1), "a"}},
				{"ds_1", "INSERT INTO t_dict (id, name) VALUES (?, ?)", []any{int64(1), "a"}},
			},
		},
		{
			name: "broadcast update", sql: "UPDATE t_dict SET name = ? WHERE id = 1", args: []any{"b"},
			reason: ReasonBroadcastWrite, write: true,
			units: []unitWant{
				{"ds_0", "UPDATE t_dict SET name = ? WHERE id = 1", []any{"b"}},
				{"ds_1", "UPDATE t_dict SET name = ? WHERE id = 1", []any{"b"}},
			},
		},
		{
			name: "broadcast delete", sql: "DELETE FROM t_dict", reason: ReasonBroadcastWrite, write: true,
			units: []unitWant{{"ds_0", "DELETE FROM t_dict", nil}, {"ds_1", "DELETE FROM t_dict", nil}},
		},
		{
			name: "broadcast REPLACE", sql: "REPLACE INTO t_dict (id) VALUES (1)", reason: ReasonBroadcastWrite, write: true,
			units: []unitWant{{"ds_0", "REPLACE INTO t_dict (id) VALUES (1)", nil}, {"ds_1", "REPLACE INTO t_dict (id) VALUES (1)", nil}},
		},
		{
			name: "broadcast DDL", sql: "CREATE TABLE t_dict (id int primary key)", reason: ReasonBroadcastWrite, write: true,
			units: []unitWant{{"ds_0", "CREATE TABLE t_dict (id int primary key)", nil}, {"ds_1", "CREATE TABLE t_dict (id int primary key)", nil}},
		},
		{
			name: "broadcast with a database qualifier: rewritten without it",
			sql:  "UPDATE shop.t_dict SET shop.t_dict.name = ? WHERE id = 2", args: []any{"c"},
			reason: ReasonBroadcastWrite, write: true,
			units: []unitWant{
				{"ds_0", "update t_dict set t_dict.`name` = ? where id = 2", []any{"c"}},
				{"ds_1", "update t_dict set t_dict.`name` = ? where id = 2", []any{"c"}},
			},
		},
		{
			name: "write of a default table reading a broadcast table: default data source",
			sql:  "INSERT INTO t_user (kind) SELECT id FROM t_dict", reason: ReasonDefault, write: true,
			units: []unitWant{{"ds_0", "INSERT INTO t_user (kind) SELECT id FROM t_dict", nil}},
		},
		{
			name: "write of a broadcast table reading a default table",
			sql:  "INSERT INTO t_dict (id) SELECT kind FROM t_user", err: ErrUnsupported,
			errHas: []string{"broadcast table t_dict", "t_user"},
		},
		{
			name: "a variable named like a table is not the table", sql: "SET @t_order = 1", reason: ReasonDefault,
			units: []unitWant{{"ds_0", "SET @t_order = 1", nil}},
		},
		{
			name: "LOCK TABLES of a broadcast table", sql: "LOCK TABLES t_dict READ",
			err: ErrUnsupported, errHas: []string{"t_dict"},
		},
	})
}

func TestRouteShardedSelect(t *testing.T) {
	runRouteCases(t, []routeCase{
		{
			name: "by key, placeholders", sql: "SELECT * FROM t_order WHERE user_id = ? AND order_id = ?",
			args: []any{int64(7), int64(42)}, reason: ReasonSingleShard, tables: []string{"t_order"},
			units: []unitWant{{"ds_1", "select * from t_order_2 where user_id = ? and order_id = ?", []any{int64(7), int64(42)}}},
		},
		{
			name: "by key, literals, reversed comparison", sql: "SELECT status FROM t_order WHERE 4 = user_id AND order_id = 5",
			reason: ReasonSingleShard,
			units:  []unitWant{{"ds_0", "select `status` from t_order_1 where 4 = user_id and order_id = 5", nil}},
		},
		{
			name: "string values", sql: "SELECT * FROM t_order WHERE user_id = '3' AND order_id = '6'",
			reason: ReasonSingleShard,
			units:  []unitWant{{"ds_1", "select * from t_order_2 where user_id = '3' and order_id = '6'", nil}},
		},
		{
			name: "single unit keeps its LIMIT and has no merge",
			sql:  "SELECT * FROM t_order WHERE user_id = 1 AND order_id = 1 ORDER BY created DESC LIMIT ?, ?",
			args: []any{int64(10), int64(5)}, reason: ReasonSingleShard,
			units: []unitWant{{"ds_1", "select * from t_order_1 where user_id = 1 and order_id = 1 order by created desc limit ?, ?", []any{int64(10), int64(5)}}},
		},
		{
			name: "database key only: the tables of one data source", sql: "SELECT * FROM t_order WHERE user_id = ?",
			args: []any{int64(2)}, reason: ReasonMultiShard, merge: &mergePlan{Limit: noLimit},
			units: []unitWant{
				{"ds_0", "select * from t_order_0 where user_id = ?", []any{int64(2)}},
				{"ds_0", "select * from t_order_1 where user_id = ?", []any{int64(2)}},
				{"ds_0", "select * from t_order_2 where user_id = ?", []any{int64(2)}},
				{"ds_0", "select * from t_order_3 where user_id = ?", []any{int64(2)}},
			},
		},
		{
			name: "table key only: that table in every data source", sql: "SELECT * FROM t_order WHERE order_id = 6",
			reason: ReasonMultiShard, merge: &mergePlan{Limit: noLimit},
			units: []unitWant{
				{"ds_0", "select * from t_order_2 where order_id = 6", nil},
				{"ds_1", "select * from t_order_2 where order_id = 6", nil},
			},
		},
		{
			name: "IN", sql: "SELECT * FROM t_order WHERE user_id = 1 AND order_id IN (?, ?, 9)",
			args: []any{int64(1), int64(5)}, reason: ReasonSingleShard,
			units: []unitWant{{"ds_1", "select * from t_order_1 where user_id = 1 and order_id in (?, ?, 9)", []any{int64(1), int64(5)}}},
		},
		{
			name: "IN over two tables", sql: "SELECT * FROM t_order WHERE user_id = 1 AND order_id IN (1, 2)",
			reason: ReasonMultiShard, merge: &mergePlan{Limit: noLimit},
			units: []unitWant{
				{"ds_1", "select * from t_order_1 where user_id = 1 and order_id in (1, 2)", nil},
				{"ds_1", "select * from t_order_2 where user_id = 1 and order_id in (1, 2)", nil},
			},
		},
		{
			name: "BETWEEN uses ShardRange", sql: "SELECT * FROM t_order WHERE user_id = 1 AND order_id BETWEEN ? AND ?",
			args: []any{int64(6), int64(7)}, reason: ReasonMultiShard, merge: &mergePlan{Limit: noLimit},
			units: []unitWant{
				{"ds_1", "select * from t_order_2 where user_id = 1 and order_id between ? and ?", []any{int64(6), int64(7)}},
				{"ds_1", "select * from t_order_3 where user_id = 1 and order_id between ? and ?", []any{int64(6), int64(7)}},
			},
		},
		{
			name: "range from two comparisons", sql: "SELECT * FROM t_order WHERE user_id = 1 AND order_id > 4 AND order_id <= 5",
			// Each open range alone is every table; their intersection too.
			reason: ReasonMultiShard, merge: &mergePlan{Limit: noLimit},
			units: []unitWant{
				{"ds_1", "select * from t_order_0 where user_id = 1 and order_id > 4 and order_id <= 5", nil},
				{"ds_1", "select * from t_order_1 where user_id = 1 and order_id > 4 and order_id <= 5", nil},
				{"ds_1", "select * from t_order_2 where user_id = 1 and order_id > 4 and order_id <= 5", nil},
				{"ds_1", "select * from t_order_3 where user_id = 1 and order_id > 4 and order_id <= 5", nil},
			},
		},
		{
			name:   "OR unions its branches",
			sql:    "SELECT * FROM t_order WHERE (user_id = 1 AND order_id = 1) OR (user_id = 2 AND order_id = 2)",
			reason: ReasonMultiShard, merge: &mergePlan{Limit: noLimit},
			units: []unitWant{
				{"ds_0", "select * from t_order_2 where user_id = 1 and order_id = 1 or user_id = 2 and order_id = 2", nil},
				{"ds_1", "select * from t_order_1 where user_id = 1 and order_id = 1 or user_id = 2 and order_id = 2", nil},
			},
		},
		{
			name:   "OR with a branch without key: every node",
			sql:    "SELECT id FROM t_order WHERE (user_id = 1 AND order_id = 1) OR status = 'x'",
			reason: ReasonAllShards, merge: &mergePlan{Limit: noLimit},
			units: routeEvery8("select id from %s where user_id = 1 and order_id = 1 or `status` = 'x'"),
		},
		{
			name: "no key: every node", sql: "SELECT id FROM t_order WHERE status = ?", args: []any{"new"},
			reason: ReasonAllShards, merge: &mergePlan{Limit: noLimit},
			units: routeEvery8("select id from %s where `status` = ?", "new"),
		},
		{
			name: "tuple equality", sql: "SELECT * FROM t_order WHERE (user_id, order_id) = (?, 2)", args: []any{int64(1)},
			reason: ReasonSingleShard,
			units:  []unitWant{{"ds_1", "select * from t_order_2 where (user_id, order_id) = (?, 2)", []any{int64(1)}}},
		},
		{
			name: "tuple IN", sql: "SELECT * FROM t_order WHERE (user_id, order_id) IN ((1, 1), (2, 2))",
			reason: ReasonMultiShard, merge: &mergePlan{Limit: noLimit},
			units: []unitWant{
				{"ds_0", "select * from t_order_2 where (user_id, order_id) in ((1, 1), (2, 2))", nil},
				{"ds_1", "select * from t_order_1 where (user_id, order_id) in ((1, 1), (2, 2))", nil},
			},
		},
		{
			name: "alias", sql: "SELECT o.id FROM t_order AS o WHERE o.user_id = ? AND o.order_id = ?",
			args: []any{int64(1), int64(3)}, reason: ReasonSingleShard,
			units: []unitWant{{"ds_1", "select o.id from t_order_3 as o where o.user_id = ? and o.order_id = ?", []any{int64(1), int64(3)}}},
		},
		{
			name: "condition on another table's alias does not route", sql: "SELECT o.id FROM t_order o JOIN t_dict d ON d.id = o.kind WHERE d.user_id = 1",
			reason: ReasonAllShards, merge: &mergePlan{Limit: noLimit},
			units: routeEvery8("select o.id from %s as o join t_dict as d on d.id = o.kind where d.user_id = 1"),
		},
		{
			name:   "bare table qualifier gets an alias",
			sql:    "SELECT t_order.id FROM t_order WHERE t_order.user_id = 1 AND t_order.order_id = 2",
			reason: ReasonSingleShard,
			units:  []unitWant{{"ds_1", "select t_order.id from t_order_2 as t_order where t_order.user_id = 1 and t_order.order_id = 2", nil}},
		},
		{
			name:   "database-qualified table and columns",
			sql:    "SELECT shop.t_order.id FROM shop.t_order WHERE shop.t_order.user_id = 1 AND order_id = 2",
			reason: ReasonSingleShard,
			units:  []unitWant{{"ds_1", "select t_order.id from t_order_2 as t_order where t_order.user_id = 1 and order_id = 2", nil}},
		},
		{
			name: "upper-case names", sql: "SELECT * FROM T_ORDER WHERE USER_ID = 1 AND ORDER_ID = 2",
			reason: ReasonSingleShard,
			units:  []unitWant{{"ds_1", "select * from t_order_2 where USER_ID = 1 and ORDER_ID = 2", nil}},
		},
		{
			name: "= NULL matches no row: one node answers", sql: "SELECT * FROM t_order WHERE order_id = NULL",
			reason: ReasonSingleShard,
			units:  []unitWant{{"ds_0", "select * from t_order_0 where order_id = null", nil}},
		},
		{
			name: "NULL argument", sql: "SELECT * FROM t_order WHERE user_id = ? AND order_id = 1", args: []any{nil},
			reason: ReasonSingleShard,
			units:  []unitWant{{"ds_0", "select * from t_order_0 where user_id = ? and order_id = 1", []any{nil}}},
		},
		{
			name: "contradiction: one node answers", sql: "SELECT COUNT(*) FROM t_order WHERE user_id = 1 AND order_id = 1 AND order_id = 2",
			reason: ReasonSingleShard,
			units:  []unitWant{{"ds_0", "select count(*) from t_order_0 where user_id = 1 and order_id = 1 and order_id = 2", nil}},
		},
		{
			name: "binding join by key", sql: "SELECT i.* FROM t_order o JOIN t_order_item i ON o.order_id = i.order_id WHERE o.user_id = ? AND o.order_id = ?",
			args: []any{int64(1), int64(3)}, reason: ReasonSingleShard, tables: []string{"t_order", "t_order_item"},
			units: []unitWant{{"ds_1", "select i.* from t_order_3 as o join t_order_item_3 as i on o.order_id = i.order_id where o.user_id = ? and o.order_id = ?", []any{int64(1), int64(3)}}},
		},
		{
			name: "binding join, key on the item table", sql: "SELECT * FROM t_order o JOIN t_order_item i ON o.order_id = i.order_id WHERE i.user_id = 2 AND i.order_id = 1",
			reason: ReasonSingleShard,
			units:  []unitWant{{"ds_0", "select * from t_order_1 as o join t_order_item_1 as i on o.order_id = i.order_id where i.user_id = 2 and i.order_id = 1", nil}},
		},
		{
			name: "binding join without key: pairs by suffix", sql: "SELECT * FROM t_order o JOIN t_order_item i USING (order_id)",
			reason: ReasonAllShards, merge: &mergePlan{Limit: noLimit},
			units: func() []unitWant {
				var out []unitWant
				for d := 0; d < 2; d++ {
					for k := 0; k < 4; k++ {
						out = append(out, unitWant{ds: fmt.Sprintf("ds_%d", d),
							sql: fmt.Sprintf("select * from t_order_%d as o join t_order_item_%d as i using (order_id)", k, k)})
					}
				}
				return out
			}(),
		},
		{
			name: "inner join ON narrows", sql: "SELECT * FROM t_order o JOIN t_order_item i ON o.order_id = i.order_id AND i.user_id = 1 AND i.order_id = 2",
			reason: ReasonSingleShard,
			units:  []unitWant{{"ds_1", "select * from t_order_2 as o join t_order_item_2 as i on o.order_id = i.order_id and i.user_id = 1 and i.order_id = 2", nil}},
		},
		{
			name: "outer join ON does not narrow", sql: "SELECT * FROM t_order o LEFT JOIN t_order_item i ON o.order_id = i.order_id AND i.user_id = 1",
			reason: ReasonAllShards, merge: &mergePlan{Limit: noLimit},
			units: func() []unitWant {
				var out []unitWant
				for d := 0; d < 2; d++ {
					for k := 0; k < 4; k++ {
						out = append(out, unitWant{ds: fmt.Sprintf("ds_%d", d),
							sql: fmt.Sprintf("select * from t_order_%d as o left join t_order_item_%d as i on o.order_id = i.order_id and i.user_id = 1", k, k)})
					}
				}
				return out
			}(),
		},
		{
			name: "broadcast table joins anything", sql: "SELECT o.id, d.name FROM t_order o JOIN t_dict d ON d.id = o.kind WHERE o.user_id = 1 AND o.order_id = 1",
			reason: ReasonSingleShard, tables: []string{"t_order", "t_dict"},
			units: []unitWant{{"ds_1", "select o.id, d.`name` from t_order_1 as o join t_dict as d on d.id = o.kind where o.user_id = 1 and o.order_id = 1", nil}},
		},
		{
			name: "subquery over a broadcast table", sql: "SELECT id FROM t_order WHERE user_id = 1 AND order_id = 1 AND kind IN (SELECT id FROM t_dict WHERE name = ?)",
			args: []any{"a"}, reason: ReasonSingleShard,
			units: []unitWant{{"ds_1", "select id from t_order_1 where user_id = 1 and order_id = 1 and kind in (select id from t_dict where `name` = ?)", []any{"a"}}},
		},
		{
			name: "read without key bounded", rules: func(r *Rules) { r.MaxBroadcastShards = 4 },
			sql: "SELECT * FROM t_order", err: ErrTooManyShards, errHas: []string{"8 data nodes", "MaxBroadcastShards=4", "table t_order"},
		},
		{
			name: "read by key not bounded", rules: func(r *Rules) { r.MaxBroadcastShards = 1 },
			sql: "SELECT * FROM t_order WHERE user_id = 1 AND order_id = 2", reason: ReasonSingleShard,
			units: []unitWant{{"ds_1", "select * from t_order_2 where user_id = 1 and order_id = 2", nil}},
		},
		{
			name: "read without key refused", rules: func(r *Rules) { r.RefuseBroadcastReads = true },
			sql: "SELECT * FROM t_order WHERE status = 1", err: ErrNoShardKey,
			errHas: []string{"table t_order", "column user_id, order_id", "RefuseBroadcastReads"},
		},
		{
			name: "FOR UPDATE by key", sql: "SELECT * FROM t_order WHERE user_id = 1 AND order_id = 1 FOR UPDATE",
			reason: ReasonSingleShard,
			units:  []unitWant{{"ds_1", "select * from t_order_1 where user_id = 1 and order_id = 1 for update", nil}},
		},
	})
}

func TestRouteShardedWrites(t *testing.T) {
	runRouteCases(t, []routeCase{
		{
			name: "UPDATE by key", sql: "UPDATE t_order SET status = ? WHERE user_id = ? AND order_id = ?",
			args: []any{"paid", int64(1), int64(2)}, reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_1", "update t_order_2 set `status` = ? where user_id = ? and order_id = ?", []any{"paid", int64(1), int64(2)}}},
		},
		{
			name: "UPDATE over two shards", sql: "UPDATE t_order SET status = 'x' WHERE user_id IN (1, 2) AND order_id = 3",
			reason: ReasonMultiShard, write: true,
			units: []unitWant{
				{"ds_0", "update t_order_3 set `status` = 'x' where user_id in (1, 2) and order_id = 3", nil},
				{"ds_1", "update t_order_3 set `status` = 'x' where user_id in (1, 2) and order_id = 3", nil},
			},
		},
		{
			name:   "UPDATE with alias and bare qualifier",
			sql:    "UPDATE t_order SET t_order.status = 1 WHERE t_order.user_id = 2 AND t_order.order_id = 2",
			reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_0", "update t_order_2 as t_order set t_order.`status` = 1 where t_order.user_id = 2 and t_order.order_id = 2", nil}},
		},
		{
			name: "UPDATE … LIMIT on one shard", sql: "UPDATE t_order SET status = 1 WHERE user_id = 2 AND order_id = 2 ORDER BY id LIMIT 1",
			reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_0", "update t_order_2 set `status` = 1 where user_id = 2 and order_id = 2 order by id asc limit 1", nil}},
		},
		{
			name: "UPDATE … LIMIT over several shards", sql: "UPDATE t_order SET status = 1 WHERE user_id = 2 LIMIT 1",
			err: ErrUnsupported, errHas: []string{"LIMIT", "4 shards"},
		},
		{
			name: "UPDATE without key", sql: "UPDATE t_order SET status = 1 WHERE status = 0",
			err: ErrNoShardKey, errHas: []string{"table t_order", "column user_id, order_id"},
		},
		{
			name: "UPDATE with a key in only one OR branch", sql: "UPDATE t_order SET status = 1 WHERE user_id = 1 OR status = 0",
			err: ErrNoShardKey,
		},
		{
			name: "UPDATE of the sharding column", sql: "UPDATE t_order SET user_id = 3 WHERE user_id = 1 AND order_id = 1",
			err: ErrShardKeyUpdate, errHas: []string{"column user_id", "table t_order"},
		},
		{
			name: "UPDATE of the table sharding column through the alias", sql: "UPDATE t_order o SET o.order_id = 3 WHERE o.user_id = 1",
			err: ErrShardKeyUpdate, errHas: []string{"column order_id"},
		},
		{
			name: "multi-table UPDATE", sql: "UPDATE t_order o JOIN t_order_item i ON o.order_id = i.order_id SET i.status = 1 WHERE o.user_id = 1 AND o.order_id = 1",
			err: ErrUnsupported, errHas: []string{"multi-table UPDATE"},
		},
		{
			name: "DELETE by key", sql: "DELETE FROM t_order WHERE user_id = ? AND order_id = ?", args: []any{int64(3), int64(4)},
			reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_1", "delete from t_order_0 where user_id = ? and order_id = ?", []any{int64(3), int64(4)}}},
		},
		{
			name:   "DELETE with alias: qualifiers become the physical table (MariaDB has no DELETE … AS)",
			sql:    "DELETE FROM t_order AS o WHERE o.user_id = 3 AND o.order_id = 4",
			reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_1", "delete from t_order_0 where t_order_0.user_id = 3 and t_order_0.order_id = 4", nil}},
		},
		{
			name: "DELETE t FROM t", sql: "DELETE o FROM t_order o WHERE o.user_id = 3 AND o.order_id = 4",
			reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_1", "delete from t_order_0 where t_order_0.user_id = 3 and t_order_0.order_id = 4", nil}},
		},
		{
			name: "DELETE without key", sql: "DELETE FROM t_order", err: ErrNoShardKey,
			errHas: []string{"table t_order"},
		},
		{
			name: "multi-table DELETE", sql: "DELETE o, i FROM t_order o JOIN t_order_item i ON o.order_id = i.order_id WHERE o.user_id = 1 AND o.order_id = 1",
			err: ErrUnsupported, errHas: []string{"multi-table DELETE"},
		},
		{
			name: "DELETE of a sharded table with a subquery over a sharded table not linked",
			sql:  "DELETE FROM t_order WHERE user_id = 1 AND status IN (SELECT status FROM t_order_item)",
			err:  ErrUnsupported, errHas: []string{"subquery"},
		},
	})
}

func TestRouteDDL(t *testing.T) {
	runRouteCases(t, []routeCase{
		{
			name: "CREATE TABLE on every data node", sql: "CREATE TABLE t_order (order_id BIGINT PRIMARY KEY, user_id INT)",
			reason: ReasonAllShards, write: true,
			units: routeEvery8("create table %s (\n\torder_id BIGINT primary key,\n\tuser_id INT\n)"),
		},
		{
			name: "CREATE TABLE IF NOT EXISTS, database-qualified", sql: "CREATE TABLE IF NOT EXISTS shop.t_order (order_id BIGINT)",
			reason: ReasonAllShards, write: true,
			units: routeEvery8("create table if not exists %s (\n\torder_id BIGINT\n)"),
		},
		{
			name: "ALTER TABLE", sql: "ALTER TABLE t_order ADD COLUMN note VARCHAR(20)", reason: ReasonAllShards, write: true,
			units: routeEvery8("alter table %s add column note VARCHAR(20)"),
		},
		{
			name: "CREATE INDEX", sql: "CREATE INDEX idx_user ON t_order (user_id)", reason: ReasonAllShards, write: true,
			units: routeEvery8("alter table %s add key idx_user (user_id)"),
		},
		{
			name: "TRUNCATE", sql: "TRUNCATE TABLE t_order", reason: ReasonAllShards, write: true,
			units: routeEvery8("truncate table %s"),
		},
		{
			name: "DROP TABLE of binding tables: pairs by suffix", sql: "DROP TABLE IF EXISTS t_order, t_order_item",
			reason: ReasonAllShards, write: true,
			units: func() []unitWant {
				var out []unitWant
				for d := 0; d < 2; d++ {
					for k := 0; k < 4; k++ {
						out = append(out, unitWant{ds: fmt.Sprintf("ds_%d", d),
							sql: fmt.Sprintf("drop table if exists t_order_%d, t_order_item_%d", k, k)})
					}
				}
				return out
			}(),
		},
		{
			name: "DROP TABLE of a sharded and a default table: per data source", sql: "DROP TABLE t_order, t_user",
			reason: ReasonAllShards, write: true, tables: []string{"t_order", "t_user"},
			units: []unitWant{
				{"ds_0", "drop table t_order_0, t_order_1, t_order_2, t_order_3, t_user", nil},
				{"ds_1", "drop table t_order_0, t_order_1, t_order_2, t_order_3", nil},
			},
		},
		{
			name:   "CREATE TABLE referencing a binding table: the paired physical table",
			sql:    "CREATE TABLE t_order_item (order_id INT, FOREIGN KEY (order_id) REFERENCES t_order (order_id))",
			reason: ReasonAllShards, write: true,
			units: func() []unitWant {
				var out []unitWant
				for d := 0; d < 2; d++ {
					for k := 0; k < 4; k++ {
						out = append(out, unitWant{ds: fmt.Sprintf("ds_%d", d), sql: fmt.Sprintf(
							"create table t_order_item_%d (\n\torder_id INT,\n\tforeign key (order_id) references t_order_%d (order_id)\n)", k, k)})
					}
				}
				return out
			}(),
		},
		{
			name: "CREATE TABLE referencing a broadcast table", sql: "CREATE TABLE t_order (kind INT, FOREIGN KEY (kind) REFERENCES t_dict (id))",
			reason: ReasonAllShards, write: true,
			units: routeEvery8("create table %s (\n\tkind INT,\n\tforeign key (kind) references t_dict (id)\n)"),
		},
		{
			name:   "CREATE TABLE with a named constraint: renamed per physical table",
			sql:    "CREATE TABLE t_order (kind INT, CONSTRAINT fk_kind FOREIGN KEY (kind) REFERENCES t_dict (id), CONSTRAINT chk CHECK (kind > 0))",
			reason: ReasonAllShards, write: true,
			units: routeEvery8("create table %s (\n\tkind INT,\n\tconstraint fk_kind_%s foreign key (kind) references t_dict (id),\n\tconstraint chk_%s check (kind > 0)\n)"),
		},
		{
			name:   "ALTER TABLE ADD CONSTRAINT: renamed per physical table",
			sql:    "ALTER TABLE t_order ADD CONSTRAINT fk_kind FOREIGN KEY (kind) REFERENCES t_dict (id)",
			reason: ReasonAllShards, write: true,
			units: routeEvery8("alter table %s add constraint fk_kind_%s foreign key (kind) references t_dict (id)"),
		},
		{
			name: "ALTER TABLE DROP FOREIGN KEY: the renamed one",
			sql:  "ALTER TABLE t_order DROP FOREIGN KEY fk_kind", reason: ReasonAllShards, write: true,
			units: routeEvery8("alter table %s drop foreign key fk_kind_%s"),
		},
		{
			name: "DROP TABLE of a sharded and a broadcast table: once per data source", sql: "DROP TABLE t_order, t_dict",
			reason: ReasonAllShards, write: true,
			units: []unitWant{
				{"ds_0", "drop table t_order_0, t_order_1, t_order_2, t_order_3, t_dict", nil},
				{"ds_1", "drop table t_order_0, t_order_1, t_order_2, t_order_3, t_dict", nil},
			},
		},
		{
			name: "RENAME TABLE", sql: "RENAME TABLE t_order TO t_order_old", err: ErrUnsupported,
			errHas: []string{"t_order"},
		},
		{
			name: "SHOW CREATE TABLE", sql: "SHOW CREATE TABLE t_order", err: ErrUnsupported,
			errHas: []string{"t_order"},
		},
		{
			name: "OPTIMIZE TABLE (the AST loses the table): read from its tokens", sql: "OPTIMIZE TABLE t_order",
			reason: ReasonAllShards, merge: &mergePlan{Limit: noLimit},
			units: []unitWant{
				{"ds_0", "OPTIMIZE TABLE t_order_0, t_order_1, t_order_2, t_order_3", nil},
				{"ds_1", "OPTIMIZE TABLE t_order_0, t_order_1, t_order_2, t_order_3", nil},
			},
		},
		{
			name: "OPTIMIZE TABLE in a form rwshard does not read", sql: "OPTIMIZE TABLE t_order WAIT 3", err: ErrUnsupported,
			errHas: []string{"OPTIMIZE naming table t_order"},
		},
		{
			name: "CREATE VIEW over a sharded table, the view not sharded", sql: "CREATE VIEW v AS SELECT * FROM t_order", err: ErrUnsupported,
			errHas: []string{"view v over sharded table t_order", "table v, t_order"},
		},
	})
}

func TestRouteRefusals(t *testing.T) {
	runRouteCases(t, []routeCase{
		{
			name: "join of non-binding sharded tables", sql: "SELECT * FROM t_order o JOIN t_account a ON a.user_id = o.user_id WHERE o.user_id = 1",
			err: ErrCrossShardJoin, errHas: []string{"t_order and t_account are not binding tables"},
		},
		{
			name: "binding join on the database column only: pairs of other tables would be missed",
			sql:  "SELECT * FROM t_order o JOIN t_order_item i ON o.user_id = i.user_id WHERE o.user_id = 1",
			err:  ErrCrossShardJoin, errHas: []string{"t_order.order_id = t_order_item.order_id"},
		},
		{
			name: "binding join on an inequality", sql: "SELECT * FROM t_order o JOIN t_order_item i ON o.order_id < i.order_id",
			err: ErrCrossShardJoin, errHas: []string{"binding tables t_order and t_order_item joined without"},
		},
		{
			name: "binding join without any condition", sql: "SELECT * FROM t_order, t_order_item WHERE t_order.user_id = 1",
			err: ErrCrossShardJoin, errHas: []string{"binding tables"},
		},
		{
			name: "self-join", sql: "SELECT * FROM t_order a JOIN t_order b ON a.order_id = b.parent_id",
			err: ErrCrossShardJoin, errHas: []string{"itself"},
		},
		{
			name: "sharded joined with a default table", sql: "SELECT * FROM t_order o JOIN t_user u ON u.id = o.user_id",
			err: ErrCrossShardJoin, errHas: []string{"t_order", "t_user", "default data source"},
		},
		{
			name: "UNION", sql: "SELECT id FROM t_order WHERE user_id = 1 UNION SELECT id FROM t_order_item WHERE user_id = 1",
			err: ErrUnsupported, errHas: []string{"UNION"},
		},
		{
			name: "subquery over a sharded table", sql: "SELECT * FROM t_dict WHERE id IN (SELECT kind FROM t_order)",
			err: ErrUnsupported, errHas: []string{"subquery", "table t_order"},
		},
		{
			name: "derived table with LIMIT", sql: "SELECT * FROM (SELECT * FROM t_order ORDER BY id LIMIT 10) x",
			err: ErrUnsupported, errHas: []string{"derived table"},
		},
		{
			name: "CTE", sql: "WITH x AS (SELECT * FROM t_order) SELECT * FROM x",
			err: ErrUnsupported, errHas: []string{"WITH"},
		},
		{
			name: "EXPLAIN", sql: "EXPLAIN SELECT * FROM t_order", err: ErrUnsupported, errHas: []string{"EXPLAIN"},
		},
		{
			name: "named bind variable", sql: "SELECT * FROM t_order WHERE user_id = :uid",
			err: ErrUnsupported, errHas: []string{":uid"},
		},
		{
			name: "SQL the parser rejects", sql: "SELEC * FROM t_order", err: ErrUnsupported,
			errHas: []string{"parser"},
		},
	})
}

func TestRouteErrorMessage(t *testing.T) {
	r := NewRouter(func() *Rules { r, _ := routeTestRules(); return r }())
	sql := "DELETE FROM t_order WHERE status = 'cancelled' AND created < NOW() - INTERVAL 30 DAY AND note LIKE '%spam%'"
	_, err := r.Route(sql, nil)
	require.Error(t, err)
	var re *RouteError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "t_order", re.Table)
	assert.Equal(t, "user_id, order_id", re.Column)
	assert.Equal(t, sql, re.SQL)
	assert.True(t, errors.Is(err, ErrNoShardKey))
	assert.Equal(t, `rwshard: shard: no shard key: an UPDATE, DELETE or INSERT … SELECT of a sharded table needs a condition on its sharding column `+
		`(table t_order, column user_id, order_id) in "DELETE FROM t_order WHERE status = '?' AND created < NOW() - INTERVAL 30 DAY AND…"`,
		err.Error())

	// Too few arguments for the placeholders.
	_, err = r.Route("SELECT * FROM t_order WHERE user_id = ? AND order_id = ?", routeArgs(int64(1)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "2 placeholders, got 1 arguments")

	// More arguments than placeholders: refused, not silently dropped.
	_, err = r.Route("SELECT * FROM t_order WHERE user_id = 100", routeArgs(int64(5)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "0 placeholders, got 1 arguments")

	// An algorithm's error names the table.
	_, err = r.Route("SELECT * FROM t_order WHERE user_id = ?", routeArgs(3.5))
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "rwshard: shard: test algorithm: 3.5 (float64) is not an integer (table t_order)"), err.Error())
}

// TestRouteAlgorithmTarget: an algorithm that names a target outside the
// data nodes is an error, not an empty answer.
func TestRouteAlgorithmTarget(t *testing.T) {
	rules, _ := routeTestRules()
	rules.Tables["t_order"].TableStrategy = &Strategy{Column: "order_id", AlgorithmName: "bad",
		Algorithm: AlgorithmFunc(func([]string, Value) (string, error) { return "t_order_9", nil })}
	r := NewRouter(rules)
	_, err := r.Route("SELECT * FROM t_order WHERE user_id = 1 AND order_id = 1", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `algorithm bad of column order_id chose "t_order_9", not one of t_order_0, t_order_1, t_order_2, t_order_3`)
	// AlgorithmFunc's ranges go everywhere.
	rt, err := r.Route("SELECT * FROM t_order WHERE user_id = 1 AND order_id > 1", nil)
	require.NoError(t, err)
	assert.Len(t, rt.Units, 4)
}

// TestRouteBadRule: a rule the router cannot use is an error, not a panic.
func TestRouteBadRule(t *testing.T) {
	rules, _ := routeTestRules()
	rules.Tables["t_order"].TableStrategy = &Strategy{Column: "order_id"}
	rules.Tables["t_account"].DataNodes = nil
	r := NewRouter(rules)
	_, err := r.Route("SELECT * FROM t_order WHERE user_id = 1", nil)
	assert.ErrorIs(t, err, ErrUnsupported)
	assert.Contains(t, err.Error(), "no algorithm")
	_, err = r.Route("SELECT * FROM t_account", nil)
	assert.ErrorIs(t, err, ErrUnsupported)
	assert.Contains(t, err.Error(), "no data nodes")
	// Binding tables of different layouts do not join.
	rules, _ = routeTestRules()
	rules.Tables["t_order_item"].DataNodes = routeTestNodes(2, 2, "t_order_item")
	r = NewRouter(rules)
	_, err = r.Route("SELECT * FROM t_order o JOIN t_order_item i USING (order_id) WHERE o.user_id = 1", nil)
	assert.ErrorIs(t, err, ErrCrossShardJoin)
	assert.Contains(t, err.Error(), "8 and 4 data nodes")
	_, err = r.Route("SELECT * FROM t_order_item WHERE user_id = 1 AND order_id = 3", nil)
	assert.NoError(t, err)
	// No rules at all.
	_, err = NewRouter(nil).Route("SELECT * FROM t", nil)
	assert.ErrorIs(t, err, ErrUnknownTable)
}

// TestRouteBuiltinMod routes with the package's own MOD algorithm.
func TestRouteBuiltinMod(t *testing.T) {
	mod2, err := NewAlgorithm("MOD", map[string]string{"sharding-count": "2"})
	require.NoError(t, err)
	mod4, err := NewAlgorithm("MOD", map[string]string{"sharding-count": "4"})
	require.NoError(t, err)
	rules, _ := routeTestRules()
	rules.Tables["t_order"].DatabaseStrategy = &Strategy{Column: "user_id", Algorithm: mod2, AlgorithmName: "MOD"}
	rules.Tables["t_order"].TableStrategy = &Strategy{Column: "order_id", Algorithm: mod4, AlgorithmName: "MOD"}
	r := NewRouter(rules)
	rt, err := r.Route("SELECT * FROM t_order WHERE user_id = ? AND order_id = ?", routeArgs(int64(7), int64(42)))
	require.NoError(t, err)
	assert.Equal(t, []unitWant{{"ds_1", "select * from t_order_2 where user_id = ? and order_id = ?", []any{int64(7), int64(42)}}}, routeUnits(rt))
}

// TestRouteCache: the analysis is cached per SQL text, bounded; routing
// the same text with other arguments routes anew.
func TestRouteCache(t *testing.T) {
	rules, _ := routeTestRules()
	r := NewRouter(rules)
	const sql = "SELECT * FROM t_order WHERE user_id = ? AND order_id = ?"
	a, err := r.Route(sql, routeArgs(int64(1), int64(1)))
	require.NoError(t, err)
	b, err := r.Route(sql, routeArgs(int64(2), int64(2)))
	require.NoError(t, err)
	assert.Equal(t, "ds_1", a.Units[0].DataSource)
	assert.Equal(t, "select * from t_order_1 where user_id = ? and order_id = ?", a.Units[0].SQL)
	assert.Equal(t, "ds_0", b.Units[0].DataSource)
	assert.Equal(t, "select * from t_order_2 where user_id = ? and order_id = ?", b.Units[0].SQL)
	assert.Equal(t, 1, r.cache.len())

	for i := 0; i < 3*routeCacheGeneration; i++ {
		_, err := r.Route(fmt.Sprintf("SELECT * FROM t_order WHERE user_id = %d AND order_id = 1", i), nil)
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, r.cache.len(), 2*routeCacheGeneration)
	// A text beyond the cacheable length still routes.
	long := "SELECT * FROM t_order WHERE user_id = 1 AND order_id = 1 AND note <> '" + strings.Repeat("x", routeCacheMaxSQL) + "'"
	n := r.cache.len()
	_, err = r.Route(long, nil)
	require.NoError(t, err)
	assert.Equal(t, n, r.cache.len())
}

// TestRouteConcurrent routes from many goroutines (run with -race).
func TestRouteConcurrent(t *testing.T) {
	rules, _ := routeTestRules()
	r := NewRouter(rules)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				user, order := int64(g), int64(i)
				rt, err := r.Route("SELECT * FROM t_order WHERE user_id = ? AND order_id = ?", routeArgs(user, order))
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, fmt.Sprintf("ds_%d", user%2), rt.Units[0].DataSource)
				assert.Equal(t, fmt.Sprintf("select * from t_order_%d where user_id = ? and order_id = ?", order%4), rt.Units[0].SQL)
				rt, err = r.Route(fmt.Sprintf("INSERT INTO t_order (user_id, note) VALUES (%d, 'n')", g), nil)
				if !assert.NoError(t, err) {
					return
				}
				assert.NotZero(t, rt.LastInsertID)
			}
		}(g)
	}
	wg.Wait()
}

// FuzzRoute: no panic on any SQL; what routes gives units whose SQL
// parses again, arguments matching its placeholders.
func FuzzRoute(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM t_order WHERE user_id = ? AND order_id = ?",
		"SELECT user_id, COUNT(*), AVG(amount) FROM t_order GROUP BY user_id ORDER BY 2 DESC LIMIT ?, ?",
		"SELECT *, t_order.x FROM shop.t_order WHERE order_id IN (1, ?, 3) OR user_id BETWEEN ? AND 9",
		"INSERT INTO t_order (user_id, note) VALUES (?, ?), (2, 'b') ON DUPLICATE KEY UPDATE note = VALUES(note)",
		"UPDATE t_order SET note = ? WHERE user_id = ? AND order_id = ?",
		"DELETE FROM t_order o WHERE o.user_id = 1 AND o.order_id = ?",
		"SELECT * FROM t_order o JOIN t_order_item i USING (order_id) JOIN t_dict d ON d.id = o.kind",
		"CREATE TABLE t_order (id INT)",
		"DROP TABLE t_order, t_order_item",
		"SELECT DISTINCT user_id FROM t_order ORDER BY MAX(amount) LIMIT 3",
		"SELECT status, COUNT(DISTINCT note), SUM(DISTINCT amount), AVG(DISTINCT amount) FROM t_order GROUP BY status ORDER BY 2 DESC LIMIT ?",
		"SELECT COUNT(DISTINCT user_id) AS n FROM t_order HAVING n > ? OR SUM(amount) IS NULL",
		"SELECT user_id, COUNT(*) AS c FROM t_order GROUP BY user_id HAVING c >= 2 AND NOT MAX(amount) <=> ? AND user_id <> 3 ORDER BY c LIMIT 1, ?",
		"INSERT INTO t_order VALUES (?, ?, 'x'), (2, 3, 'y')",
		"SELECT * FROM t_dict",
		"SELECT 1",
		"SELECT * FROM t_user WHERE id = ?",
		"REPLACE INTO t_order (user_id, order_id) VALUES (1, 2)",
		"INSERT INTO t_order (order_id, user_id) SELECT i.order_id, i.user_id FROM t_order_item i WHERE i.user_id = ? AND i.order_id = ?",
		"INSERT INTO t_order (order_id, user_id, note) SELECT order_id, user_id, d.v FROM t_order JOIN t_dict d ON d.k = 1 WHERE user_id IN (1, 2) ON DUPLICATE KEY UPDATE note = 'x'",
		// ShardingSphere parity (issue 14)
		"UPDATE t_order SET user_id = ?, note = 'x' WHERE user_id = ? AND order_id = 2",
		"UPDATE t_order o SET o.order_id = 3, o.user_id = o.user_id WHERE o.order_id = 3 AND o.user_id = 1",
		"SELECT * FROM t_order WHERE BINARY user_id = ? AND order_id = BINARY 2",
		"SELECT * FROM t_account WHERE BINARY user_id IN (BINARY 1, ?) OR CAST(user_id AS BINARY(2)) = 1",
		"ANALYZE TABLE t_order, t_dict, t_user",
		"/* c */ OPTIMIZE NO_WRITE_TO_BINLOG TABLE shop.t_account, `t_order_item`;",
		"CHECK TABLE t_order, t_account FOR UPGRADE QUICK",
		"CHECKSUM TABLES t_dict, t_order EXTENDED",
		"REPAIR LOCAL TABLE t_order USE_FRM",
		"ANALYZE TABLE t_account UPDATE HISTOGRAM ON user_id WITH 8 BUCKETS",
		"DROP TABLE IF EXISTS t_order, t_user, t_dict, t_account",
		"DROP TABLE t_account, t_account",
		"CREATE TABLE t_order_item (order_id INT, CONSTRAINT fk FOREIGN KEY (order_id) REFERENCES t_order (order_id) ON DELETE CASCADE)",
		"ALTER TABLE t_order ADD CONSTRAINT fk FOREIGN KEY (parent_id) REFERENCES shop.t_order (order_id), ADD FOREIGN KEY (k) REFERENCES t_dict (id)",
		"CREATE TABLE t_order (u INT REFERENCES t_user (id), a INT REFERENCES t_account (user_id))",
		"CREATE VIEW t_order_view AS SELECT o.order_id, o.user_id FROM t_order o JOIN t_dict d ON d.k = o.kind WHERE o.status = 'ok'",
		"DROP VIEW IF EXISTS t_order_view, v",
		"DELETE FROM shop.t_order WHERE shop.t_order.user_id = ? AND order_id = ?",
		// INSERT … SELECT without a column list, subqueries, derived tables
		"INSERT INTO t_order SELECT order_id, user_id, note FROM t_order_item WHERE user_id = ? AND order_id = ? ON DUPLICATE KEY UPDATE note = ?",
		"REPLACE INTO t_order SELECT t.order_id, t.user_id, t.note FROM (SELECT order_id, user_id, note FROM t_order WHERE user_id = ?) t WHERE t.order_id = ?",
		"SELECT * FROM t_order WHERE order_id IN (SELECT order_id FROM t_order_item WHERE user_id = ? AND order_id = ?)",
		"SELECT o.order_id FROM t_order o WHERE o.user_id IN (?, 2) AND EXISTS (SELECT 1 FROM t_order_item i WHERE i.order_id = o.order_id AND i.qty > ?) ORDER BY 1 LIMIT ?",
		"SELECT * FROM t_order o WHERE o.user_id = ? AND o.order_id = ? AND o.status IN (SELECT status FROM t_order_item i WHERE i.user_id = ? AND i.order_id = ?)",
		"SELECT d.s, COUNT(*) FROM (SELECT status AS s, user_id AS u FROM t_order) AS d WHERE d.u = ? GROUP BY d.s",
		"SELECT * FROM (SELECT id, content FROM t_order WHERE user_id = ? AND content IN (SELECT content FROM t_order_item WHERE user_id = ?)) AS temp",
		"SELECT * FROM t_dict WHERE k IN (SELECT status FROM t_order WHERE user_id = ? AND order_id = ?) AND NOT EXISTS (SELECT 1 FROM t_account a WHERE a.user_id = ?)",
		"DELETE FROM t_order WHERE user_id = ? AND order_id IN (SELECT order_id FROM t_order_item WHERE qty = 0)",
		"UPDATE t_order o SET o.note = (SELECT MAX(i.qty) FROM t_order_item i WHERE i.order_id = o.order_id) WHERE o.user_id = ? AND o.order_id BETWEEN ? AND ?",
	} {
		f.Add(s)
	}
	rules, _ := routeTestRules()
	r := NewRouter(rules)
	p := sqlparser.NewTestParser()
	args := routeArgs(int64(1), int64(2), int64(3), int64(4), int64(5), int64(6), int64(7), int64(8))
	physical := make(map[string]bool) // t_account's tables are named t_account
	for _, t := range rules.Tables {
		for _, n := range t.DataNodes {
			physical[n.Table] = true
		}
	}
	f.Fuzz(func(t *testing.T, sql string) {
		rt, err := r.RouteContext(context.Background(), sql, args[:min(countPlaceholders(sql), len(args))], testColumns)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "rwshard: shard: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		if len(rt.Units) == 0 {
			t.Fatalf("no units for %q", sql)
		}
		if err := routeCheckMerge(rt); err != nil {
			t.Fatalf("merge plan of %q: %v", sql, err)
		}
		for _, u := range rt.Units {
			if u.SQL == sql {
				continue // as it came
			}
			if routeUnparsed(u.SQL) {
				// A maintenance statement per data source: no
				// placeholders, no logical name of a sharded table left.
				if n := countPlaceholders(u.SQL); n != len(u.Args) {
					t.Fatalf("%d placeholders, %d args: %q from %q", n, len(u.Args), u.SQL, sql)
				}
				if name := r.mentionedTable(u.SQL, nil); name != "" && r.tables[name] != nil && !physical[name] {
					t.Fatalf("logical table %s in %q from %q", name, u.SQL, sql)
				}
				continue
			}
			stmt, err := p.Parse(u.SQL)
			if err != nil {
				t.Fatalf("unit SQL does not parse: %q from %q: %v", u.SQL, sql, err)
			}
			switch stmt.(type) {
			case *sqlparser.Select, *sqlparser.Insert, *sqlparser.Update, *sqlparser.Delete:
				// One data node per unit: every physical table of the
				// binding group t_order, t_order_item (subqueries
				// included) has the same suffix.
				if suffixes := bindingSuffixes(u.SQL); len(suffixes) > 1 {
					t.Fatalf("unit %q from %q names the tables of several nodes: %v", u.SQL, sql, suffixes)
				}
			}
			if n := countPlaceholders(u.SQL); n != len(u.Args) {
				t.Fatalf("%d placeholders, %d args: %q from %q", n, len(u.Args), u.SQL, sql)
			}
		}
	})
}

// bindingSuffixes returns the node suffixes of the physical tables of
// t_order and t_order_item that sql names.
func bindingSuffixes(sql string) map[string]bool {
	out := make(map[string]bool)
	tkn := sqlparser.NewTestParser().NewStringTokenizer(sql)
	for {
		typ, val := tkn.Scan()
		if typ == 0 || typ == sqlparser.LEX_ERROR {
			return out
		}
		if typ != sqlparser.ID {
			continue
		}
		for _, prefix := range []string{"t_order_item_", "t_order_"} {
			if n, ok := strings.CutPrefix(strings.ToLower(val), prefix); ok && n != "" && strings.Trim(n, "0123456789") == "" {
				out[n] = true
				break
			}
		}
	}
}

// countPlaceholders counts the '?' tokens of sql.
func countPlaceholders(sql string) int {
	tkn := sqlparser.NewTestParser().NewStringTokenizer(sql)
	n := 0
	for {
		typ, _ := tkn.Scan()
		if typ == 0 || typ == sqlparser.LEX_ERROR {
			return n
		}
		if typ == sqlparser.VALUE_ARG {
			n++
		}
	}
}

var _ = driver.NamedValue{}
