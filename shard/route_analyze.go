package shard

// Analysis of a statement, once per SQL text: which tables it touches,
// which kind of route it takes, its sharding conditions and its rewrite
// templates. The per-call half is in route_plan.go.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

type refKind uint8

const (
	refOther     refKind = iota // in the default data source
	refBroadcast                // in every data source
	refSharded                  // in data nodes
)

// tableUse counts the references of one logical table in a statement.
type tableUse struct {
	name     string // lower case
	kind     refKind
	all, top int // references anywhere / in the statement's own FROM or target
	fk       int // references by FOREIGN KEY … REFERENCES (not in all)
}

// shardRef is a sharded table of a statement.
type shardRef struct {
	table  *routeTable
	marker int // its table-reference index in the templates
}

type analyzer struct {
	r    *Router
	sql  string
	stmt sqlparser.Statement

	uses  []*tableUse
	useOf map[string]*tableUse
	nargs int // placeholders ('?')
	// insertCols are the target table's columns, for an INSERT or
	// REPLACE without a column list (Router.RouteContext); nil: unknown.
	insertCols []string
	namedArg   string // a bind variable other than '?', if any

	markers map[string]int // routed table (lower) → table-reference index
	names   []string       // per table reference: logical name
	pinned  []pinnedCond   // subqueries not linked with the query around them (see level)
	placed  int            // subqueries and derived tables over sharded tables that level placed
}

func (r *Router) analyze(sql string) *routePlan { return r.analyzeWith(sql, nil) }

// analyzeWith analyses sql; cols are the columns of the target of an
// INSERT without a column list.
func (r *Router) analyzeWith(sql string, cols []string) *routePlan {
	if p := r.analyzeTableAdmin(sql); p != nil {
		return p
	}
	stmt, err := r.parser.Parse(sql)
	if err != nil {
		// What the parser cannot read may still go to the default data
		// source, as it is, when it names no sharded or broadcast table.
		if name := r.mentionedTable(sql, nil); name != "" || r.rules.DefaultDataSource == "" {
			return &routePlan{err: &RouteError{Table: name, SQL: sql, Err: fmt.Errorf("%w: SQL the parser does not understand: %v", ErrUnsupported, err)}}
		}
		return &routePlan{kind: planFixed, ds: r.rules.DefaultDataSource, reason: ReasonDefault}
	}
	a := &analyzer{r: r, sql: sql, stmt: stmt, useOf: make(map[string]*tableUse), markers: make(map[string]int), insertCols: cols}
	p, err := a.run()
	if err != nil {
		var re *RouteError
		if !errors.As(err, &re) {
			re = &RouteError{Err: err}
		}
		if re.SQL == "" {
			re.SQL = sql
		}
		return &routePlan{err: re}
	}
	return p
}

func (a *analyzer) fail(err error, table, column string) error {
	return &RouteError{Table: table, Column: column, SQL: a.sql, Err: err}
}

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnsupported}, args...)...)
}

// statement kinds as the analysis sees them
type stmtClass uint8

const (
	classOther stmtClass = iota
	classRead            // SELECT, UNION
	classDML             // INSERT, REPLACE, UPDATE, DELETE
	classDDL             // CREATE/ALTER/DROP/TRUNCATE TABLE, CREATE INDEX, CREATE/DROP VIEW
	classInfo            // SHOW, DESCRIBE, EXPLAIN: read-only, not a query of rows we merge
)

func classify(stmt sqlparser.Statement) stmtClass {
	switch stmt.(type) {
	case *sqlparser.Select, *sqlparser.Union:
		return classRead
	case *sqlparser.Insert, *sqlparser.Update, *sqlparser.Delete:
		return classDML
	case *sqlparser.CreateTable, *sqlparser.AlterTable, *sqlparser.DropTable, *sqlparser.TruncateTable,
		*sqlparser.CreateView, *sqlparser.DropView:
		return classDDL
	case *sqlparser.Show, *sqlparser.ExplainTab, *sqlparser.ExplainStmt:
		return classInfo
	}
	return classOther
}

