package shard

// The tables of a statement: every table reference (not column
// qualifiers), which of them are top-level, what a write writes, and the
// tokens of statements whose AST does not keep their tables.

import (
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

// forTopTables calls f for every plain table of a FROM tree.
func forTopTables(tables []sqlparser.TableExpr, f func(*sqlparser.AliasedTableExpr, sqlparser.TableName)) {
	forAliased(tables, func(t *sqlparser.AliasedTableExpr) {
		if n, ok := t.Expr.(sqlparser.TableName); ok {
			f(t, n)
		}
	})
}

// forDerived calls f for every derived table of a FROM tree.
func forDerived(tables []sqlparser.TableExpr, f func(*sqlparser.AliasedTableExpr, *sqlparser.DerivedTable)) {
	forAliased(tables, func(t *sqlparser.AliasedTableExpr) {
		if d, ok := t.Expr.(*sqlparser.DerivedTable); ok {
			f(t, d)
		}
	})
}

// forAliased calls f for every aliased table expression of a FROM tree
// (a table or a derived table), through joins and parentheses.
func forAliased(tables []sqlparser.TableExpr, f func(*sqlparser.AliasedTableExpr)) {
	var walk func(t sqlparser.TableExpr)
	walk = func(t sqlparser.TableExpr) {
		switch t := t.(type) {
		case *sqlparser.AliasedTableExpr:
			f(t)
		case *sqlparser.JoinTableExpr:
			walk(t.LeftExpr)
			walk(t.RightExpr)
		case *sqlparser.ParenTableExpr:
			for _, x := range t.Exprs {
				walk(x)
			}
		}
	}
	for _, t := range tables {
		walk(t)
	}
}

// collect finds every table reference of the statement (not column
// qualifiers), which of them are top-level, and the placeholders.
func (a *analyzer) collect() {
	var visit sqlparser.Visit
	visit = func(node sqlparser.SQLNode) (bool, error) {
		switch n := node.(type) {
		case *sqlparser.ColName, *sqlparser.StarExpr:
			return false, nil
		case *sqlparser.Delete:
			// Targets name aliases, not tables.
			_ = sqlparser.Walk(visit, n.With, n.Comments)
			for _, t := range n.TableExprs {
				_ = sqlparser.Walk(visit, t)
			}
			_ = sqlparser.Walk(visit, n.Partitions, n.Where, n.OrderBy, n.Limit)
			return false, nil
		case sqlparser.TableName:
			a.use(n, false)
			return false, nil
		case *sqlparser.ReferenceDefinition:
			// FOREIGN KEY … REFERENCES t: a table of the same data node
			// (see foreignKeys).
			a.useReference(n)
			return false, nil
		case *sqlparser.ColumnDefinition:
			// A column's REFERENCES, which Walk does not visit.
			a.useReference(columnReference(n))
		case *sqlparser.Argument:
			if i, ok := placeholderIndex(n.Name); ok {
				a.nargs = max(a.nargs, i+1)
			} else if a.namedArg == "" {
				a.namedArg = ":" + n.Name
			}
		case sqlparser.ListArg:
			if a.namedArg == "" {
				a.namedArg = "::" + string(n)
			}
		case *sqlparser.Offset:
			if a.namedArg == "" {
				a.namedArg = sqlparser.String(n)
			}
		}
		return true, nil
	}
	_ = sqlparser.Walk(visit, a.stmt)

	top := func(_ *sqlparser.AliasedTableExpr, n sqlparser.TableName) { a.use(n, true) }
	switch s := a.stmt.(type) {
	case *sqlparser.Select:
		forTopTables(s.From, top)
	case *sqlparser.Insert:
		if n, ok := s.Table.Expr.(sqlparser.TableName); ok {
			a.use(n, true)
		}
		if sel, ok := s.Rows.(*sqlparser.Select); ok {
			// INSERT … SELECT: the SELECT's own tables are top-level too
			// (see shardedInsertSelect).
			forTopTables(sel.From, top)
		}
	case *sqlparser.Update:
		forTopTables(s.TableExprs, top)
	case *sqlparser.Delete:
		forTopTables(s.TableExprs, top)
	case *sqlparser.CreateTable:
		a.use(s.Table, true)
	case *sqlparser.AlterTable:
		a.use(s.Table, true)
	case *sqlparser.TruncateTable:
		a.use(s.Table, true)
	case *sqlparser.DropTable:
		for _, n := range s.FromTables {
			a.use(n, true)
		}
	case *sqlparser.CreateView:
		a.use(s.ViewName, true)
		if sel, ok := s.Select.(*sqlparser.Select); ok {
			forTopTables(sel.From, top)
		}
	case *sqlparser.DropView:
		for _, n := range s.FromTables {
			a.use(n, true)
		}
	}
}

// useReference records the table of a foreign key.
func (a *analyzer) useReference(r *sqlparser.ReferenceDefinition) {
	if r == nil {
		return
	}
	if u := a.use(r.ReferencedTable, false); u != nil {
		u.all--
		u.fk++
	}
}

// columnReference returns the REFERENCES of a column definition, or nil.
func columnReference(c *sqlparser.ColumnDefinition) *sqlparser.ReferenceDefinition {
	if c == nil || c.Type == nil || c.Type.Options == nil {
		return nil
	}
	return c.Type.Options.Reference
}

// use records a reference to table n.
func (a *analyzer) use(n sqlparser.TableName, top bool) *tableUse {
	if n.IsEmpty() || (n.Qualifier.IsEmpty() && strings.EqualFold(n.Name.String(), "dual")) {
		return nil
	}
	name := strings.ToLower(n.Name.String())
	u := a.useOf[name]
	if u == nil {
		u = &tableUse{name: name}
		switch {
		case a.r.tables[name] != nil:
			u.kind = refSharded
		case a.r.broadcast[name]:
			u.kind = refBroadcast
		}
		a.useOf[name] = u
		a.uses = append(a.uses, u)
	}
	if top {
		u.top++
	} else {
		u.all++
	}
	return u
}

// qualifiedRoutedTable reports whether a sharded or broadcast table is
// named with a database qualifier, in a table reference or in a column
// qualifier.
func (a *analyzer) qualifiedRoutedTable() bool {
	found := false
	routed := func(n sqlparser.TableName) bool {
		if n.Qualifier.IsEmpty() {
			return false
		}
		u := a.useOf[strings.ToLower(n.Name.String())]
		return u != nil && u.kind != refOther
	}
	_ = sqlparser.Walk(func(node sqlparser.SQLNode) (bool, error) {
		switch n := node.(type) {
		case *sqlparser.ColName:
			found = found || routed(n.Qualifier)
			return false, nil
		case *sqlparser.StarExpr:
			found = found || routed(n.TableName)
			return false, nil
		case sqlparser.TableName:
			found = found || routed(n)
			return false, nil
		}
		return !found, nil
	}, a.stmt)
	return found
}

// writeTargets returns the tables a DML or DDL statement writes.
func (a *analyzer) writeTargets() map[string]bool {
	out := make(map[string]bool)
	add := func(n sqlparser.TableName) { out[strings.ToLower(n.Name.String())] = true }
	switch s := a.stmt.(type) {
	case *sqlparser.Insert:
		if n, ok := s.Table.Expr.(sqlparser.TableName); ok {
			add(n)
		}
	case *sqlparser.Update:
		// The tables whose columns SET names; all when unqualified.
		byRef := tablesByRef(s.TableExprs)
		for _, e := range s.Exprs {
			if n, ok := byRef[strings.ToLower(e.Name.Qualifier.Name.String())]; ok && !e.Name.Qualifier.IsEmpty() {
				add(n)
				continue
			}
			for _, n := range byRef {
				add(n)
			}
		}
	case *sqlparser.Delete:
		byRef := tablesByRef(s.TableExprs)
		if len(s.Targets) == 0 {
			for _, n := range byRef {
				add(n)
			}
		}
		for _, t := range s.Targets {
			if n, ok := byRef[strings.ToLower(t.Name.String())]; ok {
				add(n)
			} else {
				add(t)
			}
		}
	case *sqlparser.CreateTable:
		add(s.Table)
	case *sqlparser.AlterTable:
		add(s.Table)
	case *sqlparser.TruncateTable:
		add(s.Table)
	case *sqlparser.DropTable:
		for _, n := range s.FromTables {
			add(n)
		}
	case *sqlparser.CreateView:
		add(s.ViewName)
	case *sqlparser.DropView:
		for _, n := range s.FromTables {
			add(n)
		}
	}
	return out
}

// tablesByRef maps how the statement refers to each plain table of a
// FROM tree, its alias or else its name, in lower case, to the table.
func tablesByRef(tables []sqlparser.TableExpr) map[string]sqlparser.TableName {
	byRef := make(map[string]sqlparser.TableName)
	forTopTables(tables, func(t *sqlparser.AliasedTableExpr, n sqlparser.TableName) {
		ref := t.As.String()
		if ref == "" {
			ref = n.Name.String()
		}
		byRef[strings.ToLower(ref)] = n
	})
	return byRef
}

// mentionedTable returns a sharded or broadcast table that a token of
// sql names and known does not have, or "".
func (r *Router) mentionedTable(sql string, known map[string]*tableUse) string {
	tkn := r.parser.NewStringTokenizer(sql)
	for {
		typ, val := tkn.Scan()
		switch typ {
		case 0, sqlparser.LEX_ERROR:
			return ""
		case sqlparser.STRING, sqlparser.NCHAR_STRING, sqlparser.AT_ID, sqlparser.AT_AT_ID:
			continue // literals and variables
		}
		name := strings.ToLower(val)
		if r.tables[name] == nil && !r.broadcast[name] {
			continue
		}
		if _, ok := known[name]; !ok {
			return name
		}
	}
}
