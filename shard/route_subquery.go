package shard

// Subqueries and derived tables over sharded tables. A unit runs the
// whole statement on one data node, subqueries included, so a subquery
// answers right only when every row it needs is on that node. That holds
// in two ways:
//
//   - linked: the subquery follows the rows of the query around it, as a
//     binding join does. It is correlated on the column that pairs the
//     physical tables (EXISTS (SELECT … FROM t_order_item i WHERE
//     i.order_id = o.order_id)), or it gives that column to an IN of that
//     column in the WHERE clause's top-level AND (o.order_id IN (SELECT
//     i.order_id …)), or it is a
//     derived table that keeps its rows as they are (no GROUP BY,
//     DISTINCT, LIMIT, aggregate or window) and is the whole FROM of its
//     query. The rows that meet are on paired nodes, so each node
//     answers for its own rows, on any number of nodes. A link in the
//     WHERE clause's top-level AND (EXISTS, IN, =) also narrows the nodes
//     by the subquery's own sharding conditions; a derived table's plain
//     columns carry the outer query's conditions to its tables.
//   - pinned: any other subquery reads the rows its own sharding
//     conditions choose, wherever they are. The statement then routes only
//     when its conditions and those of every such subquery resolve to one
//     and the same data node (ShardingSphere's rule), per call; else it is
//     refused naming the subquery's table.
//
// Every sharded table of the statement is the same table or bound with
// the others (checked before), so each unit names, in the subqueries too,
// the physical tables of its one node.

