package main

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/rwshard/rwshard/shard"
)

// writeRules writes a rules file and returns its path.
func writeRules(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rules.yaml")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

// lineOf is the line number of the first line of text that contains s.
func lineOf(t *testing.T, text, s string) string {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return strconv.Itoa(i + 1)
		}
	}
	t.Fatalf("no %q in the rules", s)
	return ""
}

// labDataSources is the dataSources section of rules over the groups of
// a sharded lab.
func labDataSources(l *lab.Lab) string {
	var ds []string
	for _, g := range l.Groups {
		ds = append(ds, fmt.Sprintf("  %s: {primary: %q, replicas: [%q]}", g.Name, g.Primary().DSN(""), g.Replicas()[0].DSN("")))
	}
	return "dataSources:\n" + strings.Join(ds, "\n") + "\ndefaultDataSource: ds_0\n"
}

// modRules are the tables of shardedTables, t_order's table strategy MOD
// with sharding-count (4: more remainders than tables).
func modRules(count int) string {
	return fmt.Sprintf(`tables:
  t_order:
    dataNodes: ds_${0..1}.t_order_${0..1}
    databaseStrategy: {column: user_id, algorithm: db_mod}
    tableStrategy: {column: order_id, algorithm: t_mod}
  t_order_item:
    dataNodes: ds_${0..1}.t_order_item_${0..1}
    databaseStrategy: {column: user_id, algorithm: db_mod}
    tableStrategy: {column: order_id, algorithm: item_mod}
broadcastTables: [t_dict]
algorithms:
  db_mod: {type: MOD, props: {sharding-count: 2}}
  t_mod: {type: MOD, props: {sharding-count: %d}}
  item_mod: {type: MOD, props: {sharding-count: 2}}
`, count)
}

