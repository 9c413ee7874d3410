package shard

// INSERT and REPLACE into a sharded table: each VALUES row goes to the
// data node of its sharding values; the rows of one node make one unit.
// A key column the statement omits is added, with a key from the table's
// generator for every row.

import (
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

type insertPlan struct {
	table  *routeTable
	rows   int
	db     []condValue // per row: the database sharding value; nil: no database strategy
	tbl    []condValue // per row: the table sharding value; nil: no table strategy
	dbGen  bool        // the database sharding value is the generated key
	tblGen bool        // the table sharding value is the generated key
	gen    KeyGenerator
	keyArg bool // print generated keys as '?'
}

func (a *analyzer) shardedInsert(p *routePlan, ins *sqlparser.Insert) (*routePlan, error) {
	t := a.r.tables[tableNameOf(ins.Table)]
	if t == nil {
		// The target is a broadcast table and a sharded one is read in a
		// subquery (refused before): cannot happen, but be safe.
		return nil, a.fail(unsupported("INSERT that reads a sharded table"), p.shards[0].table.name, "")
	}
	rows := ins.Rows.(sqlparser.Values)
	if len(ins.Columns) == 0 {
		if a.insertCols == nil {
			// Router.RouteContext asks for the table's columns.
			p.needCols = t.name
			return p, nil
		}
		n := len(a.insertCols)
		if len(rows) > 0 {
			n = len(rows[0])
		}
		cols, err := a.implicitColumns(t, n)
		if err != nil {
			return nil, err
		}
		ins.Columns = cols
	}
	cols := make(map[string]int, len(ins.Columns))
	for i, c := range ins.Columns {
		cols[c.Lowered()] = i
	}
	for i, row := range rows {
		if len(row) != len(ins.Columns) {
			return nil, a.fail(unsupported("row %d has %d values for %d columns", i+1, len(row), len(ins.Columns)), t.name, "")
		}
	}
	for _, e := range ins.OnDup {
		if col := e.Name.Name.Lowered(); t.hasColumn(col) {
			return nil, a.fail(unsupported("ON DUPLICATE KEY UPDATE of sharding column %s", col), t.name, col)
		}
	}
	if t.rule.DatabaseStrategy == nil && len(t.ds) > 1 {
		return nil, a.fail(unsupported("table %s has %d data sources and no database strategy: a row has no one place", t.name, len(t.ds)), t.name, "")
	}
	if t.rule.TableStrategy == nil {
		for d := range t.ds {
			if len(t.dsTables[d]) > 1 {
				return nil, a.fail(unsupported("table %s has %d tables in %s and no table strategy: a row has no one place", t.name, len(t.dsTables[d]), t.ds[d]), t.name, "")
			}
		}
	}

	ip := &insertPlan{table: t, rows: len(rows), keyArg: a.nargs > 0}
	keyCol := strings.ToLower(t.rule.KeyColumn)
	generate := false
	if _, ok := cols[keyCol]; keyCol != "" && !ok {
		ip.gen = a.r.rules.KeyGenerators[t.rule.KeyGenerator]
		if ip.gen == nil {
			return nil, a.fail(unsupported("key generator %q of table %s is not configured", t.rule.KeyGenerator, t.name), t.name, keyCol)
		}
		generate = true
	}
	values := func(col string) ([]condValue, bool, error) {
		if col == "" {
			return nil, false, nil
		}
		i, ok := cols[col]
		if !ok {
			if generate && col == keyCol {
				return nil, true, nil
			}
			return nil, false, a.fail(fmt.Errorf("%w: the INSERT gives no value for sharding column %s", ErrNoShardKey, col), t.name, col)
		}
		out := make([]condValue, len(rows))
		for r, row := range rows {
			v, ok := literalValue(row[i])
			if !ok {
				return nil, false, a.fail(unsupported("the value of sharding column %s in row %d is not a literal or '?': %s", col, r+1, sqlparser.String(row[i])), t.name, col)
			}
			out[r] = v
		}
		return out, false, nil
	}
	var err error
	if ip.db, ip.dbGen, err = values(t.dbCol); err != nil {
		return nil, err
	}
	if ip.tbl, ip.tblGen, err = values(t.tblCol); err != nil {
		return nil, err
	}

	c := sqlparser.CloneStatement(ins).(*sqlparser.Insert)
	if generate {
		c.Columns = append(c.Columns, sqlparser.NewIdentifierCI(t.rule.KeyColumn))
		crow := c.Rows.(sqlparser.Values)
		for i := range crow {
			crow[i] = append(crow[i], &sqlparser.Argument{Name: keyArgName})
		}
	}
	if err := a.rename(c, false); err != nil {
		return nil, err
	}
	p.tmpl = buildTemplate(c, nil, true)
	p.ins = ip
	return p, nil
}

// routeInsert places every row and renders one unit per data node.
func (p *routePlan) routeInsert(r *Router, sql string, args []driver.NamedValue) (*Route, error) {
	ip := p.ins
	t := ip.table
	var keys []int64
	if ip.gen != nil {
		keys = make([]int64, ip.rows)
		for i := range keys {
			k, err := ip.gen.NextID()
			if err != nil {
				return nil, &RouteError{Table: t.name, Column: t.rule.KeyColumn, SQL: sql, Err: err}
			}
			keys[i] = k
		}
	}
	value := func(vals []condValue, gen bool, row int) Value {
		if gen {
			return keys[row]
		}
		return vals[row].value(args)
	}
	nodeOf := make([]int, ip.rows)
	count := make(map[int]int, 1)
	var order []int
	for row := 0; row < ip.rows; row++ {
		d := 0
		if t.dbCol != "" {
			v := value(ip.db, ip.dbGen, row)
			if v == nil {
				return nil, &RouteError{Table: t.name, Column: t.dbCol, SQL: sql, Err: fmt.Errorf("%w: row %d has NULL for sharding column %s", ErrNoShardKey, row+1, t.dbCol)}
			}
			ds, err := t.rule.DatabaseStrategy.Algorithm.Shard(t.ds, v)
			if err != nil {
				return nil, &RouteError{Table: t.name, Column: t.dbCol, SQL: sql, Err: err}
			}
			var ok bool
			if d, ok = t.dsIndex[ds]; !ok {
				return nil, &RouteError{Table: t.name, Column: t.dbCol, SQL: sql, Err: targetErr(t.rule.DatabaseStrategy, ds, t.ds)}
			}
		}
		node := t.dsNodes[d][0]
		if t.tblCol != "" {
			v := value(ip.tbl, ip.tblGen, row)
			if v == nil {
				return nil, &RouteError{Table: t.name, Column: t.tblCol, SQL: sql, Err: fmt.Errorf("%w: row %d has NULL for sharding column %s", ErrNoShardKey, row+1, t.tblCol)}
			}
			tbl, err := t.rule.TableStrategy.Algorithm.Shard(t.dsTables[d], v)
			if err != nil {
				return nil, &RouteError{Table: t.name, Column: t.tblCol, SQL: sql, Err: err}
			}
			var ok bool
			if node, ok = t.nodeOf[d][tbl]; !ok {
				return nil, &RouteError{Table: t.name, Column: t.tblCol, SQL: sql, Err: targetErr(t.rule.TableStrategy, tbl, t.dsTables[d])}
			}
		}
		nodeOf[row] = node
		if count[node] == 0 {
			order = append(order, node)
		}
		count[node]++
	}
	slices.Sort(order)

	rt := newRoute(len(order))
	rt.Write, rt.Tables = true, p.tables
	rt.Reason = ReasonSingleShard
	if len(order) > 1 {
		rt.Reason = ReasonMultiShard
	}
	if keys != nil {
		rt.LastInsertID = keys[0]
	}
	u := unitRender{in: args, keyArg: ip.keyArg}
	for k, node := range order {
		rows := make([]int, 0, count[node])
		for row, n := range nodeOf {
			if n == node {
				rows = append(rows, row)
			}
		}
		u.tables = p.unitTables(node)
		u.out = make([]driver.NamedValue, 0, p.nargs+len(keys))
		rt.Units[k] = Unit{DataSource: t.nodes[node].DataSource, SQL: p.tmpl.renderRows(&u, rows, keys)}
		rt.Units[k].Args = u.out
	}
	return rt, nil
}

// shardedInsertSelect routes INSERT … SELECT into a sharded table whose
// source tables are the target itself, tables bound with it, or broadcast
// tables (ShardingSphere's rule): every data node copies its own rows,
// the SELECT's sharding conditions choosing the nodes, as for an UPDATE.
// That places every row correctly only if each sharding column of the
// target is fed, in the column list, by the same sharding column of a
// source table, which is checked; a generated key has no value to give
// every row, and is refused.
func (a *analyzer) shardedInsertSelect(p *routePlan, ins *sqlparser.Insert, sel *sqlparser.Select) (*routePlan, error) {
	t := p.shards[0].table
	if len(ins.Columns) == 0 {
		// As INSERT … VALUES without a column list: the table's columns
		// (Router.RouteContext), then routed as if they had been written.
		if a.insertCols == nil {
			p.needCols = t.name
			return p, nil
		}
		for _, e := range sel.SelectExprs.Exprs {
			if _, ok := e.(*sqlparser.StarExpr); ok {
				return nil, a.fail(unsupported("INSERT … SELECT * into sharded table %s without a column list (name the columns it selects)", t.name), t.name, "")
			}
		}
		cols, err := a.implicitColumns(t, len(sel.SelectExprs.Exprs))
		if err != nil {
			return nil, err
		}
		ins.Columns = cols
	}
	if len(sel.SelectExprs.Exprs) != len(ins.Columns) {
		return nil, a.fail(unsupported("INSERT … SELECT gives %d values for %d columns", len(sel.SelectExprs.Exprs), len(ins.Columns)), t.name, "")
	}
	for _, e := range ins.OnDup {
		if col := e.Name.Name.Lowered(); t.hasColumn(col) {
			return nil, a.fail(unsupported("ON DUPLICATE KEY UPDATE of sharding column %s", col), t.name, col)
		}
	}
	if key := strings.ToLower(t.rule.KeyColumn); key != "" && !slices.ContainsFunc(ins.Columns, func(c sqlparser.IdentifierCI) bool { return c.Lowered() == key }) {
		return nil, a.fail(unsupported("INSERT … SELECT into table %s without its generated key column %s", t.name, key), t.name, key)
	}
	if name := a.outerJoinKeeps(sel.From); name != "" {
		return nil, a.fail(unsupported("INSERT … SELECT with an outer join that keeps every row of a table that is not sharded against sharded table %s (its rows without a match have no sharding values)", name), name, "")
	}
	cond, scope, err := a.topLevel(p, sel.From, sel.Where, sel.From, append(selectParts(sel), ins.OnDup))
	if err != nil {
		return nil, err
	}
	// feeds reports whether the SELECT's value for column col of the
	// target is the same sharding column of a source table.
	feeds := func(col string, tableCol func(*routeTable) string) error {
		if col == "" {
			return nil
		}
		i := slices.IndexFunc(ins.Columns, func(c sqlparser.IdentifierCI) bool { return c.Lowered() == col })
		if i < 0 {
			return a.fail(fmt.Errorf("%w: the INSERT gives no value for sharding column %s", ErrNoShardKey, col), t.name, col)
		}
		ae, ok := sel.SelectExprs.Exprs[i].(*sqlparser.AliasedExpr)
		var cn *sqlparser.ColName
		if ok {
			cn, ok = ae.Expr.(*sqlparser.ColName)
		}
		if ok {
			// A column of a source table, or of a derived table that
			// selects it: a value of this node's rows.
			if src, found := scope.source(cn, false); found && src.col == tableCol(scope.shards[src.ref].table) {
				return nil
			}
		}
		return a.fail(unsupported("INSERT … SELECT must fill sharding column %s of %s with the same sharding column of a source table, so each row stays on its data node; got %s",
			col, t.name, sqlparser.String(sel.SelectExprs.Exprs[i])), t.name, col)
	}
	if err := feeds(t.dbCol, func(s *routeTable) string { return s.dbCol }); err != nil {
		return nil, err
	}
	if err := feeds(t.tblCol, func(s *routeTable) string { return s.tblCol }); err != nil {
		return nil, err
	}
	p.cond, p.pinned = cond, a.pinned
	p.writeLimit = sel.Limit != nil
	c := sqlparser.CloneStatement(ins)
	if err := a.rename(c, true); err != nil {
		return nil, err
	}
	p.tmpl = buildTemplate(c, nil, false)
	return p, nil
}

// implicitColumns is the column list of an INSERT without one, whose
// rows (or SELECT) have n values: the table's columns when there is a
// value for each; all but the key column when there is one value fewer
// and the table generates that key (as ShardingSphere does).
func (a *analyzer) implicitColumns(t *routeTable, n int) (sqlparser.Columns, error) {
	keyCol := strings.ToLower(t.rule.KeyColumn)
	var out sqlparser.Columns
	switch {
	case n == len(a.insertCols):
		for _, c := range a.insertCols {
			out = append(out, sqlparser.NewIdentifierCI(c))
		}
	case n == len(a.insertCols)-1 && keyCol != "" && slices.ContainsFunc(a.insertCols, func(c string) bool { return strings.EqualFold(c, keyCol) }):
		for _, c := range a.insertCols {
			if !strings.EqualFold(c, keyCol) {
				out = append(out, sqlparser.NewIdentifierCI(c))
			}
		}
	default:
		return nil, a.fail(unsupported("INSERT without a column list has %d values per row, table %s has %d columns (%s)",
			n, t.name, len(a.insertCols), strings.Join(a.insertCols, ", ")), t.name, "")
	}
	return out, nil
}