func (a *analyzer) run() (*routePlan, error) {
	a.collect()
	p := &routePlan{nargs: a.nargs}
	for _, u := range a.uses {
		p.tables = append(p.tables, u.name)
	}
	class := classify(a.stmt)
	p.write = class == classDML || class == classDDL
	if class == classOther || class == classInfo {
		// The AST of some statements does not keep their tables (LOAD
		// DATA, OPTIMIZE TABLE …): their tokens tell.
		if name := a.r.mentionedTable(a.sql, a.useOf); name != "" {
			return nil, a.fail(unsupported("%s naming table %s", stmtName(a.stmt), name), name, "")
		}
	}

	var sharded, broadcast, other []*tableUse
	for _, u := range a.uses {
		switch u.kind {
		case refSharded:
			sharded = append(sharded, u)
		case refBroadcast:
			broadcast = append(broadcast, u)
		default:
			other = append(other, u)
		}
	}
	if d, ok := a.stmt.(*sqlparser.DropTable); ok && len(d.FromTables) > 1 && len(sharded)+len(broadcast) > 0 && !a.boundTogether(sharded, broadcast, other) {
		return a.dropTables(p, d)
	}
	if d, ok := a.stmt.(*sqlparser.DropView); ok && len(sharded)+len(broadcast) > 0 {
		return a.dropViews(d)
	}
	switch {
	case len(sharded) > 0:
		return a.sharded(p, class, sharded, other)
	case len(broadcast) > 0:
		return a.broadcastOnly(p, class, broadcast, other)
	}
	return a.defaultOnly(p, class, other)
}

// defaultOnly routes a statement without sharded or broadcast tables.
func (a *analyzer) defaultOnly(p *routePlan, class stmtClass, other []*tableUse) (*routePlan, error) {
	if ds := a.r.rules.DefaultDataSource; ds != "" {
		p.kind, p.ds, p.reason = planFixed, ds, ReasonDefault
		return p, nil
	}
	if len(other) > 0 {
		return nil, a.fail(fmt.Errorf("%w: it is neither sharded nor broadcast and there is no default data source", ErrUnknownTable), other[0].name, "")
	}
	if (class == classRead || class == classInfo) && a.r.readDS != "" {
		// SELECT 1, SELECT NOW(): any data source answers.
		p.kind, p.ds, p.reason = planFixed, a.r.readDS, ReasonBroadcastRead
		return p, nil
	}
	return nil, a.fail(unsupported("the statement names no table and there is no default data source"), "", "")
}

// broadcastOnly routes a statement whose routed tables are all broadcast.
func (a *analyzer) broadcastOnly(p *routePlan, class stmtClass, broadcast, other []*tableUse) (*routePlan, error) {
	switch class {
	case classRead, classInfo:
		if len(other) > 0 {
			// The default data source has the broadcast tables too.
			if ds := a.r.rules.DefaultDataSource; ds != "" {
				p.kind, p.ds, p.reason = planFixed, ds, ReasonDefault
				return p, nil
			}
			return nil, a.fail(fmt.Errorf("%w: it is neither sharded nor broadcast and there is no default data source", ErrUnknownTable), other[0].name, "")
		}
		p.kind, p.ds, p.reason = planFixed, a.r.readDS, ReasonBroadcastRead
		if a.r.readDS == "" {
			return nil, a.fail(unsupported("no data source is configured"), broadcast[0].name, "")
		}
	case classDML, classDDL:
		if len(other) > 0 {
			targets := a.writeTargets()
			for _, b := range broadcast {
				if targets[b.name] {
					return nil, a.fail(unsupported("a write of broadcast table %s that reads %s, which only the default data source has", b.name, other[0].name), b.name, "")
				}
			}
			if ds := a.r.rules.DefaultDataSource; ds != "" {
				p.kind, p.ds, p.reason = planFixed, ds, ReasonDefault
				return p, nil
			}
			return nil, a.fail(fmt.Errorf("%w: it is neither sharded nor broadcast and there is no default data source", ErrUnknownTable), other[0].name, "")
		}
		p.kind, p.reason = planBroadcastWrite, ReasonBroadcastWrite
		if len(a.r.dsNames) == 0 {
			return nil, a.fail(unsupported("no data source is configured"), broadcast[0].name, "")
		}
	default:
		return nil, a.fail(unsupported("%s on a broadcast table", stmtName(a.stmt)), broadcast[0].name, "")
	}
	// The text goes as it is unless a table is qualified with a database
	// name, which means nothing on the data sources.
	if a.qualifiedRoutedTable() {
		if a.namedArg != "" {
			return nil, a.fail(unsupported("bind variable %s (use '?')", a.namedArg), "", "")
		}
		if ddl, ok := a.stmt.(sqlparser.DDLStatement); ok && !ddl.IsFullyParsed() {
			return nil, a.fail(unsupported("DDL that the parser does not fully understand"), broadcast[0].name, "")
		}
		// Broadcast tables keep their names: aliases stay (a self-join
		// needs them), database qualifiers go.
		c := sqlparser.CloneStatement(a.stmt)
		if err := a.rename(c, true); err != nil {
			return nil, err
		}
		p.tmpl = buildTemplate(c, nil, false)
		p.fixedNames = make([]string, len(a.names))
		for i, n := range a.names {
			p.fixedNames[i] = escapeTableName(n)
		}
	}
	return p, nil
}

