package main

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rwshard/rwshard/shard"
)

// check of a sharding rules file verifies its data nodes: every physical
// table the rules place on a data source exists in the database of that
// data source's DSN, on its primary, and holds the table's sharding
// columns. Two information_schema queries per data source, whatever the
// number of tables, one on TABLES and one on COLUMNS, after reading
// @@lower_case_table_names (how the server compares table names).

// placedTable is one physical table the rules place on a data source.
type placedTable struct {
	table     string // the physical name, as the rules write it
	logical   string // the logical table; for a broadcast table, the same name
	broadcast bool
	columns   []placedColumn // the columns the rules need in it
	// sharding: the database and the table strategy's columns ("" for
	// none); kin: the logical tables whose sharding columns must be of
	// the same kind of type, t's binding group or t alone.
	sharding [2]string
	kin      []string
}

// placedColumn is a column a physical table must have, and why.
type placedColumn struct {
	name  string // lower case, as the rules hold it
	roles []string
}

// why is the column's roles for a message: "database sharding column",
// "table sharding column, key generator column".
func (c placedColumn) why() string { return strings.Join(c.roles, ", ") }

// placements lists, by data source, the physical tables rules place
// there: the data nodes of every sharded table, with its sharding columns
// (database and table strategy, key generator), and every broadcast
// table, on every data source. Logical tables are in name order, each
// table's data nodes in the rules' order, broadcast tables last. A data
// source that holds none has an empty list.
func placements(rules *shard.Rules) map[string][]*placedTable {
	out := make(map[string][]*placedTable, len(rules.DataSources))
	for name := range rules.DataSources {
		out[name] = []*placedTable{}
	}
	logicals := make([]string, 0, len(rules.Tables))
	for name := range rules.Tables {
		logicals = append(logicals, name)
	}
	slices.Sort(logicals)
	kin := map[string][]string{}
	for _, g := range rules.BindingGroups {
		for _, name := range g {
			kin[name] = g
		}
	}
	for _, name := range logicals {
		t := rules.Tables[name]
		var sharding [2]string
		var cols []placedColumn
		need := func(col, role string) {
			if col == "" {
				return
			}
			i := slices.IndexFunc(cols, func(c placedColumn) bool { return c.name == col })
			if i < 0 {
				cols = append(cols, placedColumn{name: col})
				i = len(cols) - 1
			}
			cols[i].roles = append(cols[i].roles, role)
		}
		if s := t.DatabaseStrategy; s != nil {
			need(s.Column, "database sharding column")
			sharding[0] = s.Column
		}
		if s := t.TableStrategy; s != nil {
			need(s.Column, "table sharding column")
			sharding[1] = s.Column
		}
		need(t.KeyColumn, "key generator column")
		k := kin[t.Logical]
		if k == nil {
			k = []string{t.Logical}
		}
		for _, n := range t.DataNodes {
			out[n.DataSource] = append(out[n.DataSource], &placedTable{table: n.Table, logical: t.Logical, columns: cols,
				sharding: sharding, kin: k})
		}
	}
	for _, b := range rules.Broadcast {
		for name := range out {
			out[name] = append(out[name], &placedTable{table: b, logical: b, broadcast: true})
		}
	}
	return out
}

// dataNodeCheck is what check learned about the data nodes of one data
// source.
type dataNodeCheck struct {
	database string // the DSN's
	node     string // the primary asked
	placed   []*placedTable
	// checked: the primary answered the queries. notChecked says why
	// not otherwise.
	checked    bool
	notChecked string
	found      map[*placedTable]string   // placed table → its name on the server
	missing    map[*placedTable][]string // placed table that exists → columns it lacks
	others     int                       // tables in the database that the rules do not place there
	// types: the type of each column the rules need, by server table
	// name and lower-case column: COLUMN_TYPE and DATA_TYPE.
	types map[[2]string][2]string
}

// foundCount is the number of placed tables that exist.
func (d *dataNodeCheck) foundCount() int { return len(d.found) }

// missingColumns is the number of sharding columns missing from tables
// that exist.
func (d *dataNodeCheck) missingColumns() int {
	n := 0
	for _, cols := range d.missing {
		n += len(cols)
	}
	return n
}

