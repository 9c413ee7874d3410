package main

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/rwshard/rwshard/shard"
)

// placedStrings describes placements as "table(logical) column:roles …" strings.
func placedStrings(p []*placedTable) []string {
	out := []string{}
	for _, t := range p {
		s := t.table + "(" + t.logical
		if t.broadcast {
			s += ", broadcast"
		}
		s += ")"
		for _, c := range t.columns {
			s += " " + c.name + ":" + c.why()
		}
		out = append(out, s)
	}
	return out
}

func TestPlacements(t *testing.T) {
	c, err := shard.ParseYAML([]byte(`
dataSources:
  ds_0: {primary: "u:p@tcp(10.0.0.1:3306)/shop"}
  ds_1: {primary: "u:p@tcp(10.0.0.2:3306)/shop"}
  ds_x: {primary: "u:p@tcp(10.0.0.3:3306)/other"}
defaultDataSource: ds_x
tables:
  T_Order:
    dataNodes: ds_${0..1}.t_order_${0..1}
    databaseStrategy: {column: User_ID, algorithm: db_mod}
    tableStrategy: {column: order_id, algorithm: t_mod}
    keyGenerator: {column: ORDER_ID, generator: snowflake}
  t_user:
    dataNodes: ds_1.t_user, ds_0.t_user
    databaseStrategy: {column: user_id, algorithm: db_mod}
broadcastTables: [T_Dict]
algorithms:
  db_mod: {type: MOD, props: {sharding-count: 2}}
  t_mod: {type: MOD, props: {sharding-count: 2}}
keyGenerators:
  snowflake: {type: SNOWFLAKE}
`))
	require.NoError(t, err)
	rules, err := c.Build(nil)
	require.NoError(t, err)
	p := placements(rules)
	require.Len(t, p, 3)
	for _, ds := range []string{"ds_0", "ds_1"} {
		assert.Equal(t, []string{
			"t_order_0(t_order) user_id:database sharding column order_id:table sharding column, key generator column",
			"t_order_1(t_order) user_id:database sharding column order_id:table sharding column, key generator column",
			"t_user(t_user) user_id:database sharding column",
			"t_dict(t_dict, broadcast)",
		}, placedStrings(p[ds]), ds)
	}
	// The default data source holds no sharded table, but every
	// broadcast one.
	assert.Equal(t, []string{"t_dict(t_dict, broadcast)"}, placedStrings(p["ds_x"]))
}

// shardedTables creates, on both primaries of a sharded lab, the tables of
// labtest's rules, as the application user.
func shardedTables(t *testing.T, l *lab.Lab) {
	t.Helper()
	ctx := labtest.Ctx(t, time.Minute)
	for _, g := range l.Groups {
		db := labtest.Direct(t, g.Primary(), "")
		for _, stmt := range []string{
			"CREATE TABLE t_order_0 (order_id BIGINT PRIMARY KEY, user_id INT NOT NULL, note VARCHAR(20))",
			"CREATE TABLE t_order_1 (order_id BIGINT PRIMARY KEY, user_id INT NOT NULL, note VARCHAR(20))",
			"CREATE TABLE t_order_item_0 (item_id BIGINT PRIMARY KEY, order_id BIGINT, user_id INT)",
			"CREATE TABLE t_order_item_1 (item_id BIGINT PRIMARY KEY, order_id BIGINT, user_id INT)",
			"CREATE TABLE t_dict (k INT PRIMARY KEY, v VARCHAR(10))",
		} {
			_, err := db.ExecContext(ctx, stmt)
			require.NoError(t, err, stmt)
		}
	}
}

// onPrimary runs stmt as the application user on the primary of group g
// and, when the test step ends, undo.
func onPrimary(t *testing.T, g *lab.Group, stmt, undo string) func() {
	t.Helper()
	db := labtest.Direct(t, g.Primary(), "")
	_, err := db.ExecContext(labtest.Ctx(t, time.Minute), stmt)
	require.NoError(t, err, stmt)
	return func() {
		_, err := db.ExecContext(labtest.Ctx(t, time.Minute), undo)
		require.NoError(t, err, undo)
	}
}