// sharded analyses a statement that touches sharded tables.
func (a *analyzer) sharded(p *routePlan, class stmtClass, sharded, other []*tableUse) (*routePlan, error) {
	first := sharded[0].name
	switch s := a.stmt.(type) {
	case *sqlparser.Union:
		return nil, a.fail(unsupported("UNION over a sharded table"), first, "")
	case *sqlparser.Select:
		if s.With != nil {
			return nil, a.fail(unsupported("WITH (common table expression) in a query of a sharded table"), first, "")
		}
	case *sqlparser.Insert:
		switch rows := s.Rows.(type) {
		case sqlparser.Values:
		case *sqlparser.Select:
			if rows.With != nil {
				return nil, a.fail(unsupported("WITH (common table expression) in INSERT … SELECT of a sharded table"), first, "")
			}
			if a.r.tables[tableNameOf(s.Table)] == nil {
				return nil, a.fail(unsupported("INSERT … SELECT of a sharded table into a table that is not sharded"), first, "")
			}
		default:
			return nil, a.fail(unsupported("INSERT … SELECT … UNION into a sharded table"), first, "")
		}
	case *sqlparser.Update:
		if s.With != nil {
			return nil, a.fail(unsupported("WITH (common table expression) in an UPDATE of a sharded table"), first, "")
		}
	case *sqlparser.Delete:
		if s.With != nil {
			return nil, a.fail(unsupported("WITH (common table expression) in a DELETE of a sharded table"), first, "")
		}
	}
	if class == classOther || class == classInfo {
		return nil, a.fail(unsupported("%s on a sharded table", stmtName(a.stmt)), first, "")
	}
	// Subqueries and derived tables over sharded tables: in reads, UPDATE,
	// DELETE and INSERT … SELECT (see level); not in DDL or INSERT … VALUES.
	subq := true
	switch s := a.stmt.(type) {
	case *sqlparser.Select, *sqlparser.Update, *sqlparser.Delete:
	case *sqlparser.Insert:
		_, subq = s.Rows.(*sqlparser.Select)
	default:
		subq = false
	}
	for _, u := range sharded {
		if u.all > u.top && !subq {
			return nil, a.fail(unsupported("a sharded table in a subquery or derived table of %s", stmtName(a.stmt)), u.name, "")
		}
	}
	if v, ok := a.stmt.(*sqlparser.CreateView); ok {
		var err error
		if sharded, err = a.checkView(v, sharded); err != nil {
			return nil, err
		}
		first = sharded[0].name
	} else if class == classDDL {
		var err error
		if sharded, other, err = a.foreignKeys(sharded, other); err != nil {
			return nil, err
		}
		first = sharded[0].name
	}
	if len(other) > 0 {
		return nil, a.fail(fmt.Errorf("%w: %s is sharded, %s is only in the default data source", ErrCrossShardJoin, first, other[0].name), first+", "+other[0].name, "")
	}
	insSel := false
	if ins, ok := a.stmt.(*sqlparser.Insert); ok {
		_, insSel = ins.Rows.(*sqlparser.Select)
	}
	for i, u := range sharded {
		// INSERT INTO t … SELECT … FROM t names t twice: the target and
		// the source, on the same data node.
		if u.top > 1 && !(insSel && i == 0 && u.top == 2) {
			return nil, a.fail(fmt.Errorf("%w: %s joined with itself", ErrCrossShardJoin, u.name), u.name, "")
		}
		if i == 0 {
			continue
		}
		ok, err := a.r.bindable(a.r.tables[first], a.r.tables[u.name])
		if !ok {
			return nil, a.fail(fmt.Errorf("%w: %s and %s are not binding tables", ErrCrossShardJoin, first, u.name), first+", "+u.name, "")
		}
		if err != nil {
			return nil, a.fail(fmt.Errorf("%w: %v", ErrCrossShardJoin, err), first+", "+u.name, "")
		}
	}
	for _, u := range sharded {
		if t := a.r.tables[u.name]; t.err != nil {
			return nil, a.fail(unsupported("%v", t.err), u.name, "")
		}
	}
	if err := a.checkBindingJoin(); err != nil {
		return nil, err
	}
	if a.namedArg != "" {
		return nil, a.fail(unsupported("bind variable %s (use '?')", a.namedArg), first, "")
	}
	if ddl, ok := a.stmt.(sqlparser.DDLStatement); ok && !ddl.IsFullyParsed() {
		return nil, a.fail(unsupported("DDL that the parser does not fully understand"), first, "")
	}

	// Table references: sharded first (in statement order), then
	// broadcast tables.
	for _, u := range sharded {
		a.addMarker(u.name)
		p.shards = append(p.shards, &shardRef{table: a.r.tables[u.name], marker: a.markers[u.name]})
	}
	for _, u := range a.uses {
		if u.kind == refBroadcast {
			a.addMarker(u.name)
		}
	}
	p.refNames = make([]string, len(a.names))
	for i, n := range a.names {
		p.refNames[i] = escapeTableName(n)
	}
	p.kind = planSharded

	switch s := a.stmt.(type) {
	case *sqlparser.Select:
		return a.shardedSelect(p, s)
	case *sqlparser.Insert:
		if sel, ok := s.Rows.(*sqlparser.Select); ok {
			return a.shardedInsertSelect(p, s, sel)
		}
		return a.shardedInsert(p, s)
	case *sqlparser.Update:
		return a.shardedUpdate(p, s)
	case *sqlparser.Delete:
		return a.shardedDelete(p, s)
	}
	return a.shardedDDL(p)
}