import (
	"fmt"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

// pinnedCond is the sharding condition of a subquery that is not linked
// with the query around it.
type pinnedCond struct {
	cond  *routeCond
	table string // a sharded table of the subquery, for messages
}

// derivedCols are the plain columns of a derived table: name (lower
// case) → the sharded reference and column it reads.
type derivedCols struct {
	linked bool
	cols   map[string]colSource
}

type colSource struct {
	ref int
	col string // lower case
}

// source returns the sharded reference and column that c reads, when c is
// a column of a table of this level (or of a derived table of it, only a
// linked one if linkedOnly).
func (s *condScope) source(c *sqlparser.ColName, linkedOnly bool) (colSource, bool) {
	col := c.Name.Lowered()
	derived := func(d *derivedCols) (colSource, bool) {
		if d == nil || (linkedOnly && !d.linked) {
			return colSource{}, false
		}
		src, ok := d.cols[col]
		return src, ok
	}
	if !c.Qualifier.IsEmpty() {
		q := strings.ToLower(c.Qualifier.Name.String())
		if i, ok := s.byName[q]; ok {
			return colSource{ref: i, col: col}, true
		}
		return derived(s.derived[q])
	}
	switch {
	case len(s.local) == 1 && len(s.derived) == 0:
		return colSource{ref: s.local[0], col: col}, true
	case len(s.local) == 0 && len(s.derived) == 1:
		for _, d := range s.derived {
			return derived(d)
		}
	}
	return colSource{}, false
}

// pairing returns the table reference whose pairing column c is (see
// pairingColumn).
func (s *condScope) pairing(c *sqlparser.ColName) (int, bool) {
	src, ok := s.source(c, true)
	return src.ref, ok && src.col != "" && src.col == s.shards[src.ref].table.pairingColumn()
}

// linkable reports whether rows of references i and j with the same
// pairing value are on the same data node: binding tables (their
// contract, as for a join), or one table that this column alone places.
func (s *condScope) linkable(i, j int) bool {
	a, b := s.shards[i].table, s.shards[j].table
	if a != b || a.group >= 0 {
		return true
	}
	return a.dbCol == "" || a.tblCol == "" || a.dbCol == a.tblCol
}

// hasSharded reports whether a sharded table is named in n.
func (a *analyzer) hasSharded(n sqlparser.SQLNode) (name string) {
	_ = sqlparser.Walk(func(node sqlparser.SQLNode) (bool, error) {
		switch t := node.(type) {
		case *sqlparser.ColName, *sqlparser.StarExpr:
			return false, nil
		case sqlparser.TableName:
			if n := strings.ToLower(t.Name.String()); a.r.tables[n] != nil && name == "" {
				name = n
			}
			return false, nil
		}
		return name == "", nil
	}, n)
	return name
}

// conjuncts returns the top-level AND terms of a WHERE clause and of the
// ON clauses of the inner joins of from.
func conjuncts(w *sqlparser.Where, from []sqlparser.TableExpr) []sqlparser.Expr {
	var out []sqlparser.Expr
	var split func(e sqlparser.Expr)
	split = func(e sqlparser.Expr) {
		if x, ok := e.(*sqlparser.AndExpr); ok {
			split(x.Left)
			split(x.Right)
			return
		}
		out = append(out, e)
	}
	if w != nil {
		split(w.Expr)
	}
	innerJoinConditions(from, split)
	return out
}

// rowLocal reports whether a derived table's rows are rows of its tables
// as they are, so that the derived rows of every node together are the
// derived table's rows.
func rowLocal(sel *sqlparser.Select) bool {
	if sel.Distinct || sel.GroupBy != nil || sel.Having != nil || sel.Limit != nil || sel.Into != nil ||
		sel.Windows != nil || hasWindow(sel) {
		return false
	}
	for _, e := range sel.SelectExprs.Exprs {
		if ae, ok := e.(*sqlparser.AliasedExpr); ok && sqlparser.ContainsAggregation(ae.Expr) {
			return false
		}
	}
	return true
}

// selectParts are the clauses of a SELECT other than FROM and WHERE that
// may hold subqueries.
func selectParts(sel *sqlparser.Select) []sqlparser.SQLNode {
	return []sqlparser.SQLNode{sel.SelectExprs, sel.GroupBy, sel.Having, sel.OrderBy, sel.Limit, sel.Windows}
}

// topLevel is level for the statement itself; it then checks that every
// subquery and derived table over a sharded table of the statement was
// placed (one that level did not meet would run unchecked).
func (a *analyzer) topLevel(p *routePlan, from []sqlparser.TableExpr, where *sqlparser.Where, on []sqlparser.TableExpr, parts []sqlparser.SQLNode) (*routeCond, *condScope, error) {
	c, s, err := a.level(p, from, where, on, parts, nil, 0)
	if err != nil {
		return nil, nil, err
	}
	n, table := 0, ""
	_ = sqlparser.Walk(func(node sqlparser.SQLNode) (bool, error) {
		switch x := node.(type) {
		case *sqlparser.Subquery, *sqlparser.DerivedTable:
			if name := a.hasSharded(x); name != "" {
				n++
				table = name
			}
		}
		return true, nil
	}, a.stmt)
	if n != a.placed {
		return nil, nil, a.fail(unsupported("a subquery over sharded table %s where rwshard cannot place it", table), table, "")
	}
	return c, s, nil
}

// level is the sharding condition of one query level (the statement, a
// subquery or a derived table) over from and where (and the ON clauses of
// the inner joins of on), and its scope: the level's own conditions and
// those of the subqueries linked with it. parts are its other clauses.
// The conditions of subqueries not linked go to a.pinned. A level that
// reads no sharded table, itself or through a linked subquery, has
// condNoneNode.
func (a *analyzer) level(p *routePlan, from []sqlparser.TableExpr, where *sqlparser.Where, on []sqlparser.TableExpr, parts []sqlparser.SQLNode, outer *condScope, depth int) (*routeCond, *condScope, error) {
	if depth > 16 {
		return nil, nil, a.fail(unsupported("subqueries nested more than 16 deep over sharded table %s", p.shards[0].table.name), p.shards[0].table.name, "")
	}
	s := a.scope(p, from)
	if depth > 0 {
		// The statement's own FROM is checked with the statement (and
		// INSERT … SELECT names its target twice).
		seen := make(map[string]bool)
		var self string
		forTopTables(from, func(_ *sqlparser.AliasedTableExpr, n sqlparser.TableName) {
			name := strings.ToLower(n.Name.String())
			if a.r.tables[name] != nil && seen[name] {
				self = name
			}
			seen[name] = true
		})
		if self != "" {
			return nil, nil, a.fail(fmt.Errorf("%w: %s joined with itself in a subquery", ErrCrossShardJoin, self), self, "")
		}
		if len(s.local) > 1 {
			var names []string
			for _, i := range s.local {
				names = append(names, p.shards[i].table.name)
			}
			if err := a.checkPairing(from, where, names); err != nil {
				return nil, nil, err
			}
		}
	}

	var linked []*routeCond // conditions of linked subqueries that narrow this level
	pin := func(c *routeCond, table string) {
		if c.op != condNone {
			a.pinned = append(a.pinned, pinnedCond{cond: c, table: table})
		}
	}

	// Derived tables.
	var derived []*sqlparser.AliasedTableExpr
	forDerived(from, func(at *sqlparser.AliasedTableExpr, _ *sqlparser.DerivedTable) {
		if a.hasSharded(at) != "" {
			derived = append(derived, at)
		}
	})
	for _, at := range derived {
		a.placed++
		dt := at.Expr.(*sqlparser.DerivedTable)
		table := a.hasSharded(at)
		if dt.Lateral {
			return nil, nil, a.fail(unsupported("LATERAL derived table over a sharded table"), table, "")
		}
		sel, ok := dt.Select.(*sqlparser.Select)
		if !ok {
			return nil, nil, a.fail(unsupported("UNION in a derived table over a sharded table"), table, "")
		}
		if sel.With != nil {
			return nil, nil, a.fail(unsupported("WITH (common table expression) in a derived table over a sharded table"), table, "")
		}
		c, cs, err := a.level(p, sel.From, sel.Where, sel.From, selectParts(sel), nil, depth+1)
		if err != nil {
			return nil, nil, err
		}
		// Linked only as the whole FROM: joined with a broadcast table, an
		// outer join would repeat the broadcast rows without a match on
		// every node.
		alone := len(from) == 1 && from[0] == sqlparser.TableExpr(at)
		d := &derivedCols{linked: alone && rowLocal(sel) && len(cs.local) > 0, cols: make(map[string]colSource)}
		star := false
		for _, e := range sel.SelectExprs.Exprs {
			if _, ok := e.(*sqlparser.StarExpr); ok {
				star = true
			}
		}
		for i, e := range sel.SelectExprs.Exprs {
			ae, ok := e.(*sqlparser.AliasedExpr)
			if !ok || star && len(at.Columns) > 0 {
				continue
			}
			cn, ok := ae.Expr.(*sqlparser.ColName)
			if !ok {
				continue
			}
			src, ok := cs.source(cn, true)
			if !ok {
				continue
			}
			name := cn.Name.Lowered()
			switch {
			case len(at.Columns) > 0:
				if i >= len(at.Columns) {
					continue
				}
				name = at.Columns[i].Lowered()
			case ae.As.NotEmpty():
				name = ae.As.Lowered()
			}
			d.cols[name] = src
		}
		if s.derived == nil {
			s.derived = make(map[string]*derivedCols)
		}
		s.derived[strings.ToLower(at.As.String())] = d
		if d.linked {
			linked = append(linked, c)
		} else {
			pin(c, table)
		}
	}

	// Subqueries in expressions: a link in the top-level AND narrows.
	narrows := make(map[*sqlparser.Subquery]bool)
	for _, e := range conjuncts(where, on) {
		switch x := e.(type) {
		case *sqlparser.ExistsExpr:
			narrows[x.Subquery] = true
		case *sqlparser.ComparisonExpr:
			if x.Operator == sqlparser.InOp || x.Operator == sqlparser.EqualOp {
				if sq, ok := x.Right.(*sqlparser.Subquery); ok {
					narrows[sq] = true
				}
				if sq, ok := x.Left.(*sqlparser.Subquery); ok && x.Operator == sqlparser.EqualOp {
					narrows[sq] = true
				}
			}
		}
	}
	// col IN (SELECT col …) on pairing columns. Not =: a subquery of more
	// rows than one is an error on one server, maybe not on each node.
	compared := make(map[*sqlparser.Subquery]*sqlparser.ColName)
	var subs []*sqlparser.Subquery
	visit := func(node sqlparser.SQLNode) (bool, error) {
		switch x := node.(type) {
		case *sqlparser.Subquery:
			subs = append(subs, x)
			return false, nil
		case *sqlparser.DerivedTable:
			return false, nil // above
		case *sqlparser.ComparisonExpr:
			if x.Operator == sqlparser.InOp {
				if sq, ok := x.Right.(*sqlparser.Subquery); ok {
					if cn, ok := x.Left.(*sqlparser.ColName); ok {
						compared[sq] = cn
					}
				}
			}
		}
		return true, nil
	}
	if where != nil {
		_ = sqlparser.Walk(visit, where)
	}
	for _, t := range from {
		_ = sqlparser.Walk(visit, t)
	}
	for _, n := range parts {
		if n != nil {
			_ = sqlparser.Walk(visit, n)
		}
	}
	for _, sq := range subs {
		table := a.hasSharded(sq)
		if table == "" {
			continue
		}
		a.placed++
		sel, ok := sq.Select.(*sqlparser.Select)
		if !ok {
			return nil, nil, a.fail(unsupported("UNION in a subquery over a sharded table"), table, "")
		}
		if sel.With != nil {
			return nil, nil, a.fail(unsupported("WITH (common table expression) in a subquery over a sharded table"), table, "")
		}
		c, cs, err := a.level(p, sel.From, sel.Where, sel.From, selectParts(sel), s, depth+1)
		if err != nil {
			return nil, nil, err
		}
		link := len(s.local) > 0 && len(cs.local) > 0 && a.correlated(s, cs, sel)
		// IN in the top-level AND only: elsewhere (NOT (… IN …), the
		// select list) a NULL the subquery gives on another node would
		// change the answer.
		if cn := compared[sq]; !link && cn != nil && narrows[sq] && len(sel.SelectExprs.Exprs) == 1 {
			ae, ok := sel.SelectExprs.Exprs[0].(*sqlparser.AliasedExpr)
			var inner *sqlparser.ColName
			if ok {
				inner, ok = ae.Expr.(*sqlparser.ColName)
			}
			if ok {
				i, ok1 := s.pairing(cn)
				j, ok2 := cs.pairing(inner)
				link = ok1 && ok2 && s.linkable(i, j)
			}
		}
		switch {
		case link && narrows[sq]:
			linked = append(linked, c)
		case link:
		default:
			pin(c, table)
		}
	}

	var c *routeCond
	if len(s.local) > 0 || len(linked) > 0 {
		c = a.where(s, where, on)
	}
	for _, x := range linked {
		if c == nil {
			c = x
		} else {
			c = condAndOf(c, x)
		}
	}
	if c == nil {
		c = condNoneNode
	}
	return c, s, nil
}

// correlated reports whether subquery sel (scope inner) equates, in its
// top-level AND, the pairing column of one of its tables with the pairing
// column of a table of the query around it (scope outer), named with a
// qualifier that the subquery does not define.
func (a *analyzer) correlated(outer, inner *condScope, sel *sqlparser.Select) bool {
	outside := func(c *sqlparser.ColName) (int, bool) {
		if c.Qualifier.IsEmpty() {
			return 0, false
		}
		q := strings.ToLower(c.Qualifier.Name.String())
		if _, ok := inner.byName[q]; ok {
			return 0, false
		}
		if _, ok := inner.derived[q]; ok {
			return 0, false
		}
		return outer.pairing(c)
	}
	inside := func(c *sqlparser.ColName) (int, bool) {
		if !c.Qualifier.IsEmpty() {
			q := strings.ToLower(c.Qualifier.Name.String())
			_, ok := inner.byName[q]
			if _, d := inner.derived[q]; !ok && !d {
				return 0, false
			}
		}
		return inner.pairing(c)
	}
	links := func(in, out *sqlparser.ColName) bool {
		i, ok1 := inside(in)
		o, ok2 := outside(out)
		return ok1 && ok2 && outer.linkable(o, i)
	}
	for _, e := range conjuncts(sel.Where, sel.From) {
		x, ok := e.(*sqlparser.ComparisonExpr)
		if !ok || x.Operator != sqlparser.EqualOp {
			continue
		}
		l, lok := x.Left.(*sqlparser.ColName)
		r, rok := x.Right.(*sqlparser.ColName)
		if lok && rok && (links(l, r) || links(r, l)) {
			return true
		}
	}
	return false
}

// hasSubquery reports whether n holds a subquery.
func hasSubquery(n sqlparser.SQLNode) bool {
	found := false
	_ = sqlparser.Walk(func(node sqlparser.SQLNode) (bool, error) {
		if _, ok := node.(*sqlparser.Subquery); ok {
			found = true
		}
		return !found, nil
	}, n)
	return found
}
