package shard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
)

// proofSources is the head of the proof tests' rules: two data sources.
const proofSources = `
dataSources:
  ds_0: {primary: "u:p@tcp(h0:3306)/db"}
  ds_1: {primary: "u:p@tcp(h1:3306)/db"}
`

// proofInterval is an INTERVAL algorithm of six months, 2024-01 to
// 2024-06, suffixes yyyyMM.
const proofInterval = `{type: INTERVAL, props: {datetime-pattern: "yyyy-MM-dd HH:mm:ss",
    datetime-lower: "2024-01-01 00:00:00", datetime-upper: "2024-06-30 23:59:59",
    sharding-suffix-pattern: yyyyMM, datetime-interval-unit: MONTHS}}`

// proofCases are rules the proof refuses (err set) or accepts; the
// accepted ones are also routed key by key in TestProvedRulesRoute.
var proofCases = []struct {
	name string
	yaml string // after proofSources
	err  string // a substring of Build's error; "" when accepted
}{
	{"MOD 4 over 2 tables", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${0..1}
    tableStrategy: {column: order_id, algorithm: t_mod}
algorithms:
  t_mod: {type: MOD, props: {sharding-count: 4}}
`, "tables.t_order.tableStrategy.algorithm: table t_order: table strategy t_mod = MOD(sharding-count=4) on order_id " +
		"picks tables data source ds_0 does not have: t_order_2 (order_id mod 4 = 2), t_order_3 (order_id mod 4 = 3); it has [t_order_0 t_order_1]"},
	{"MOD 2 over 2 tables", `
tables:
  t_order:
    dataNodes: ds_${0..1}.t_order_${0..1}
    databaseStrategy: {column: user_id, algorithm: mod2}
    tableStrategy: {column: order_id, algorithm: mod2}
algorithms:
  mod2: {type: MOD, props: {sharding-count: 2}}
`, ""},
	{"MOD 4 over 2 data sources", `
tables:
  t_user:
    dataNodes: ds_0.t_user, ds_1.t_user
    databaseStrategy: {column: user_id, algorithm: db_mod}
algorithms:
  db_mod: {type: MOD, props: {sharding-count: 4}}
`, "tables.t_user.databaseStrategy.algorithm: table t_user: database strategy db_mod = MOD(sharding-count=4) on user_id " +
		"picks data sources the table has no data node in: ds_2 (user_id mod 4 = 2), ds_3 (user_id mod 4 = 3); its data nodes are in [ds_0 ds_1]"},
	{"default strategy, every data source short", `
tables:
  t_order:
    dataNodes: ds_${0..1}.t_order_${0..2}
    databaseStrategy: {column: user_id, algorithm: mod2}
defaultTableStrategy: {column: order_id, algorithm: mod4}
algorithms:
  mod2: {type: MOD, props: {sharding-count: 2}}
  mod4: {type: MOD, props: {sharding-count: 4}}
`, "defaultTableStrategy.algorithm: table t_order: table strategy mod4 = MOD(sharding-count=4) on order_id " +
		"picks tables data sources ds_0, ds_1 do not have: t_order_3 (order_id mod 4 = 3); each has [t_order_0 t_order_1 t_order_2]"},
	{"HASH_MOD 3 over 2 tables", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${0..1}
    tableStrategy: {column: order_id, algorithm: h}
algorithms:
  h: {type: HASH_MOD, props: {sharding-count: 3}}
`, "t_order_2 (xxhash(order_id) mod 3 = 2)"},
	{"SS_HASH_MOD 3 over 2 tables", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${0..1}
    tableStrategy: {column: order_id, algorithm: h}
algorithms:
  h: {type: SS_HASH_MOD, props: {sharding-count: 3}}
`, "t_order_2 (abs(hashCode(order_id)) mod 3 = 2)"},
	{"HASH_MOD over zero-padded tables", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${['00','01','02','03']}
    tableStrategy: {column: order_id, algorithm: h}
algorithms:
  h: {type: HASH_MOD, props: {sharding-count: 4}}
`, ""},
	{"MOD of huge sharding-count", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${0..1}
    tableStrategy: {column: order_id, algorithm: m}
algorithms:
  m: {type: MOD, props: {sharding-count: 2147483647}}
`, "t_order_9 (order_id mod 2147483647 = 9) and 2147483637 more"},
	{"MOD with two tables ending in 1", `
tables:
  t_order:
    dataNodes: ds_0.t_order_0, ds_0.t_order_1, ds_0.t_order_01
    tableStrategy: {column: order_id, algorithm: m}
algorithms:
  m: {type: MOD, props: {sharding-count: 2}}
`, "picks tables data source ds_0 does not have: several for order_id mod 2 = 1 (t_order_1, t_order_01)"},
	{"INLINE % 4 over 2 tables", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${0..1}
    tableStrategy: {column: order_id, algorithm: t_inline}
algorithms:
  t_inline: {type: INLINE, props: {algorithm-expression: "t_order_${order_id % 4}"}}
`, "table t_order: table strategy t_inline = INLINE(t_order_${order_id % 4}) on order_id picks tables data source ds_0 does not have: " +
		"t_order_2 (order_id = 2), t_order_3 (order_id = 3)"},
	{"INLINE to a misspelt table", `
tables:
  t_order:
    dataNodes: ds_${0..1}.t_order_${0..1}
    databaseStrategy: {column: user_id, algorithm: db_inline}
    tableStrategy: {column: order_id, algorithm: t_inline}
algorithms:
  db_inline: {type: INLINE, props: {algorithm-expression: "ds_${user_id % 2}"}}
  t_inline: {type: INLINE, props: {algorithm-expression: "t_ordr_${order_id % 2}"}}
`, "picks tables data sources ds_0, ds_1 do not have: t_ordr_0 (order_id = 0), t_ordr_1 (order_id = 1)"},
	{"INLINE to a data source not in the table", `
tables:
  t_order:
    dataNodes: ds_0.t_order
    databaseStrategy: {column: user_id, algorithm: db_inline}
algorithms:
  db_inline: {type: INLINE, props: {algorithm-expression: "ds_${user_id % 2}"}}
`, "picks data sources the table has no data node in: ds_1 (user_id = 1); its data nodes are in [ds_0]"},
	{"INLINE arithmetic", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${0..3}
    tableStrategy: {column: order_id, algorithm: t_inline}
algorithms:
  t_inline: {type: INLINE, props: {algorithm-expression: "t_order_${(order_id / 10 + 1) % 4}"}}
`, ""},
	{"INLINE arithmetic past the tables", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${0..3}
    tableStrategy: {column: order_id, algorithm: t_inline}
algorithms:
  t_inline: {type: INLINE, props: {algorithm-expression: "t_order_${order_id % 8 / 2 + order_id % 2}"}}
`, "t_order_4 (order_id = 7)"},
	{"INLINE constant", `
tables:
  t_order:
    dataNodes: ds_0.t_order_0, ds_0.t_order_1
    tableStrategy: {column: order_id, algorithm: t_inline}
algorithms:
  t_inline: {type: INLINE, props: {algorithm-expression: "t_order_${2}"}}
`, "t_order_2 (every order_id)"},
	{"BOUNDARY_RANGE boundary to a missing table", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${0..1}
    tableStrategy: {column: order_id, algorithm: r}
algorithms:
  r: {type: BOUNDARY_RANGE, props: {sharding-ranges: "10,20"}}
`, "table t_order: table strategy r = BOUNDARY_RANGE(sharding-ranges=10,20) on order_id picks tables data source ds_0 does not have: " +
		"t_order_2 (order_id >= 20)"},
	{"BOUNDARY_RANGE to a missing data source", `
tables:
  t_order:
    dataNodes: ds_${0..1}.t_order
    databaseStrategy: {column: order_id, algorithm: r}
algorithms:
  r: {type: BOUNDARY_RANGE, props: {sharding-ranges: "-5,1000,2000"}}
`, "ds_2 (1000 <= order_id < 2000), ds_3 (order_id >= 2000)"},
	{"BOUNDARY_RANGE, repeated boundary", `
tables:
  t_order:
    dataNodes: ds_0.t_order_0, ds_0.t_order_2, ds_0.t_order_3
    tableStrategy: {column: order_id, algorithm: r}
algorithms:
  r: {type: BOUNDARY_RANGE, props: {sharding-ranges: "10,10,20"}}
`, ""},
	{"VOLUME_RANGE over too few tables", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${0..2}
    tableStrategy: {column: order_id, algorithm: v}
algorithms:
  v: {type: VOLUME_RANGE, props: {range-lower: 0, range-upper: 100, sharding-volume: 50}}
`, "t_order_3 (order_id >= 100)"},
	{"VOLUME_RANGE", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${0..3}
    tableStrategy: {column: order_id, algorithm: v}
algorithms:
  v: {type: VOLUME_RANGE, props: {range-lower: 0, range-upper: 100, sharding-volume: 50}}
`, ""},
	{"INTERVAL, months missing", `
tables:
  t_order:
    dataNodes: ds_0.t_order_2024${['01','02','03']}
    tableStrategy: {column: created, algorithm: monthly}
algorithms:
  monthly: ` + proofInterval + `
`, "picks tables data source ds_0 does not have: t_order_202404 (2024-04-01 00:00:00 <= created < 2024-05-01 00:00:00), " +
		"t_order_202405 (2024-05-01 00:00:00 <= created < 2024-06-01 00:00:00), t_order_202406 (2024-06-01 00:00:00 <= created < 2024-07-01 00:00:00)"},
	{"INTERVAL", `
tables:
  t_order:
    dataNodes: ds_0.t_order_2024${['01','02','03','04','05','06']}
    tableStrategy: {column: created, algorithm: monthly}
algorithms:
  monthly: ` + proofInterval + `
`, ""},
	// One column at both levels: ds_0 sees the even keys, ds_1 the odd.
	{"one column, even and odd tables", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${[0,2]}, ds_1.t_order_${[1,3]}
    databaseStrategy: {column: user_id, algorithm: mod2}
    tableStrategy: {column: user_id, algorithm: mod4}
algorithms:
  mod2: {type: MOD, props: {sharding-count: 2}}
  mod4: {type: MOD, props: {sharding-count: 4}}
`, ""},
	{"one column, tables in the wrong data sources", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${0..1}, ds_1.t_order_${2..3}
    databaseStrategy: {column: user_id, algorithm: mod2}
    tableStrategy: {column: user_id, algorithm: mod4}
algorithms:
  mod2: {type: MOD, props: {sharding-count: 2}}
  mod4: {type: MOD, props: {sharding-count: 4}}
`, "table t_order: table strategy mod4 = MOD(sharding-count=4) on user_id, after database strategy mod2 = MOD(sharding-count=2) on user_id, " +
		"picks tables data source ds_0 does not have: t_order_2 (user_id mod 4 = 2); it has [t_order_0 t_order_1]"},
	{"one column, INLINE at both levels", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${[0,2]}, ds_1.t_order_${[1,3]}
    databaseStrategy: {column: user_id, algorithm: db_inline}
    tableStrategy: {column: user_id, algorithm: t_inline}
algorithms:
  db_inline: {type: INLINE, props: {algorithm-expression: "ds_${user_id % 2}"}}
  t_inline: {type: INLINE, props: {algorithm-expression: "t_order_${user_id % 4}"}}
`, ""},
	{"one column, HASH_MOD at both levels", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${[0,2]}, ds_1.t_order_${[1,3]}
    databaseStrategy: {column: user_id, algorithm: h2}
    tableStrategy: {column: user_id, algorithm: h4}
algorithms:
  h2: {type: HASH_MOD, props: {sharding-count: 2}}
  h4: {type: HASH_MOD, props: {sharding-count: 4}}
`, ""},
	{"one column, years then months", `
dataSources:
  ds_2023: {primary: "u:p@tcp(h0:3306)/db"}
  ds_2024: {primary: "u:p@tcp(h1:3306)/db"}
tables:
  t_order:
    dataNodes: ds_2023.t_order_2023${['01','02','03','04','05','06','07','08','09','10','11','12']}, ds_2024.t_order_2024${['01','02','03','04','05','06']}
    databaseStrategy: {column: created, algorithm: yearly}
    tableStrategy: {column: created, algorithm: monthly}
algorithms:
  yearly: {type: INTERVAL, props: {datetime-pattern: "yyyy-MM-dd HH:mm:ss",
    datetime-lower: "2023-01-01 00:00:00", datetime-upper: "2024-12-31 23:59:59",
    sharding-suffix-pattern: yyyy, datetime-interval-unit: YEARS}}
  monthly: {type: INTERVAL, props: {datetime-pattern: "yyyy-MM-dd HH:mm:ss",
    datetime-lower: "2023-01-01 00:00:00", datetime-upper: "2024-06-30 23:59:59",
    sharding-suffix-pattern: yyyyMM, datetime-interval-unit: MONTHS}}
`, ""},
	{"one column, a month missing", `
dataSources:
  ds_2023: {primary: "u:p@tcp(h0:3306)/db"}
  ds_2024: {primary: "u:p@tcp(h1:3306)/db"}
tables:
  t_order:
    dataNodes: ds_2023.t_order_2023${['01','02','03','04','05','06','07','08','09','10','11','12']}, ds_2024.t_order_2024${['01','02','04','05','06']}
    databaseStrategy: {column: created, algorithm: yearly}
    tableStrategy: {column: created, algorithm: monthly}
algorithms:
  yearly: {type: INTERVAL, props: {datetime-pattern: "yyyy-MM-dd HH:mm:ss",
    datetime-lower: "2023-01-01 00:00:00", datetime-upper: "2024-12-31 23:59:59",
    sharding-suffix-pattern: yyyy, datetime-interval-unit: YEARS}}
  monthly: {type: INTERVAL, props: {datetime-pattern: "yyyy-MM-dd HH:mm:ss",
    datetime-lower: "2023-01-01 00:00:00", datetime-upper: "2024-06-30 23:59:59",
    sharding-suffix-pattern: yyyyMM, datetime-interval-unit: MONTHS}}
`, "picks tables data source ds_2024 does not have: t_order_202403 (created = 2024-03-01 00:00:00)"},
	{"binding tables, same layout", `
tables:
  t_order:
    dataNodes: ds_${0..1}.t_order_${0..1}
    databaseStrategy: {column: user_id, algorithm: mod2}
    tableStrategy: {column: order_id, algorithm: mod2}
  t_order_item:
    dataNodes: ds_${0..1}.t_order_item_${0..1}
    databaseStrategy: {column: user_id, algorithm: mod2}
    tableStrategy: {column: order_id, algorithm: mod2}
bindingTables: [[t_order, t_order_item]]
algorithms:
  mod2: {type: MOD, props: {sharding-count: 2}}
`, ""},
	{"binding tables, tables in another order", `
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
`, "bindingTables[0][1]: data node 0 of t_order_item is ds_0.t_order_item_1, of t_order is ds_0.t_order_0: " +
		"binding tables need tables with the same suffixes, in the same order"},
	{"binding tables, other suffixes", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${0..1}
    tableStrategy: {column: order_id, algorithm: r}
  t_order_item:
    dataNodes: ds_0.t_order_item_${1..2}
    tableStrategy: {column: order_id, algorithm: r}
bindingTables: [[t_order, t_order_item]]
algorithms:
  r: {type: BOUNDARY_RANGE, props: {sharding-ranges: "100"}}
`, "data node 0 of t_order_item is ds_0.t_order_item_1, of t_order is ds_0.t_order_0: binding tables need tables with the same suffixes"},
	{"binding tables, zero-padded alike", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${['00','01']}
    tableStrategy: {column: order_id, algorithm: mod2}
  t_order_item:
    dataNodes: ds_0.t_order_item_${0..1}
    tableStrategy: {column: order_id, algorithm: mod2}
bindingTables: [[t_order, t_order_item]]
algorithms:
  mod2: {type: MOD, props: {sharding-count: 2}}
`, ""},
	{"binding tables, other data sources", `
tables:
  t_order:
    dataNodes: ds_${0..1}.t_order
    databaseStrategy: {column: user_id, algorithm: mod2}
  t_order_item:
    dataNodes: ds_1.t_order_item, ds_0.t_order_item
    databaseStrategy: {column: user_id, algorithm: mod2}
bindingTables: [[t_order, t_order_item]]
algorithms:
  mod2: {type: MOD, props: {sharding-count: 2}}
`, "data node 0 of t_order_item is ds_1.t_order_item, of t_order is ds_0.t_order"},
	{"binding tables, other algorithms", `
tables:
  t_order:
    dataNodes: ds_0.t_order_${0..1}
    tableStrategy: {column: order_id, algorithm: mod2}
  t_order_item:
    dataNodes: ds_0.t_order_item_${0..1}
    tableStrategy: {column: order_id, algorithm: hash2}
bindingTables: [[t_order, t_order_item]]
algorithms:
  mod2: {type: MOD, props: {sharding-count: 2}}
  hash2: {type: HASH_MOD, props: {sharding-count: 2}}
`, `table strategy of t_order_item uses algorithm "hash2", of t_order "mod2", and they are not equivalent`},
}

func TestProof(t *testing.T) {
	for _, c := range proofCases {
		t.Run(c.name, func(t *testing.T) {
			src := c.yaml
			if !strings.Contains(src, "dataSources:") {
				src = proofSources + src
			}
			cfg, err := ParseYAML([]byte(src))
			require.NoError(t, err)
			_, err = cfg.Build(nil)
			if c.err == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.err)
			assert.True(t, strings.HasPrefix(err.Error(), "rwshard: config"), err.Error())
			var ce *rwshard.ConfigError
			assert.ErrorAs(t, err, &ce, "every Build error is a *rwshard.ConfigError")
		})
	}
}

// A run-time problem is a *rwshard.ConfigError at the strategy's algorithm, in
// the file and on the line that set it, wrapping a *RuleError that
// matches ErrNoTarget, the error the keys would meet at run time.
func TestProofErrorFields(t *testing.T) {
	src := proofSources + `tables:
  t_order:
    dataNodes: ds_${0..1}.t_order_${0..1}
    databaseStrategy: {column: user_id, algorithm: mod2}
    tableStrategy:
      column: order_id
      algorithm: t_mod
algorithms:
  mod2: {type: MOD, props: {sharding-count: 2}}
  t_mod: {type: MOD, props: {sharding-count: 4}}
`
	path := filepath.Join(t.TempDir(), "rules.yaml")
	require.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	cfg, err := LoadRules(path)
	require.NoError(t, err)
	_, err = cfg.Build(nil)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "rwshard: config "+path+":11: tables.t_order.tableStrategy.algorithm: table t_order: "), err.Error())
	assert.True(t, errors.Is(err, ErrNoTarget))
	var ce *rwshard.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 11, ce.Line)
	assert.Equal(t, "tables.t_order.tableStrategy.algorithm", ce.Key)
	var re *RuleError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "t_order", re.Table)
	assert.Equal(t, "table", re.Strategy)
	assert.Equal(t, "t_mod", re.Algorithm)
	assert.Equal(t, []string{"ds_0", "ds_1"}, re.DataSources)
	assert.Equal(t, []string{"t_order_2", "t_order_3"}, re.Missing)
	assert.NotContains(t, err.Error(), "u:p@", "no DSN, no password")
}

// The old behaviour, for the record: the rule the proof refuses fails at
// run time, for exactly the keys it names.
func TestProofMatchesRunTime(t *testing.T) {
	alg, err := NewAlgorithm("MOD", map[string]string{"sharding-count": "4"})
	require.NoError(t, err)
	for k := int64(0); k < 8; k++ {
		_, err := alg.Shard([]string{"t_order_0", "t_order_1"}, k)
		if k%4 >= 2 {
			assert.ErrorIs(t, err, ErrNoTarget, "key %d", k)
		} else {
			assert.NoError(t, err, "key %d", k)
		}
	}
}

// Check reports every problem and what it could not prove, and still
// returns the rules; Build refuses them with the first problem.
func TestCheckAllProblems(t *testing.T) {
	cfg, err := ParseYAML([]byte(proofSources + `
tables:
  t_a:
    dataNodes: ds_0.t_a_${0..1}
    tableStrategy: {column: id, algorithm: mod4}
  t_b:
    dataNodes: ds_${0..1}.t_b
    databaseStrategy: {column: id, algorithm: mod4}
  t_c:
    dataNodes: ds_0.t_c_${0..1}
    tableStrategy: {column: id, algorithm: whole}
  t_d:
    dataNodes: ds_${0..1}.t_d
    databaseStrategy: {column: id, algorithm: by_len}
  t_e:
    dataNodes: ds_0.t_e_${[0,2]}, ds_1.t_e_${[1,3]}
    databaseStrategy: {column: id, algorithm: mod2}
    tableStrategy: {column: id, algorithm: r}
algorithms:
  mod2: {type: MOD, props: {sharding-count: 2}}
  mod4: {type: MOD, props: {sharding-count: 4}}
  whole: {type: INLINE, props: {algorithm-expression: "t_c_${id}"}}
  r: {type: BOUNDARY_RANGE, props: {sharding-ranges: "10,20,30"}}
`))
	require.NoError(t, err)
	byLen := AlgorithmFunc(func(targets []string, v Value) (string, error) { return targets[0], nil })
	rules, chk, err := cfg.Check(map[string]Algorithm{"by_len": byLen})
	require.NoError(t, err)
	require.NotNil(t, rules, "for tools that go on to the servers")
	require.Len(t, chk.Problems, 2)
	assert.Equal(t, "tables.t_a.tableStrategy.algorithm", chk.Problems[0].Key)
	assert.Equal(t, "tables.t_b.databaseStrategy.algorithm", chk.Problems[1].Key)
	assert.Equal(t, []string{
		"table t_c: table strategy whole = INLINE(t_c_${id}) on id not proved: it names a target per value of id (or takes it as a string), so its targets cannot be listed",
		"table t_d: database strategy by_len on id not proved: a custom algorithm: rwshard cannot list what it picks",
		"table t_e: table strategy r = BOUNDARY_RANGE(sharding-ranges=10,20,30) on id not proved: with database strategy " +
			"mod2 = MOD(sharding-count=2) on the same column, and different tables in each data source, the two cannot be followed together",
	}, chk.Unproven)

	_, err = cfg.Build(map[string]Algorithm{"by_len": byLen})
	require.Error(t, err)
	assert.Equal(t, chk.Problems[0].Error(), err.Error())

	// A structural problem stops Check as it stops Build.
	cfg.DefaultDataSource = "nope"
	rules, chk, err = cfg.Check(nil)
	assert.Error(t, err)
	assert.Nil(t, rules)
	assert.Nil(t, chk)
}

func TestInlineNames(t *testing.T) {
	for _, c := range []struct {
		expr  string
		names []string // nil: cannot be listed
	}{
		{"t_${id % 2}", []string{"t_0", "t_1"}},
		{"t_${id % 4 / 2}", []string{"t_0", "t_1"}},
		{"t_${(id / 3) % 2}", []string{"t_0", "t_1"}},
		{"t_${(id + 1) % 3}", []string{"t_1", "t_2", "t_0"}},
		{"t_${id % 2 * 10 + id % 5}", []string{"t_0", "t_11", "t_2", "t_13", "t_4", "t_10", "t_1", "t_12", "t_3", "t_14"}},
		{"t_${-id % 2}", []string{"t_0", "t_-1"}},
		{"t_${'x' + id % 2}", []string{"t_x0", "t_x1"}},
		{"t_${id % 2}_${id % 3}", []string{"t_0_0", "t_1_1", "t_0_2", "t_1_0", "t_0_1", "t_1_2"}},
		{"t_${1 + 1}", []string{"t_2"}},
		{"t_${id}", nil},            // one per key
		{"t_${id / 2}", nil},        // grows with the key
		{"t_${(id - 3) % 4}", nil},  // negative for small keys
		{"t_${id % 100000}", nil},   // too long a period
		{"t_${id * id % 2}", nil},   // not of the form proved
		{"t_${id % (id % 2)}", nil}, // divides by zero
		{"t_${id % 65536 % 4}", []string{"t_0", "t_1", "t_2", "t_3"}},
		{"t_${id * 3 % 7 % 2}", []string{"t_0", "t_1"}}, // 0 3 6 2 5 1 4 → 0 1 0 0 1 1 0
	} {
		t.Run(c.expr, func(t *testing.T) {
			alg, err := NewAlgorithm("INLINE", map[string]string{"algorithm-expression": c.expr})
			require.NoError(t, err)
			names, keys, period, ok := alg.(*inlineAlgorithm).inlineNames()
			if c.names == nil {
				assert.False(t, ok, "%v", names)
				return
			}
			require.True(t, ok)
			assert.ElementsMatch(t, c.names, names)
			// Every key gives the name of its residue: the period holds.
			for x := int64(0); x < 5*int64(period)+7; x++ {
				name, err := alg.(*inlineAlgorithm).nameAt(x)
				require.NoError(t, err)
				want, err := alg.(*inlineAlgorithm).nameAt(x % int64(period))
				require.NoError(t, err)
				assert.Equal(t, want, name, "key %d, period %d", x, period)
			}
			for i, k := range keys {
				name, err := alg.(*inlineAlgorithm).nameAt(k)
				require.NoError(t, err)
				assert.Equal(t, names[i], name)
			}
		})
	}
}

func TestGuessTargetName(t *testing.T) {
	assert.Equal(t, "t_order_2", guessTargetName([]string{"t_order_0", "t_order_1"}, "2"))
	assert.Equal(t, "t_order_08", guessTargetName([]string{"t_order_00", "t_order_07"}, "8"))
	assert.Equal(t, "t_order_202404", guessTargetName([]string{"t_order_202401"}, "202404"))
	assert.Equal(t, "ds_3", guessTargetName([]string{"ds_0", "ds_1"}, "3"))
	assert.Equal(t, "a name ending in 3", guessTargetName([]string{"east", "west"}, "3"))
}

// The proof of a large INTERVAL stays cheap: 131072 steps over as many
// suffixes.
func TestProofIntervalManySteps(t *testing.T) {
	alg, err := NewAlgorithm("INTERVAL", map[string]string{
		"datetime-pattern": "yyyy-MM-dd HH:mm:ss", "datetime-lower": "2000-01-01 00:00:00",
		"datetime-upper": "2014-12-01 00:00:00", "sharding-suffix-pattern": "yyyyMMddHH",
		"datetime-interval-unit": "HOURS",
	})
	require.NoError(t, err)
	targets := []string{"t_2000010100", "t_2000010101"}
	begin := time.Now()
	bad, total, why := proveTargets(alg, "created", targets)
	assert.Less(t, time.Since(begin), 5*time.Second)
	assert.Empty(t, why)
	assert.Len(t, bad, proofMaxListed)
	assert.Equal(t, len(alg.(*intervalAlgorithm).suffixes)-2, total)
	assert.Equal(t, "t_2000010102", bad[0].want)
}
