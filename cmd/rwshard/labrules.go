package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/shard"
)

// lab up -topology sharded writes sharding rules for the lab it started,
// in rwshard's dialect and in ShardingSphere-JDBC 5.x's, into the lab
// directory (lab down removes them with it), and creates their tables on
// every data source: t_order and t_order_item, bound, in
// ds_${0..N-1}.t_…_${0..1} by user_id % N then order_id % 2, order_id
// from a snowflake generator; t_dict broadcast; every other table in
// ds_0. These are the rules of the lab tests (internal/lab/labtest).

// Names of the rules files in the lab directory.
const (
	labRulesFile   = "rules.yaml"
	labRulesSSFile = "rules-shardingsphere.yaml"
)

// labTableColumns are the columns lab up creates each logical table's
// physical tables with.
var labTableColumns = map[string]string{
	"t_order":      "(order_id BIGINT PRIMARY KEY, user_id INT NOT NULL, amount DECIMAL(10,2), status VARCHAR(10), note VARCHAR(20) NULL)",
	"t_order_item": "(item_id BIGINT PRIMARY KEY, order_id BIGINT NOT NULL, user_id INT NOT NULL, qty INT)",
	"t_dict":       "(k INT PRIMARY KEY, v VARCHAR(10))",
}

// labRules is a rules file of a lab.
type labRules struct {
	dialect string // "rwshard" or "ShardingSphere-JDBC 5.x"
	path    string
}

// labRulesFiles returns the rules files in the lab directory of s that
// exist, rwshard's first.
func labRulesFiles(s *lab.State) []labRules {
	var out []labRules
	for _, f := range []labRules{
		{"rwshard", filepath.Join(s.Dir, labRulesFile)},
		{"ShardingSphere-JDBC 5.x", filepath.Join(s.Dir, labRulesSSFile)},
	} {
		if st, err := os.Stat(f.path); err == nil && st.Mode().IsRegular() {
			out = append(out, f)
		}
	}
	return out
}

// labGroup is one data source of the lab's rules: its primary and
// replicas, by address.
type labGroup struct {
	name     string
	primary  string
	replicas []string
}

func labGroups(s *lab.State) []labGroup {
	var out []labGroup
	for _, g := range s.Groups() {
		lg := labGroup{name: g}
		if p := s.Primary(g); p != nil {
			lg.primary = p.Addr()
		}
		for _, n := range s.Nodes {
			if n.Group == g && !n.Primary {
				lg.replicas = append(lg.replicas, n.Addr())
			}
		}
		out = append(out, lg)
	}
	return out
}

// labNodeDSN is the go-sql-driver/mysql DSN of one server of the lab, as the
// application user.
func labNodeDSN(addr string) string {
	return fmt.Sprintf("%s:%s@tcp(%s)/%s", lab.AppUser, lab.AppPassword, addr, lab.AppDatabase)
}

// usageComment is the head of both files: what they are and how to use
// them.
func usageComment(s *lab.State, dialect, self, other string) string {
	return fmt.Sprintf(`# Sharding rules for the rwshard lab in %s (written by
# rwshard lab up -topology sharded; lab down removes them), %s dialect.
# The same rules in the other dialect: %s
#
#   rwshard check %s
#   DSN: /?rwshard.rulesFile=%s
#
# t_order and t_order_item (bound) in ds_${0..%d}.t_…_${0..1}, by user_id
# then order_id, MOD; order_id from a snowflake generator; t_dict
# broadcast; every other table in ds_0. lab up created these tables on
# every data source. The lab's password is not a secret.
`, s.Dir, dialect, other, self, url.QueryEscape(self), len(s.Groups())-1)
}

// nativeRules is the lab's rules in rwshard's dialect.
func nativeRules(s *lab.State, self, other string) string {
	var b strings.Builder
	b.WriteString(usageComment(s, "rwshard's", self, other))
	b.WriteString("\ndataSources:\n")
	for _, g := range labGroups(s) {
		var reps []string
		for _, r := range g.replicas {
			reps = append(reps, fmt.Sprintf("%q", labNodeDSN(r)))
		}
		fmt.Fprintf(&b, "  %s:\n    primary: %q\n    replicas: [%s]\n", g.name, labNodeDSN(g.primary), strings.Join(reps, ", "))
	}
	fmt.Fprintf(&b, `defaultDataSource: ds_0
tables:
  t_order:
    dataNodes: ds_${0..%[1]d}.t_order_${0..1}
    databaseStrategy: {column: user_id, algorithm: db_mod}
    tableStrategy: {column: order_id, algorithm: t_mod}
    keyGenerator: {column: order_id, generator: snowflake}
  t_order_item:
    dataNodes: ds_${0..%[1]d}.t_order_item_${0..1}
    databaseStrategy: {column: user_id, algorithm: db_mod}
    tableStrategy: {column: order_id, algorithm: t_mod}
bindingTables: [[t_order, t_order_item]]
broadcastTables: [t_dict]
algorithms:
  db_mod: {type: MOD, props: {sharding-count: %[2]d}}
  t_mod: {type: MOD, props: {sharding-count: 2}}
keyGenerators:
  snowflake: {type: SNOWFLAKE, props: {worker-id: 7}}
`, len(s.Groups())-1, len(s.Groups()))
	return b.String()
}