// checkDataNodes asks the primary of the data source name which of the
// placed tables exist in the database of its DSN and have their columns,
// and adds a problem for each one missing. It is not run, and reports
// nothing, when the primary's own check already failed: that is a
// problem of its own.
func (r *checkReport) checkDataNodes(ctx context.Context, name string, placed []*placedTable, stmtTimeout time.Duration) {
	cfg := r.cfg
	d := &dataNodeCheck{database: cfg.Backend.DBName, node: cfg.Nodes[0].Name, placed: placed,
		found: map[*placedTable]string{}, missing: map[*placedTable][]string{}, types: map[[2]string][2]string{}}
	r.dataNodes = d
	problem := func(format string, args ...any) {
		r.problems = append(r.problems, name+": "+fmt.Sprintf(format, args...))
	}
	switch p := r.nodes[0]; {
	case len(placed) == 0:
		d.checked = true
		return
	case !p.reached() || p.queryErr != nil:
		d.notChecked = "the primary " + p.node.Name + " did not pass its own check"
		return
	case d.database == "":
		d.notChecked = "the DSN names no database"
		problem("the DSN names no database, and the rules place %s on this data source: name it in the DSN (…/dbname)",
			plural(len(placed), "table"))
		return
	}
	db, conn, err := dialNode(ctx, cfg, cfg.Nodes[0], checkConnectTimeout(cfg))
	if err == nil {
		defer db.Close()
		defer conn.Close()
		qctx, cancel := context.WithTimeout(ctx, stmtTimeout)
		defer cancel()
		err = d.query(qctx, conn)
	}
	if err != nil {
		d.notChecked = errText(cfg, err)
		problem("data nodes not checked: %s", d.notChecked)
		return
	}
	d.checked = true
	if d.foundCount() == 0 {
		addr := cfg.Nodes[0].Addr
		if cfg.Nodes[0].Net != "tcp" {
			addr = cfg.Nodes[0].Net + "(" + addr + ")"
		}
		held := "none of the " + plural(len(placed), "physical table") + " the rules place there"
		if len(placed) == 1 {
			held = "not the one physical table the rules place there (" + placed[0].table + ")"
		}
		r.problems = append(r.problems, fmt.Sprintf(
			"data source %s answers but holds %s (database %s on %s, which holds %s): is its DSN pointing at the right server/database?",
			name, held, d.database, addr, plural(d.others, "other table")))
		return
	}
	for _, t := range placed {
		onServer, ok := d.found[t]
		switch {
		case !ok && t.broadcast:
			problem("no table %s in database %s: broadcast table %s must exist on every data source", t.table, d.database, t.logical)
		case !ok:
			problem("no table %s in database %s: data node %s.%s of logical table %s", t.table, d.database, name, t.table, t.logical)
		}
		for _, col := range d.missing[t] {
			i := slices.IndexFunc(t.columns, func(c placedColumn) bool { return c.name == col })
			problem("table %s has no column %s: the %s of logical table %s", onServer, col, t.columns[i].why(), t.logical)
		}
	}
	for _, p := range d.typeMismatches() {
		problem("%s", p)
	}
}

// typeMismatches finds sharding columns of one logical table, or of the
// tables of one binding group, whose types are of different kinds: a key
// that is a number in one table and a string in the other compares, and
// is written, differently. One message per table or group and level.
func (d *dataNodeCheck) typeMismatches() []string {
	type seen struct {
		table, column, typ string // server table, column, COLUMN_TYPE
		logical, kind      string
	}
	first := map[string]seen{} // by kin and level
	reported := map[string]bool{}
	var out []string
	for _, t := range d.placed {
		onServer, ok := d.found[t]
		if !ok || t.broadcast {
			continue
		}
		for level, col := range t.sharding {
			ty, ok := d.types[[2]string{onServer, col}]
			if col == "" || !ok {
				continue
			}
			key := strings.Join(t.kin, ",") + "\x00" + strconv.Itoa(level)
			s := seen{onServer, col, ty[0], t.logical, typeKind(ty[1])}
			f, ok := first[key]
			if !ok {
				first[key] = s
				continue
			}
			if f.kind == s.kind || reported[key] {
				continue
			}
			reported[key] = true
			what := "logical table " + t.logical
			if f.logical != s.logical {
				what = "binding tables " + f.logical + " and " + s.logical
			}
			out = append(out, fmt.Sprintf("the %s sharding columns of %s are of different kinds of type: %s.%s is %s, %s.%s is %s: "+
				"a key is read, compared and routed alike only in columns of one kind",
				[]string{"database", "table"}[level], what, f.table, f.column, f.typ, s.table, s.column, s.typ))
		}
	}
	return out
}

// typeKind groups MySQL and MariaDB data types by how a key of that
// type is compared and sharded.
func typeKind(dataType string) string {
	switch t := strings.ToLower(dataType); t {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year", "bit":
		return "integer"
	case "decimal", "numeric", "float", "double", "real":
		return "number"
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set", "json":
		return "string"
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		return "binary"
	case "date", "datetime", "timestamp", "time":
		return "time"
	default:
		return t
	}
}