func (a *analyzer) addMarker(name string) {
	if _, ok := a.markers[name]; !ok {
		a.markers[name] = len(a.names)
		a.names = append(a.names, name)
	}
}

// scope returns the condition scope of the top-level tables of a
// statement: alias or table name → sharded reference.
func (a *analyzer) scope(p *routePlan, tables []sqlparser.TableExpr) *condScope {
	s := &condScope{shards: p.shards, byName: make(map[string]int)}
	index := make(map[string]int, len(p.shards))
	for i, sr := range p.shards {
		index[sr.table.name] = i
	}
	forTopTables(tables, func(t *sqlparser.AliasedTableExpr, name sqlparser.TableName) {
		i, ok := index[strings.ToLower(name.Name.String())]
		if !ok {
			return
		}
		if !slices.Contains(s.local, i) {
			s.local = append(s.local, i)
		}
		if t.As.NotEmpty() {
			s.byName[strings.ToLower(t.As.String())] = i
		} else {
			s.byName[strings.ToLower(name.Name.String())] = i
		}
	})
	return s
}

// where returns the sharding conditions of a WHERE clause and of the ON
// clauses of inner joins (an outer join's ON does not filter the rows of
// the other side).
func (a *analyzer) where(s *condScope, w *sqlparser.Where, from []sqlparser.TableExpr) *routeCond {
	c := condAllNode
	if w != nil {
		c = s.build(w.Expr)
	}
	innerJoinConditions(from, func(on sqlparser.Expr) { c = condAndOf(c, s.build(on)) })
	return c
}