// check's data nodes: every physical table of the rules on its data
// source's primary, with its sharding columns; a data source that holds
// none of them (pointed at the wrong database) is named as such.
func TestCheckDataNodes(t *testing.T) {
	l := labtest.Fresh(t, lab.Sharded())
	shardedTables(t, l)
	rules := labtest.RulesFile(t, l)
	config := "/app?rwshard.rulesFile=" + url.QueryEscape(rules)
	ds0, ds1 := l.Groups[0], l.Groups[1]

	// All there: no problem, and the text says what was checked.
	r := cli(t, "check", config)
	require.Equal(t, exitOK, r.code, r)
	for _, g := range l.Groups {
		assert.Contains(t, r.stdout, "data nodes: 5 of 5 tables found in database app on "+g.Name+"-primary, sharding columns present")
	}
	assert.Contains(t, r.stdout, "ok: 2 nodes and 5 data nodes checked")
	r = cli(t, "check", "-json", config)
	require.Equal(t, exitOK, r.code, r)
	rep := decodeCheck(t, r.stdout)
	require.Len(t, rep.Groups, 2)
	for _, g := range rep.Groups {
		d := g.DataNodes
		require.NotNil(t, d, g.Name)
		assert.True(t, d.Checked)
		assert.Equal(t, "app", d.Database)
		assert.Equal(t, g.Name+"-primary", d.Node)
		assert.Equal(t, 5, d.Placed)
		assert.Equal(t, 5, d.Found)
		require.Len(t, d.Tables, 5)
		for _, tb := range d.Tables {
			require.NotNil(t, tb.Exists, tb.Table)
			assert.True(t, *tb.Exists, tb.Table)
			assert.Empty(t, tb.MissingColumns, tb.Table)
		}
		assert.Equal(t, dataTableJSON{Table: "t_order_0", Logical: "t_order", Exists: ptr(true),
			Columns: []string{"user_id", "order_id"}, MissingColumns: []string{},
			ColumnTypes: map[string]string{"user_id": "int(11)", "order_id": "bigint(20)"}}, d.Tables[0])
		assert.Equal(t, dataTableJSON{Table: "t_dict", Logical: "t_dict", Broadcast: true, Exists: ptr(true),
			Columns: []string{}, MissingColumns: []string{}}, d.Tables[4])
	}

	t.Run("missing table", func(t *testing.T) {
		defer onPrimary(t, ds1, "DROP TABLE t_order_1",
			"CREATE TABLE t_order_1 (order_id BIGINT PRIMARY KEY, user_id INT NOT NULL, note VARCHAR(20))")()
		r := cli(t, "check", config)
		assert.Equal(t, exitProblem, r.code, r)
		assert.Contains(t, r.stdout, "ds_1: no table t_order_1 in database app: data node ds_1.t_order_1 of logical table t_order")
		assert.Contains(t, r.stdout, "data nodes: 4 of 5 tables found in database app on ds_1-primary")
		assert.Contains(t, r.stdout, "1 problem found (2 nodes and 5 data nodes checked")

		r = cli(t, "check", "-json", config)
		assert.Equal(t, exitProblem, r.code, r)
		rep := decodeCheck(t, r.stdout)
		assert.Equal(t, 1, rep.Problems)
		assert.Empty(t, rep.Groups[0].Problems)
		assert.Equal(t, []string{"ds_1: no table t_order_1 in database app: data node ds_1.t_order_1 of logical table t_order"},
			rep.Groups[1].Problems)
		assert.Equal(t, 4, rep.Groups[1].DataNodes.Found)
		assert.False(t, *rep.Groups[1].DataNodes.Tables[1].Exists)
		assert.Equal(t, "t_order_1", rep.Groups[1].DataNodes.Tables[1].Table)
	})

	t.Run("missing broadcast table", func(t *testing.T) {
		defer onPrimary(t, ds0, "DROP TABLE t_dict", "CREATE TABLE t_dict (k INT PRIMARY KEY, v VARCHAR(10))")()
		r := cli(t, "check", config)
		assert.Equal(t, exitProblem, r.code, r)
		assert.Contains(t, r.stdout, "ds_0: no table t_dict in database app: broadcast table t_dict must exist on every data source")
		assert.Contains(t, r.stdout, "1 problem found")
	})

	t.Run("missing sharding columns", func(t *testing.T) {
		defer onPrimary(t, ds0, "ALTER TABLE t_order_item_0 DROP COLUMN user_id",
			"ALTER TABLE t_order_item_0 ADD COLUMN user_id INT")()
		defer onPrimary(t, ds1, "ALTER TABLE t_order_0 CHANGE order_id id BIGINT",
			"ALTER TABLE t_order_0 CHANGE id order_id BIGINT")()
		r := cli(t, "check", config)
		assert.Equal(t, exitProblem, r.code, r)
		assert.Contains(t, r.stdout, "ds_0: table t_order_item_0 has no column user_id: the database sharding column of logical table t_order_item")
		assert.Contains(t, r.stdout, "ds_1: table t_order_0 has no column order_id: the table sharding column, key generator column of logical table t_order")
		assert.Contains(t, r.stdout, "data nodes: 5 of 5 tables found in database app on ds_0-primary, 1 sharding column missing")
		assert.Equal(t, 2, strings.Count(r.stdout, "1 problem found"), "one in each data source")

		r = cli(t, "check", "-json", config)
		rep := decodeCheck(t, r.stdout)
		assert.Equal(t, 2, rep.Problems)
		assert.Equal(t, []string{"user_id"}, rep.Groups[0].DataNodes.Tables[2].MissingColumns)
		assert.Equal(t, "t_order_item_0", rep.Groups[0].DataNodes.Tables[2].Table)
	})

	// The outage: ds_1 pointed at a database (here an empty one on its own
	// primary) that holds none of the tables; SELECT 1 works there.
	t.Run("holds none", func(t *testing.T) {
		ctx := labtest.Ctx(t, time.Minute)
		require.NoError(t, ds1.Primary().Exec(ctx, "CREATE DATABASE app_empty; GRANT ALL ON app_empty.* TO '"+lab.AppUser+"'@'%'"))
		t.Cleanup(func() { _ = ds1.Primary().Exec(ctx, "DROP DATABASE app_empty") })
		var ds []string
		for _, g := range l.Groups {
			db := "/" + lab.AppDatabase
			if g == ds1 {
				db = "/app_empty"
			}
			ds = append(ds, fmt.Sprintf("  %s: {primary: %q, replicas: [%q]}", g.Name,
				strings.Replace(g.Primary().DSN(""), "/"+lab.AppDatabase, db, 1),
				strings.Replace(g.Replicas()[0].DSN(""), "/"+lab.AppDatabase, db, 1)))
		}
		orig, err := os.ReadFile(rules)
		require.NoError(t, err)
		_, tables, ok := strings.Cut(string(orig), "defaultDataSource:")
		require.True(t, ok)
		p := filepath.Join(t.TempDir(), "wrong.yaml")
		require.NoError(t, os.WriteFile(p, []byte("dataSources:\n"+strings.Join(ds, "\n")+"\ndefaultDataSource:"+tables), 0o600))

		r := cli(t, "check", p)
		assert.Equal(t, exitProblem, r.code, r)
		want := "data source ds_1 answers but holds none of the 5 physical tables the rules place there (database app_empty on " +
			ds1.Primary().Addr() + ", which holds 0 other tables): is its DSN pointing at the right server/database?"
		assert.Contains(t, r.stdout, want)
		assert.Contains(t, r.stdout, "data nodes: 0 of 5 tables found in database app_empty on ds_1-primary")
		assert.NotContains(t, r.stdout, "ds_1: no table", "one problem for the data source, not one per table")
		assert.Contains(t, r.stdout, "1 problem found")
		assert.Regexp(t, row("ds_1-primary", ds1.Primary().Addr(), "ok"), r.stdout)

		r = cli(t, "check", "-json", p)
		rep := decodeCheck(t, r.stdout)
		assert.Equal(t, 1, rep.Problems)
		assert.Equal(t, []string{want}, rep.Groups[1].Problems)
		assert.Equal(t, "app_empty", rep.Groups[1].DataNodes.Database)
		assert.Equal(t, 0, rep.Groups[1].DataNodes.Found)
	})
	t.Run("prepared XA branch", func(t *testing.T) {
		// A branch another transaction manager left prepared on ds_0: the
		// application user can see it, and only an operator resolves it.
		ctx := labtest.Ctx(t, time.Minute)
		undo := onPrimary(t, ds0, "CREATE TABLE xa_left (id INT PRIMARY KEY)", "DROP TABLE xa_left")
		defer undo()
		db := labtest.Direct(t, ds0.Primary(), "")
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		for _, q := range []string{"XA START 'ops-1'", "INSERT INTO xa_left VALUES (1)", "XA END 'ops-1'", "XA PREPARE 'ops-1'"} {
			_, err := conn.ExecContext(ctx, q)
			require.NoError(t, err, q)
		}
		rolledBack := false
		rollback := func() {
			if !rolledBack {
				rolledBack = true
				_, err := db.ExecContext(ctx, "XA ROLLBACK 'ops-1'")
				require.NoError(t, err)
			}
		}
		defer rollback()
		// The client goes (database/sql discards a connection that says
		// it is bad); the prepared branch stays.
		assert.ErrorIs(t, conn.Raw(func(any) error { return driver.ErrBadConn }), driver.ErrBadConn)
		_ = conn.Close()

		r := cli(t, "check", "-xa-age", "0s", config)
		assert.Equal(t, exitProblem, r.code, r)
		assert.Contains(t, r.stdout, `xa: ds_0: branch "ops-1"/"" prepared, another transaction manager's`)
		r = cli(t, "check", "-json", "-xa-age", "0s", config)
		assert.Equal(t, exitProblem, r.code, r)
		rep := decodeCheck(t, r.stdout)
		require.NotNil(t, rep.XA)
		require.Len(t, rep.XA.Branches, 1)
		assert.Equal(t, xaBranchJSON{DataSource: "ds_0", GTRID: "ops-1"}, rep.XA.Branches[0])
		rollback()
		r = cli(t, "check", config)
		assert.Equal(t, exitOK, r.code, r)
		assert.Contains(t, r.stdout, "xa: no branch prepared longer than 1m0s")
	})
}

