package shard_test

import (
	"fmt"

	"github.com/rwshard/rwshard/shard"
)

func ExampleParseYAML() {
	cfg, err := shard.ParseYAML([]byte(`
dataSources:
  ds_0: {primary: "app:pw@tcp(10.0.0.1:3306)/shop_0"}
  ds_1: {primary: "app:pw@tcp(10.0.1.1:3306)/shop_1"}
tables:
  t_order:
    dataNodes: ds_${0..1}.t_order_${0..1}
    databaseStrategy: {column: user_id, algorithm: db_mod}
    tableStrategy: {column: order_id, algorithm: t_mod}
algorithms:
  db_mod: {type: MOD, props: {sharding-count: 2}}
  t_mod: {type: MOD, props: {sharding-count: 2}}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	rules, err := cfg.Build(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range rules.Tables["t_order"].DataNodes {
		fmt.Println(n)
	}
	// Output:
	// ds_0.t_order_0
	// ds_0.t_order_1
	// ds_1.t_order_0
	// ds_1.t_order_1
}

func ExampleConfig_Build() {
	cfg, _ := shard.ParseYAML([]byte(`
dataSources:
  ds_0: {primary: "app:pw@tcp(10.0.0.1:3306)/shop_0"}
tables:
  t_order:
    dataNodes: ds_0.t_order_0, ds_0.t_order_1
    tableStrategy: {column: order_id, algorithm: t_mod}
algorithms:
  t_inline: {type: INLINE, props: {algorithm-expression: "t_order_${order_id % 2}"}}
`))
	_, err := cfg.Build(nil)
	fmt.Println(err)
	// Output:
	// rwshard: config line 7: tables.t_order.tableStrategy.algorithm: "t_mod" is not defined; algorithms: t_inline
}