// innerJoinConditions calls f with the ON condition of every inner join
// of from, nested ones included; an outer join's is left out, and so are
// the joins under it.
func innerJoinConditions(from []sqlparser.TableExpr, f func(sqlparser.Expr)) {
	var inner func(t sqlparser.TableExpr)
	inner = func(t sqlparser.TableExpr) {
		switch t := t.(type) {
		case *sqlparser.JoinTableExpr:
			if t.Join != sqlparser.NormalJoinType && t.Join != sqlparser.StraightJoinType {
				return
			}
			if t.Condition != nil && t.Condition.On != nil {
				f(t.Condition.On)
			}
			inner(t.LeftExpr)
			inner(t.RightExpr)
		case *sqlparser.ParenTableExpr:
			for _, x := range t.Exprs {
				inner(x)
			}
		}
	}
	for _, t := range from {
		inner(t)
	}
}

func (a *analyzer) shardedSelect(p *routePlan, sel *sqlparser.Select) (*routePlan, error) {
	p.read = true
	var err error
	if p.cond, _, err = a.topLevel(p, sel.From, sel.Where, sel.From, selectParts(sel)); err != nil {
		return nil, err
	}
	p.pinned = a.pinned
	c := sqlparser.CloneStatement(sel).(*sqlparser.Select)
	if err := a.rename(c, true); err != nil {
		return nil, err
	}
	p.tmpl = buildTemplate(c, nil, false)
	if hasSubquery(sel.GroupBy) || hasSubquery(sel.Having) {
		p.multiErr = a.fail(unsupported("a subquery in GROUP BY or HAVING over several shards"), p.shards[0].table.name, "")
		return p, nil
	}
	if name := a.outerJoinKeeps(sel.From); name != "" {
		p.multiErr = a.fail(unsupported("an outer join that keeps every row of a table that is not sharded against sharded table %s, over several shards (each would return the rows without a match)", name), name, "")
		return p, nil
	}
	m := sqlparser.CloneStatement(c).(*sqlparser.Select)
	rw, err := rewriteMultiSelect(m)
	if err != nil {
		p.multiErr = a.fail(err, p.shards[0].table.name, "")
		return p, nil
	}
	p.multi = buildTemplate(m, rw.limitNode, false)
	p.merge = rw
	return p, nil
}

func (a *analyzer) shardedDelete(p *routePlan, d *sqlparser.Delete) (*routePlan, error) {
	t := p.shards[0].table
	at, ok := singleTable(d.TableExprs)
	if !ok || len(d.Targets) > 1 {
		return nil, a.fail(unsupported("multi-table DELETE of a sharded table"), t.name, "")
	}
	if len(d.Targets) == 1 {
		ref := at.As.String()
		if ref == "" {
			ref = t.name
		}
		if !strings.EqualFold(d.Targets[0].Name.String(), ref) {
			return nil, a.fail(unsupported("multi-table DELETE of a sharded table"), t.name, "")
		}
	}
	if tableNameOf(at) != t.name {
		return nil, a.fail(unsupported("DELETE of table %s that reads sharded table %s in a subquery", tableNameOf(at), t.name), t.name, "")
	}
	var err error
	if p.cond, _, err = a.topLevel(p, d.TableExprs, d.Where, nil, []sqlparser.SQLNode{d.OrderBy, d.Limit}); err != nil {
		return nil, err
	}
	p.pinned = a.pinned
	p.writeLimit = d.Limit != nil
	c := sqlparser.CloneStatement(d).(*sqlparser.Delete)
	c.Targets = nil
	// Single-table DELETE … AS alias needs MySQL 8.0.16 or MariaDB 11.6:
	// the alias goes, its qualifiers become the physical table name.
	if err := a.rename(c, false); err != nil {
		return nil, err
	}
	p.tmpl = buildTemplate(c, nil, false)
	return p, nil
}