// query runs the two information_schema queries on conn and fills in
// found, missing and others.
func (d *dataNodeCheck) query(ctx context.Context, conn *sql.Conn) error {
	// With lower_case_table_names=0, the Linux default, table names are
	// case-sensitive: t_order_0 and T_ORDER_0 are different tables.
	var lowerCase int
	if err := conn.QueryRowContext(ctx, "SELECT @@lower_case_table_names").Scan(&lowerCase); err != nil {
		return err
	}
	rows, err := conn.QueryContext(ctx,
		"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", d.database)
	if err != nil {
		return err
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	exact := make(map[string]bool, len(tables))
	folded := make(map[string]string, len(tables)) // lower case → a name on the server
	for _, s := range tables {
		exact[s] = true
		if _, ok := folded[strings.ToLower(s)]; !ok || s == strings.ToLower(s) {
			folded[strings.ToLower(s)] = s
		}
	}
	// lookup finds a placed table on the server. Broadcast tables go by
	// their logical name, which SQL may write in any case (the rules hold
	// it in lower case).
	lookup := func(t *placedTable) (string, bool) {
		if lowerCase == 0 && !t.broadcast {
			return t.table, exact[t.table]
		}
		s, ok := folded[strings.ToLower(t.table)]
		return s, ok
	}
	used := map[string]bool{}
	var withCols []any // server names of found tables that need columns
	for _, t := range d.placed {
		s, ok := lookup(t)
		if !ok {
			continue
		}
		d.found[t] = s
		if !used[s] && len(t.columns) > 0 {
			withCols = append(withCols, s)
		}
		used[s] = true
	}
	d.others = len(tables) - len(used)
	if len(withCols) == 0 {
		return nil
	}
	rows, err = conn.QueryContext(ctx, "SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN (?"+
		strings.Repeat(", ?", len(withCols)-1)+")", append([]any{d.database}, withCols...)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	has := map[[2]string]bool{} // server table name, lower-case column
	for rows.Next() {
		var t, c, colType, dataType string
		if err := rows.Scan(&t, &c, &colType, &dataType); err != nil {
			return err
		}
		has[[2]string{t, strings.ToLower(c)}] = true
		d.types[[2]string{t, strings.ToLower(c)}] = [2]string{colType, dataType}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, t := range d.placed {
		s, ok := d.found[t]
		if !ok {
			continue
		}
		for _, c := range t.columns {
			if !has[[2]string{s, c.name}] {
				d.missing[t] = append(d.missing[t], c.name)
			}
		}
	}
	return nil
}

// summary is the data nodes' line of the text report.
func (d *dataNodeCheck) summary() string {
	switch {
	case len(d.placed) == 0:
		return "data nodes: the rules place no table on this data source"
	case !d.checked:
		return "data nodes: not checked: " + d.notChecked
	}
	s := fmt.Sprintf("data nodes: %d of %s found in database %s on %s", d.foundCount(),
		plural(len(d.placed), "table"), d.database, d.node)
	if n := d.missingColumns(); n > 0 {
		return s + ", " + plural(n, "sharding column") + " missing"
	}
	return s + ", sharding columns present"
}

// dataNodesJSON is a data source's data nodes in check -json.
type dataNodesJSON struct {
	Database string `json:"database"` // the DSN's
	Node     string `json:"node"`     // the primary asked
	// Checked: the primary answered. Error says why not otherwise.
	Checked bool   `json:"checked"`
	Error   string `json:"error,omitempty"`
	Placed  int    `json:"placed"` // physical tables the rules place here
	Found   int    `json:"found"`  // of them, those that exist
	// OtherTables counts the database's tables the rules do not place
	// here.
	OtherTables int             `json:"other_tables"`
	Tables      []dataTableJSON `json:"tables"`
}

// dataTableJSON is one physical table the rules place on a data source.
type dataTableJSON struct {
	Table     string `json:"table"`
	Logical   string `json:"logical"`
	Broadcast bool   `json:"broadcast,omitempty"`
	// Exists is null when not checked.
	Exists         *bool    `json:"exists"`
	Columns        []string `json:"columns"`         // the sharding and key columns it needs
	MissingColumns []string `json:"missing_columns"` // of them, those it lacks
	// ColumnTypes: the COLUMN_TYPE of each of them that it has.
	ColumnTypes map[string]string `json:"column_types,omitempty"`
}

func (d *dataNodeCheck) json() *dataNodesJSON {
	j := &dataNodesJSON{Database: d.database, Node: d.node, Checked: d.checked, Error: d.notChecked,
		Placed: len(d.placed), Found: d.foundCount(), OtherTables: d.others, Tables: []dataTableJSON{}}
	for _, t := range d.placed {
		tj := dataTableJSON{Table: t.table, Logical: t.logical, Broadcast: t.broadcast,
			Columns: []string{}, MissingColumns: append([]string{}, d.missing[t]...)}
		for _, c := range t.columns {
			tj.Columns = append(tj.Columns, c.name)
		}
		if d.checked {
			onServer, ok := d.found[t]
			tj.Exists = &ok
			for _, c := range t.columns {
				if ty, ok := d.types[[2]string{onServer, c.name}]; ok {
					if tj.ColumnTypes == nil {
						tj.ColumnTypes = map[string]string{}
					}
					tj.ColumnTypes[c.name] = ty[0]
				}
			}
		}
		j.Tables = append(j.Tables, tj)
	}
	return j
}