func ptr[T any](v T) *T { return &v }

// Data nodes that cannot be checked: a primary that failed its own check
// adds no second problem; a DSN without a database is a problem.
func TestCheckDataNodesNotChecked(t *testing.T) {
	placed := []*placedTable{{table: "t_0", logical: "t"}, {table: "t_dict", logical: "t_dict", broadcast: true}}
	report := func(db string, p *nodeCheck) *checkReport {
		cfg := rwshard.NewConfig()
		cfg.Backend.User, cfg.Backend.DBName = "app", db
		cfg.Nodes = []rwshard.Node{p.node}
		return &checkReport{cfg: cfg, nodes: []*nodeCheck{p}}
	}
	down := healthyPrimary()
	down.err, down.errMsg = errors.New("refused"), "unreachable: refused"
	r := report("app", down)
	r.checkDataNodes(context.Background(), "ds_1", placed, time.Second)
	assert.Empty(t, r.problems)
	assert.Equal(t, "data nodes: not checked: the primary primary did not pass its own check", r.dataNodes.summary())
	j := r.dataNodes.json()
	assert.False(t, j.Checked)
	assert.Equal(t, 2, j.Placed)
	assert.Nil(t, j.Tables[0].Exists, "unknown, not false")

	r = report("", healthyPrimary())
	r.checkDataNodes(context.Background(), "ds_1", placed, time.Second)
	assert.Equal(t, []string{"ds_1: the DSN names no database, and the rules place 2 tables on this data source: name it in the DSN (…/dbname)"}, r.problems)

	r = report("app", healthyPrimary())
	r.checkDataNodes(context.Background(), "ds_1", nil, time.Second)
	assert.Empty(t, r.problems)
	assert.Equal(t, "data nodes: the rules place no table on this data source", r.dataNodes.summary())
}