// check on a sharded lab: the rules are proved before the servers are
// looked at, every problem named; then the data nodes, their tables,
// sharding columns and the kinds of their types.
func TestCheckRulesAndDataNodes(t *testing.T) {
	l := labtest.Fresh(t, lab.Sharded())
	shardedTables(t, l)

	t.Run("MOD 4 over 2 tables", func(t *testing.T) {
		text := labDataSources(l) + modRules(4)
		p := writeRules(t, text)
		line := lineOf(t, text, "tableStrategy: {column: order_id, algorithm: t_mod}")
		want := p + ":" + line + ": tables.t_order.tableStrategy.algorithm: table t_order: table strategy t_mod = MOD(sharding-count=4) on order_id " +
			"picks tables data sources ds_0, ds_1 do not have: t_order_2 (order_id mod 4 = 2), t_order_3 (order_id mod 4 = 3); each has [t_order_0 t_order_1]"

		r := cli(t, "check", p)
		assert.Equal(t, exitProblem, r.code, r)
		assert.Contains(t, r.stdout, "rules "+p+": 2 sharded tables, 2 data sources, 1 broadcast table\n\nproblems:\n  - "+want+"\n")
		assert.Contains(t, r.stdout, "1 problem found in the rules: sql.Open refuses them")
		// The servers are still checked: the rules name them.
		for _, g := range l.Groups {
			assert.Contains(t, r.stdout, "data nodes: 5 of 5 tables found in database app on "+g.Name+"-primary, sharding columns present")
		}
		assert.Equal(t, 2, strings.Count(r.stdout, "ok: 2 nodes and 5 data nodes checked"), "the data sources themselves are fine")
		assert.NotContains(t, r.stdout+r.stderr, lab.AppPassword)

		r = cli(t, "check", "-json", p)
		assert.Equal(t, exitProblem, r.code, r)
		rep := decodeCheck(t, r.stdout)
		assert.Equal(t, 1, rep.Problems)
		require.NotNil(t, rep.Rules)
		assert.True(t, rep.Rules.Loaded)
		assert.Equal(t, 2, rep.Rules.Tables)
		assert.Equal(t, []ruleProblemJSON{{Message: want, File: p, Line: atoi(t, line), Key: "tables.t_order.tableStrategy.algorithm",
			Table: "t_order", Strategy: "table", Algorithm: "t_mod", DataSources: []string{"ds_0", "ds_1"},
			Missing: []string{"t_order_2", "t_order_3"}}}, rep.Rules.Problems)
		require.Len(t, rep.Groups, 2)
		for _, g := range rep.Groups {
			assert.Empty(t, g.Problems, g.Name)
		}

		// sql.Open refuses the same rules, with the same words.
		_, err := sql.Open("rwshard", "/?rwshard.rulesFile="+url.QueryEscape(p))
		require.Error(t, err)
		assert.Contains(t, err.Error(), strings.TrimPrefix(want, p+":"+line+": "))
		assert.True(t, errors.Is(err, shard.ErrNoTarget), "%v", err)

		// Two remainders for two tables: proved.
		r = cli(t, "check", writeRules(t, labDataSources(l)+modRules(2)))
		assert.Equal(t, exitOK, r.code, r)
		assert.Contains(t, r.stdout, "ok: every target the rules can pick is a data node\n")
	})

	t.Run("missing table, column, kind of type", func(t *testing.T) {
		ds0, ds1 := l.Groups[0], l.Groups[1]
		defer onPrimary(t, ds0, "DROP TABLE t_order_item_1",
			"CREATE TABLE t_order_item_1 (item_id BIGINT PRIMARY KEY, order_id BIGINT, user_id INT)")()
		defer onPrimary(t, ds0, "ALTER TABLE t_order_1 DROP COLUMN user_id",
			"ALTER TABLE t_order_1 ADD COLUMN user_id INT NOT NULL")()
		defer onPrimary(t, ds1, "ALTER TABLE t_order_item_0 MODIFY order_id VARCHAR(20)",
			"ALTER TABLE t_order_item_0 MODIFY order_id BIGINT")()
		p := labtest.RulesFile(t, l) // t_order and t_order_item bound
		r := cli(t, "check", p)
		assert.Equal(t, exitProblem, r.code, r)
		assert.Contains(t, r.stdout, "ok: every target the rules can pick is a data node\n")
		assert.Contains(t, r.stdout, "ds_0: no table t_order_item_1 in database app: data node ds_0.t_order_item_1 of logical table t_order_item")
		assert.Contains(t, r.stdout, "ds_0: table t_order_1 has no column user_id: the database sharding column of logical table t_order")
		kinds := "ds_1: the table sharding columns of binding tables t_order and t_order_item are of different kinds of type: " +
			"t_order_0.order_id is bigint(20), t_order_item_0.order_id is varchar(20): a key is read, compared and routed alike only in columns of one kind"
		assert.Contains(t, r.stdout, kinds)
		assert.Contains(t, r.stdout, "2 problems found (2 nodes and 5 data nodes checked")
		assert.Contains(t, r.stdout, "1 problem found (2 nodes and 5 data nodes checked")

		r = cli(t, "check", "-json", p)
		assert.Equal(t, exitProblem, r.code, r)
		rep := decodeCheck(t, r.stdout)
		assert.Equal(t, 3, rep.Problems)
		require.NotNil(t, rep.Rules)
		assert.Empty(t, rep.Rules.Problems)
		assert.Equal(t, []string{kinds}, rep.Groups[1].Problems)
		item0 := rep.Groups[1].DataNodes.Tables[2]
		require.Equal(t, "t_order_item_0", item0.Table)
		assert.Equal(t, map[string]string{"user_id": "int(11)", "order_id": "varchar(20)"}, item0.ColumnTypes)
	})
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// Rules that do not build: check says why, checks no server, and exits 1;
// in JSON too. Nothing is contacted, so no lab is needed.
func TestCheckRulesNotLoaded(t *testing.T) {
	const secret = "Rules-Secret-77"
	text := `dataSources:
  ds_0: {primary: "app:` + secret + `@tcp(192.0.2.1:3306)/app"}
  ds_1: {primary: "app:` + secret + `@tcp(192.0.2.2:3306)/app"}
tables:
  t_order:
    dataNodes: ds_${0..1}.t_order_${0..1}
    databaseStrategy: {column: user_id, algorithm: mod2}
    tableStrategy: {column: order_id, algorithm: mod2}
  t_order_item:
    dataNodes: ds_${0..1}.t_order_item_${[1,0]}
    databaseStrategy: {column: user_id, algorithm: mod2}
    tableStrategy: {column: order_id, algorithm: mod2}
bindingTables: [[t_order, t_order_item]]
algorithms:
  mod2: {type: MOD, props: {sharding-count: 2}}
`
	p := writeRules(t, text)
	want := p + ":" + lineOf(t, text, "bindingTables") + ": bindingTables[0][1]: data node 0 of t_order_item is ds_0.t_order_item_1, " +
		"of t_order is ds_0.t_order_0: binding tables need tables with the same suffixes, in the same order"
	r := cli(t, "check", p)
	assert.Equal(t, exitProblem, r.code, r)
	assert.Equal(t, "rules "+p+": not loaded\n\nproblems:\n  - "+want+"\n\n1 problem found in the rules: sql.Open refuses them\n\n", r.stdout)
	assert.Empty(t, r.stderr)

	r = cli(t, "check", p, "-json")
	assert.Equal(t, exitProblem, r.code, r)
	rep := decodeCheck(t, r.stdout)
	assert.Equal(t, 1, rep.Problems)
	assert.Empty(t, rep.Groups)
	require.NotNil(t, rep.Rules)
	assert.False(t, rep.Rules.Loaded)
	require.Len(t, rep.Rules.Problems, 1)
	assert.Equal(t, want, rep.Rules.Problems[0].Message)
	assert.Equal(t, "bindingTables[0][1]", rep.Rules.Problems[0].Key)
	assert.NotContains(t, r.stdout+r.stderr, secret)
}

// The rules' part of the text report lists what could not be proved
// without making it a problem.
func TestRulesCheckPrint(t *testing.T) {
	rc := &rulesCheck{file: "r.yaml", rules: &shard.Rules{DataSources: map[string]*shard.DataSource{"ds_0": {}}},
		unproven: []string{"table t_a: table strategy by_len on id not proved: a custom algorithm: rwshard cannot list what it picks"}}
	var b strings.Builder
	rc.print(&b)
	assert.Equal(t, "rules r.yaml: 0 sharded tables, 1 data source\n\n"+
		"not proved (custom algorithms, targets that cannot be listed):\n"+
		"  - table t_a: table strategy by_len on id not proved: a custom algorithm: rwshard cannot list what it picks\n\n"+
		"ok: every target the rules can pick is a data node, but for 1 strategy not proved\n\n", b.String())
	j := rc.json()
	assert.True(t, j.Loaded)
	assert.Empty(t, j.Problems)
	assert.Equal(t, rc.unproven, j.NotProved)
}

func TestTypeKind(t *testing.T) {
	for _, c := range [][2]string{{"bigint", "integer"}, {"INT", "integer"}, {"varchar", "string"}, {"datetime", "time"},
		{"decimal", "number"}, {"varbinary", "binary"}, {"geometry", "geometry"}} {
		assert.Equal(t, c[1], typeKind(c[0]), c[0])
	}
}

// The rules lab up writes, in both dialects, for two and three groups:
// proved, and every integer key routes, in-process, to one data node.
func TestLabRulesRouteEveryKey(t *testing.T) {
	for _, groups := range []int{2, 3} {
		s := &lab.State{Dir: t.TempDir()}
		for g := range groups {
			name := fmt.Sprintf("ds_%d", g)
			s.Nodes = append(s.Nodes,
				lab.NodeState{Name: name + "-primary", Group: name, Primary: true, Port: 20000 + 2*g},
				lab.NodeState{Name: name + "-replica1", Group: name, Port: 20001 + 2*g})
		}
		for dialect, text := range map[string]string{
			"rwshard":        nativeRules(s, "self.yaml", "other.yaml"),
			"ShardingSphere": shardingSphereRules(s, "self.yaml", "other.yaml"),
		} {
			t.Run(fmt.Sprintf("%s, %d groups", dialect, groups), func(t *testing.T) {
				sc, err := shard.ParseYAML([]byte(text))
				require.NoError(t, err)
				rules, err := sc.Build(nil)
				require.NoError(t, err)
				r := shard.NewRouter(rules)
				rng := rand.New(rand.NewPCG(uint64(groups), 7))
				keys := []int64{-1 << 63, 1<<63 - 1}
				for k := int64(-40); k <= 40; k++ {
					keys = append(keys, k)
				}
				for range 200 {
					keys = append(keys, int64(rng.Uint64()))
				}
				for _, table := range []string{"t_order", "t_order_item"} {
					for i, user := range keys {
						order := keys[(i*7+3)%len(keys)]
						for _, sql := range []string{
							"SELECT * FROM " + table + " WHERE user_id = ?",
							"SELECT * FROM " + table + " WHERE order_id = ?",
						} {
							_, err := r.Route(sql, args(user))
							require.NoError(t, err, "%s: %d", sql, user)
						}
						rt, err := r.Route("INSERT INTO "+table+" (user_id, order_id) VALUES (?, ?)", args(user, order))
						require.NoError(t, err, "%s: user_id %d, order_id %d", table, user, order)
						require.Len(t, rt.Units, 1)
						ds := rt.Units[0].DataSource
						tbl := fmt.Sprintf("%s_%d", table, euclid(order, 2))
						assert.Equal(t, fmt.Sprintf("ds_%d", euclid(user, int64(groups))), ds)
						assert.Contains(t, rt.Units[0].SQL, tbl)
					}
				}
			})
		}
	}
}

// euclid is x mod n, never negative, as MOD has it.
func euclid(x, n int64) int64 {
	r := x % n
	if r < 0 {
		r += n
	}
	return r
}

func args(vals ...int64) []driver.NamedValue {
	out := make([]driver.NamedValue, len(vals))
	for i, v := range vals {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}