func (a *analyzer) shardedDDL(p *routePlan) (*routePlan, error) {
	targets := a.writeTargets()
	for _, u := range a.uses {
		if u.kind == refBroadcast && targets[u.name] {
			// It would run once per data node, several times per data source.
			return nil, a.fail(unsupported("DDL of sharded table %s and broadcast table %s in one statement", p.shards[0].table.name, u.name), u.name, "")
		}
	}
	p.ddl = true
	p.cond = condAllNode
	c := sqlparser.CloneStatement(a.stmt)
	// A view's SELECT keeps the logical names as aliases, so that its
	// columns have the same names on every node.
	_, view := c.(*sqlparser.CreateView)
	if err := a.rename(c, view); err != nil {
		return nil, err
	}
	p.tmpl = buildTemplate(c, nil, false)
	return p, nil
}

// boundTogether reports whether the statement's tables are sharded tables
// of one binding group, each named once: DDL of them runs per data node,
// pairing their physical tables.
func (a *analyzer) boundTogether(sharded, broadcast, other []*tableUse) bool {
	if len(broadcast) > 0 || len(other) > 0 {
		return false
	}
	for i, u := range sharded {
		if u.top != 1 {
			return false
		}
		if i > 0 {
			if ok, err := a.r.bindable(a.r.tables[sharded[0].name], a.r.tables[u.name]); !ok || err != nil {
				return false
			}
		}
	}
	return true
}

// dropTables routes DROP TABLE of several tables, one of them sharded or
// broadcast: one statement per data source that drops the physical tables
// it holds.
func (a *analyzer) dropTables(p *routePlan, d *sqlparser.DropTable) (*routePlan, error) {
	if d.Temp {
		return nil, a.fail(unsupported("DROP TEMPORARY TABLE of a sharded or broadcast table"), strings.Join(p.tables, ", "), "")
	}
	if a.nargs > 0 || a.namedArg != "" {
		return nil, a.fail(unsupported("placeholders in DROP TABLE"), "", "")
	}
	return a.perSourceWrite(d.FromTables, func(names sqlparser.TableNames) string {
		c := *d
		c.FromTables = names
		return sqlparser.String(&c)
	})
}

// perSourceWrite plans a statement over tables as one write per data
// source, render giving its text for the physical tables there.
func (a *analyzer) perSourceWrite(tables sqlparser.TableNames, render func(sqlparser.TableNames) string) (*routePlan, error) {
	plan, err := a.r.perSourcePlan(tables, render)
	if err != nil {
		err.SQL = a.sql
		return nil, err
	}
	plan.write = true
	return plan, nil
}

// singleTable returns the one plain table of a FROM list.
func singleTable(tables []sqlparser.TableExpr) (*sqlparser.AliasedTableExpr, bool) {
	if len(tables) != 1 {
		return nil, false
	}
	at, ok := tables[0].(*sqlparser.AliasedTableExpr)
	if !ok {
		return nil, false
	}
	_, ok = at.Expr.(sqlparser.TableName)
	return at, ok
}

func tableNameOf(t *sqlparser.AliasedTableExpr) string {
	if t == nil {
		return ""
	}
	if n, ok := t.Expr.(sqlparser.TableName); ok {
		return strings.ToLower(n.Name.String())
	}
	return ""
}

// stmtName names a statement's kind for messages.
func stmtName(stmt sqlparser.Statement) string {
	switch stmt.(type) {
	case *sqlparser.Union:
		return "UNION"
	case *sqlparser.ExplainTab:
		return "DESCRIBE"
	}
	return strings.ToUpper(sqlparser.ASTToStatementType(stmt).String())
}
