package shard

// Renaming of logical tables in a statement's clone, before it is printed
// into a template: table references become markers that each unit fills
// with its physical table names.

import (
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

// rename edits the clone c of the statement for the templates: every
// reference to a sharded or broadcast table becomes its marker, without
// database qualifier.
//
// aliasMode (SELECT, UPDATE, broadcast-only statements): a sharded table
// that columns qualify with its bare name gets that name as alias
// ("t_order_1 as t_order"), and a database qualifier of a column goes.
// Otherwise (DELETE, INSERT, DDL) aliases of routed tables go and every
// column qualifier naming a routed table or its alias becomes the marker,
// which prints as the physical name: MariaDB before 11.6 has no
// "DELETE FROM t AS alias".
func (a *analyzer) rename(c sqlparser.SQLNode, aliasMode bool) error {
	for _, u := range a.uses {
		if u.kind != refOther {
			a.addMarker(u.name)
		}
	}
	var tables []*sqlparser.AliasedTableExpr
	var quals []*sqlparser.TableName
	var visit sqlparser.Visit
	visit = func(node sqlparser.SQLNode) (bool, error) {
		switch n := node.(type) {
		case *sqlparser.AliasedTableExpr:
			if tn, ok := n.Expr.(sqlparser.TableName); ok {
				if _, ok := a.markers[strings.ToLower(tn.Name.String())]; ok {
					tables = append(tables, n)
				}
			}
		case *sqlparser.ColName:
			if !n.Qualifier.IsEmpty() {
				quals = append(quals, &n.Qualifier)
			}
			return false, nil
		case *sqlparser.StarExpr:
			if !n.TableName.IsEmpty() {
				quals = append(quals, &n.TableName)
			}
			return false, nil
		}
		return true, nil
	}
	_ = sqlparser.Walk(visit, c)

	lower := func(id sqlparser.IdentifierCS) string { return strings.ToLower(id.String()) }
	byQual := make(map[string]int) // qualifier mode: alias or table name → marker
	for _, t := range tables {
		tn := t.Expr.(sqlparser.TableName)
		name := lower(tn.Name)
		m := a.markers[name]
		if aliasMode {
			if t.As.IsEmpty() && a.useOf[name].kind == refSharded {
				for _, q := range quals {
					if lower(q.Name) == name {
						t.As = sqlparser.NewIdentifierCS(tn.Name.String())
						break
					}
				}
			}
		} else {
			ref := name
			if t.As.NotEmpty() {
				ref = lower(t.As)
			}
			if prev, ok := byQual[ref]; ok && prev != m {
				return a.fail(unsupported("alias %s names two tables", ref), name, "")
			}
			byQual[ref] = m
			t.As = sqlparser.IdentifierCS{}
		}
		t.Expr = tableMarker(m)
	}
	for _, q := range quals {
		name := lower(q.Name)
		if aliasMode {
			if _, ok := a.markers[name]; ok {
				q.Qualifier = sqlparser.IdentifierCS{}
			}
			continue
		}
		if m, ok := byQual[name]; ok {
			*q = tableMarker(m)
		}
	}

	// DDL names its tables outside any AliasedTableExpr.
	mark := func(n *sqlparser.TableName) {
		if m, ok := a.markers[lower(n.Name)]; ok {
			*n = tableMarker(m)
		}
	}
	// Constraint names (FOREIGN KEY, CHECK) are unique per database, not
	// per table: on each physical table the name gets the table's name as
	// a suffix, "fk" on t_order_1 becoming "fk_t_order_1", as
	// ShardingSphere does, so that the tables of one data source do not
	// collide (errno 121).
	renameConstraint := func(table sqlparser.TableName, id *sqlparser.IdentifierCI) {
		if m, ok := markerIndex(table); ok && id.NotEmpty() {
			*id = constraintMarker(m, id.String())
		}
	}
	switch s := c.(type) {
	case *sqlparser.CreateTable:
		mark(&s.Table)
		a.markReferences(s)
		if s.OptLike != nil {
			mark(&s.OptLike.LikeTable)
		}
		if s.TableSpec != nil {
			for _, cd := range s.TableSpec.Constraints {
				renameConstraint(s.Table, &cd.Name)
			}
		}
	case *sqlparser.AlterTable:
		mark(&s.Table)
		a.markReferences(s)
		for _, o := range s.AlterOptions {
			switch o := o.(type) {
			case *sqlparser.AddConstraintDefinition:
				renameConstraint(s.Table, &o.ConstraintDefinition.Name)
			case *sqlparser.DropKey:
				if o.Type == sqlparser.ForeignKeyType || o.Type == sqlparser.CheckKeyType || o.Type == sqlparser.ConstraintType {
					renameConstraint(s.Table, &o.Name)
				}
			}
		}
	case *sqlparser.TruncateTable:
		mark(&s.Table)
	case *sqlparser.CreateView:
		mark(&s.ViewName)
	case *sqlparser.DropTable:
		for i := range s.FromTables {
			mark(&s.FromTables[i])
		}
	}

	// A sharded table still named would reach a shard under its logical
	// name (a broadcast table may: its name is the same everywhere, but
	// not with a database qualifier).
	var left string
	_ = sqlparser.Walk(func(node sqlparser.SQLNode) (bool, error) {
		switch n := node.(type) {
		case *sqlparser.ColName, *sqlparser.StarExpr:
			return false, nil
		case sqlparser.TableName:
			name := lower(n.Name)
			if u := a.useOf[name]; u != nil && (u.kind == refSharded || (u.kind == refBroadcast && !n.Qualifier.IsEmpty())) {
				left = name
			}
			return false, nil
		}
		return left == "", nil
	}, c)
	if left != "" {
		return a.fail(unsupported("table %s named where rwshard cannot rename it", left), left, "")
	}
	return nil
}
