package shard_test

import (
	"database/sql/driver"
	"fmt"
	"strings"

	"github.com/rwshard/rwshard/shard"
)

// ExampleRouter routes statements of a table sharded over two data
// sources by user_id and over two tables in each by order_id.
func ExampleRouter() {
	mod2, _ := shard.NewAlgorithm("MOD", map[string]string{"sharding-count": "2"})
	rules := &shard.Rules{
		Tables: map[string]*shard.TableRule{
			"t_order": {
				Logical: "t_order",
				DataNodes: []shard.DataNode{
					{DataSource: "ds_0", Table: "t_order_0"}, {DataSource: "ds_0", Table: "t_order_1"},
					{DataSource: "ds_1", Table: "t_order_0"}, {DataSource: "ds_1", Table: "t_order_1"},
				},
				DatabaseStrategy: &shard.Strategy{Column: "user_id", Algorithm: mod2, AlgorithmName: "MOD"},
				TableStrategy:    &shard.Strategy{Column: "order_id", Algorithm: mod2, AlgorithmName: "MOD"},
			},
		},
		DefaultDataSource: "ds_0",
	}
	r := shard.NewRouter(rules)
	args := []driver.NamedValue{{Ordinal: 1, Value: int64(3)}, {Ordinal: 2, Value: int64(10)}}

	rt, _ := r.Route("SELECT status FROM t_order WHERE user_id = ? AND order_id = ?", args)
	fmt.Println(rt.Reason, rt.Units[0].DataSource, rt.Units[0].SQL)

	rt, _ = r.Route("SELECT user_id, COUNT(*) FROM t_order GROUP BY user_id LIMIT 10, 5", nil)
	// The select list gains the weight column of user_id, in case it is
	// text in a collation the merge must follow; the rest:
	sql := rt.Units[0].SQL
	fmt.Println(rt.Reason, len(rt.Units), "…", strings.TrimSpace(sql[strings.LastIndex(sql, " from "):]))

	_, err := r.Route("UPDATE t_order SET status = 'paid' WHERE status = 'new'", nil)
	fmt.Println(err)
	// Output:
	// single-shard ds_1 select `status` from t_order_0 where user_id = ? and order_id = ?
	// all-shards 4 … from t_order_0 group by user_id order by user_id asc limit 0, 15
	// rwshard: shard: no shard key: an UPDATE, DELETE or INSERT … SELECT of a sharded table needs a condition on its sharding column (table t_order, column user_id, order_id) in "UPDATE t_order SET status = '?' WHERE status = '?'"
}