// shardingSphereRules is the lab's rules in ShardingSphere-JDBC 5.x's
// dialect (5.4's rule set: !SHARDING, !READWRITE_SPLITTING with
// dataSourceGroups, !BROADCAST, !SINGLE): one data source per server,
// one read/write splitting group per lab group, named like the group, so
// that data nodes are the same as in rwshard's file.
func shardingSphereRules(s *lab.State, self, other string) string {
	var b strings.Builder
	b.WriteString(usageComment(s, "ShardingSphere-JDBC 5.x's", self, other))
	b.WriteString("\ndatabaseName: rwshard_lab\n\ndataSources:\n")
	source := func(name, addr string) {
		fmt.Fprintf(&b, `  %s:
    dataSourceClassName: com.zaxxer.hikari.HikariDataSource
    driverClassName: org.mariadb.jdbc.Driver
    jdbcUrl: jdbc:mariadb://%s/%s
    username: %s
    password: %s
`, name, addr, lab.AppDatabase, lab.AppUser, lab.AppPassword)
	}
	groups := labGroups(s)
	for _, g := range groups {
		source("primary_"+g.name, g.primary)
		for i, r := range g.replicas {
			source(fmt.Sprintf("replica_%s_%d", g.name, i+1), r)
		}
	}
	last := len(groups) - 1
	b.WriteString(`
rules:
- !SHARDING
  tables:
`)
	for _, t := range []string{"t_order", "t_order_item"} {
		fmt.Fprintf(&b, `    %s:
      actualDataNodes: ds_${0..%d}.%s_${0..1}
      databaseStrategy:
        standard:
          shardingColumn: user_id
          shardingAlgorithmName: db_mod
      tableStrategy:
        standard:
          shardingColumn: order_id
          shardingAlgorithmName: t_mod
`, t, last, t)
		if t == "t_order" {
			b.WriteString(`      keyGenerateStrategy:
        column: order_id
        keyGeneratorName: snowflake
`)
		}
	}
	fmt.Fprintf(&b, `  bindingTables:
    - t_order,t_order_item
  shardingAlgorithms:
    db_mod:
      type: MOD
      props:
        sharding-count: %d
    t_mod:
      type: MOD
      props:
        sharding-count: 2
  keyGenerators:
    snowflake:
      type: SNOWFLAKE
      props:
        worker-id: 7  # rwshard's; ShardingSphere 5.1+ takes the worker id from its mode

- !READWRITE_SPLITTING
  dataSourceGroups:
`, len(groups))
	for _, g := range groups {
		fmt.Fprintf(&b, "    %s:\n      writeDataSourceName: primary_%s\n      readDataSourceNames:\n", g.name, g.name)
		for i := range g.replicas {
			fmt.Fprintf(&b, "        - replica_%s_%d\n", g.name, i+1)
		}
	}
	b.WriteString(`
- !BROADCAST
  tables:
    - t_dict

- !SINGLE
  tables:
    - "*.*"
  defaultDataSource: ds_0
`)
	return b.String()
}

// setUpLabRules writes the lab's rules files into its directory and
// creates their tables on every data source's primary. It returns the
// files, rwshard's first.
func setUpLabRules(ctx context.Context, s *lab.State) ([]labRules, error) {
	native, ss := filepath.Join(s.Dir, labRulesFile), filepath.Join(s.Dir, labRulesSSFile)
	if err := os.WriteFile(native, []byte(nativeRules(s, native, ss)), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(ss, []byte(shardingSphereRules(s, ss, native)), 0o600); err != nil {
		return nil, err
	}
	sc, err := shard.LoadRules(native)
	if err != nil {
		return nil, err
	}
	rules, err := sc.Build(nil)
	if err != nil {
		return nil, err
	}
	for name, placed := range placements(rules) {
		if err := createLabTables(ctx, rules.DataSources[name].Primary, placed); err != nil {
			return nil, fmt.Errorf("data source %s: %w", name, err)
		}
	}
	return labRulesFiles(s), nil
}

// createLabTables creates the placed tables on the server of dsn.
func createLabTables(ctx context.Context, dsn string, placed []*placedTable) error {
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return err
	}
	mc.Logger = &mysql.NopLogger{}
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, t := range placed {
		cols, ok := labTableColumns[t.logical]
		if !ok {
			return fmt.Errorf("no columns for table %s", t.logical)
		}
		if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS `"+t.table+"` "+cols); err != nil {
			return fmt.Errorf("create table %s: %w", t.table, err)
		}
	}
	return nil
}

// printLabRules writes where the lab's rules files are and how to use
// them.
func printLabRules(w io.Writer, files []labRules) {
	if len(files) == 0 {
		return
	}
	fmt.Fprintln(w, "\nsharding rules over every group (t_order and t_order_item bound, t_dict broadcast;")
	fmt.Fprintln(w, "lab up created their tables on every data source), one file per dialect:")
	for _, f := range files {
		fmt.Fprintf(w, "  %s: %s\n", f.dialect, f.path)
	}
	fmt.Fprintf(w, "check:        rwshard check %s\n", files[0].path)
	fmt.Fprintf(w, "rwshard DSN:  /?rwshard.rulesFile=%s\n", url.QueryEscape(files[0].path))
}
