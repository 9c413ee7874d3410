package labtest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rwshard/rwshard/internal/lab"
)

// shardRules is the sharding of the tests on a lab.Sharded(): t_order and
// t_order_item (binding) in ds_${0..1}.t_…_${0..1}, by user_id % 2 then
// order_id % 2; t_dict broadcast; everything else (ref_order, the
// unsharded reference copy) in ds_0.
const shardRules = `
dataSources:
  ds_0: {primary: "%s", replicas: ["%s"]}
  ds_1: {primary: "%s", replicas: ["%s"]}
defaultDataSource: ds_0
tables:
  t_order:
    dataNodes: ds_${0..1}.t_order_${0..1}
    databaseStrategy: {column: user_id, algorithm: db_mod}
    tableStrategy: {column: order_id, algorithm: t_mod}
    keyGenerator: {column: order_id, generator: snowflake}
  t_order_item:
    dataNodes: ds_${0..1}.t_order_item_${0..1}
    databaseStrategy: {column: user_id, algorithm: db_mod}
    tableStrategy: {column: order_id, algorithm: t_mod}
bindingTables: [[t_order, t_order_item]]
broadcastTables: [t_dict]
algorithms:
  db_mod: {type: MOD, props: {sharding-count: 2}}
  t_mod: {type: MOD, props: {sharding-count: 2}}
keyGenerators:
  snowflake: {type: SNOWFLAKE, props: {worker-id: 7}}
`

// RulesFile writes the tests' sharding rules for l (two groups, each a
// primary and a replica) into a temporary file and returns its path.
func RulesFile(t testing.TB, l *lab.Lab) string {
	t.Helper()
	return rulesFile(t, l, func(n *lab.Node) string { return n.DSN("") })
}

// PlainRulesFile is RulesFile with the data sources as lab.PlainUser, who
// has GRANT ALL ON app.* and nothing more.
func PlainRulesFile(t testing.TB, l *lab.Lab) string {
	t.Helper()
	return rulesFile(t, l, PlainNodeDSN)
}

// PlainNodeDSN is a go-sql-driver DSN of node n as lab.PlainUser.
func PlainNodeDSN(n *lab.Node) string { return n.UserDSN(lab.PlainUser, lab.PlainPassword, "") }

func rulesFile(t testing.TB, l *lab.Lab, dsn func(*lab.Node) string) string {
	t.Helper()
	var dsns []any
	for _, g := range l.Groups {
		dsns = append(dsns, dsn(g.Primary()), dsn(g.Replicas()[0]))
	}
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(shardRules, dsns...)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
