package shard

// Joins of binding tables. A unit joins the physical tables of one data
// node of each table (t_order_1 with t_order_item_1), so a join is right
// only when the rows that join always live on paired nodes: the join must
// equate the column that picks the physical table (the table strategy's
// sharding column, else the database strategy's) of every bound table, as
// ShardingSphere's binding tables assume. ShardingSphere's own example,
// t_order JOIN t_order_item ON o.order_id = i.order_id with databases by
// user_id and tables by order_id, qualifies: the rows of one order share a
// user_id. ON o.user_id = i.user_id does not: the orders of one user are in
// several tables, and half the pairs would be missed.

import (
	"fmt"
	"slices"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

// pairingColumn is the sharding column that picks t's physical table.
func (t *routeTable) pairingColumn() string {
	if t.tblCol != "" {
		return t.tblCol
	}
	return t.dbCol
}

// checkBindingJoin refuses a join of binding tables, in the statement's
// own FROM, whose conditions do not equate their pairing columns (the
// joins of subqueries are checked with them, see level).
func (a *analyzer) checkBindingJoin() error {
	var from []sqlparser.TableExpr
	var where *sqlparser.Where
	switch s := a.stmt.(type) {
	case *sqlparser.CreateView:
		// The tables the view selects from (the view is bound with them).
		sel, ok := s.Select.(*sqlparser.Select)
		if !ok {
			return nil
		}
		from, where = sel.From, sel.Where
	case *sqlparser.Select:
		from, where = s.From, s.Where
	case *sqlparser.Update:
		from, where = s.TableExprs, s.Where
	case *sqlparser.Delete:
		from, where = s.TableExprs, s.Where
	case *sqlparser.Insert:
		sel, ok := s.Rows.(*sqlparser.Select)
		if !ok {
			return nil
		}
		from, where = sel.From, sel.Where
	default:
		return nil // DDL naming several tables joins nothing
	}
	var names []string
	forTopTables(from, func(_ *sqlparser.AliasedTableExpr, n sqlparser.TableName) {
		if name := strings.ToLower(n.Name.String()); a.r.tables[name] != nil && !slices.Contains(names, name) {
			names = append(names, name)
		}
	})
	return a.checkPairing(from, where, names)
}

// checkPairing refuses a join of the binding tables names (logical, lower
// case) in from whose conditions do not equate their pairing columns.
func (a *analyzer) checkPairing(from []sqlparser.TableExpr, where *sqlparser.Where, names []string) error {
	if len(names) < 2 {
		return nil
	}
	refs := map[string]string{} // alias or table name → logical table
	forTopTables(from, func(t *sqlparser.AliasedTableExpr, name sqlparser.TableName) {
		logical := strings.ToLower(name.Name.String())
		if t.As.NotEmpty() {
			refs[strings.ToLower(t.As.String())] = logical
		} else {
			refs[logical] = logical
		}
	})
	eq := newEquivalence()
	col := func(e sqlparser.Expr) (string, bool) {
		c, ok := e.(*sqlparser.ColName)
		if !ok || c.Qualifier.IsEmpty() {
			return "", false
		}
		table, ok := refs[strings.ToLower(c.Qualifier.Name.String())]
		return table + "." + strings.ToLower(c.Name.String()), ok
	}
	var conds func(e sqlparser.Expr)
	conds = func(e sqlparser.Expr) {
		switch x := e.(type) {
		case *sqlparser.AndExpr:
			conds(x.Left)
			conds(x.Right)
		case *sqlparser.ComparisonExpr:
			if x.Operator != sqlparser.EqualOp {
				return
			}
			l, lok := col(x.Left)
			r, rok := col(x.Right)
			switch {
			case lok && rok:
				eq.join(l, r)
			case lok:
				if lit, ok := x.Right.(*sqlparser.Literal); ok {
					eq.join(l, "literal:"+sqlparser.String(lit))
				}
			case rok:
				if lit, ok := x.Left.(*sqlparser.Literal); ok {
					eq.join(r, "literal:"+sqlparser.String(lit))
				}
			}
		}
	}
	var joins func(t sqlparser.TableExpr) []string // the logical tables of t
	joins = func(t sqlparser.TableExpr) []string {
		switch t := t.(type) {
		case *sqlparser.AliasedTableExpr:
			if n, ok := t.Expr.(sqlparser.TableName); ok {
				return []string{strings.ToLower(n.Name.String())}
			}
		case *sqlparser.ParenTableExpr:
			var out []string
			for _, x := range t.Exprs {
				out = append(out, joins(x)...)
			}
			return out
		case *sqlparser.JoinTableExpr:
			left, right := joins(t.LeftExpr), joins(t.RightExpr)
			if t.Condition != nil {
				if t.Condition.On != nil {
					conds(t.Condition.On)
				}
				for _, c := range t.Condition.Using {
					name := strings.ToLower(c.String())
					for _, l := range left {
						for _, r := range right {
							eq.join(l+"."+name, r+"."+name)
						}
					}
				}
			}
			return append(left, right...)
		}
		return nil
	}
	for _, t := range from {
		joins(t)
	}
	if where != nil {
		conds(where.Expr)
	}
	first := a.r.tables[names[0]]
	for _, name := range names[1:] {
		t := a.r.tables[name]
		fc, tc := first.pairingColumn(), t.pairingColumn()
		if fc == "" || tc == "" {
			continue // every node of the table: nothing to pair by
		}
		if !eq.same(first.name+"."+fc, t.name+"."+tc) {
			return a.fail(fmt.Errorf("%w: binding tables %s and %s joined without %s.%s = %s.%s (the column that pairs their physical tables)",
				ErrCrossShardJoin, first.name, t.name, first.name, fc, t.name, tc), first.name+", "+t.name, "")
		}
	}
	return nil
}

// equivalence is a union-find of column and literal names.
type equivalence map[string]string

func newEquivalence() equivalence { return equivalence{} }

func (e equivalence) find(x string) string {
	for {
		p, ok := e[x]
		if !ok || p == x {
			return x
		}
		x = p
	}
}

func (e equivalence) join(a, b string) { e[e.find(a)] = e.find(b) }

func (e equivalence) same(a, b string) bool { return e.find(a) == e.find(b) }

// outerJoinKeeps returns a sharded table that an outer join of from
// pairs with a side of no sharded table whose every row it keeps (t_dict
// LEFT JOIN t_order): over several data nodes each node would return the
// rows that match nothing there, once per node; into an INSERT … SELECT
// they would bring NULL sharding values.
func (a *analyzer) outerJoinKeeps(from []sqlparser.TableExpr) string {
	var found string
	var walk func(t sqlparser.TableExpr)
	walk = func(t sqlparser.TableExpr) {
		switch t := t.(type) {
		case *sqlparser.JoinTableExpr:
			kept, other := t.LeftExpr, t.RightExpr
			switch t.Join {
			case sqlparser.LeftJoinType, sqlparser.NaturalLeftJoinType:
			case sqlparser.RightJoinType, sqlparser.NaturalRightJoinType:
				kept, other = other, kept
			default:
				kept = nil
			}
			if kept != nil && found == "" && a.hasSharded(kept) == "" {
				found = a.hasSharded(other)
			}
			walk(t.LeftExpr)
			walk(t.RightExpr)
		case *sqlparser.ParenTableExpr:
			for _, x := range t.Exprs {
				walk(x)
			}
		}
	}
	for _, t := range from {
		walk(t)
	}
	return found
}
