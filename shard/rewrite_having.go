package shard

// HAVING of a SELECT over several shards. A shard holds only part of each
// group, so a condition on an aggregate cannot be evaluated there: the
// conditions of the top-level AND that involve an aggregate are taken out
// of the shards' HAVING (those that do not, on group columns, stay: every
// part of a group has the same group values) and evaluated by the merge on
// the merged groups (mergePlan.Having). Their aggregates are selected as
// hidden columns when the select list lacks them.
//
// The merge evaluates comparisons (=, <>, !=, <, <=, >, >=, <=>) of an
// aggregate, a selected alias or a group column with another one, a
// number, a string, NULL or '?'; IS [NOT] NULL; AND, OR, NOT. Anything
// else in such a condition (functions, arithmetic, subqueries) is
// refused. A comparison that may compare text selects the weights of both
// operands in the collation the server compares them in: the weight
// column (weightExpr) of IF(FALSE, other, operand), whose value is the
// operand's and whose collation is the one MySQL derives for the pair.

import (
	"database/sql/driver"
	"strconv"

	"vitess.io/vitess/go/vt/sqlparser"
)

// havingNode is a HAVING condition for the merge, with the columns still
// colRefs (before the derived columns are known) and '?' not yet bound.
type havingNode struct {
	op          havingOp
	sub         []*havingNode
	cmp         string
	left, right havingTerm
	idxL, idxR  int // the columns' final indexes
	// weighted: wL and wR are the operands' weight columns.
	weighted     bool
	wL, wR       colRef
	idxWL, idxWR int
}

type havingTerm struct {
	col     colRef
	isConst bool
	val     driver.Value
	arg     int            // position of '?' in the caller's args, or -1
	expr    sqlparser.Expr // the operand's SQL
}

// having splits sel.Having: what stays on the shards and the merge's
// condition (nil: none).
func (w *selectRewriter) having() (*havingNode, error) {
	if w.sel.Having == nil {
		return nil, nil
	}
	var keep []sqlparser.Expr
	var merged []*havingNode
	for _, c := range splitAnd(w.sel.Having.Expr, nil) {
		if !w.needsMerge(c) {
			keep = append(keep, c)
			continue
		}
		if w.star {
			return nil, unsupported("HAVING on aggregates with * in the select list over several shards")
		}
		n, err := w.havingCond(c)
		if err != nil {
			return nil, err
		}
		merged = append(merged, n)
	}
	if len(keep) == 0 {
		w.sel.Having = nil
	} else {
		w.sel.Having = &sqlparser.Where{Type: sqlparser.HavingClause, Expr: sqlparser.AndExpressions(keep...)}
	}
	switch len(merged) {
	case 0:
		return nil, nil
	case 1:
		return merged[0], nil
	}
	return &havingNode{op: havingAnd, sub: merged}, nil
}

func splitAnd(e sqlparser.Expr, out []sqlparser.Expr) []sqlparser.Expr {
	if a, ok := e.(*sqlparser.AndExpr); ok {
		return splitAnd(a.Right, splitAnd(a.Left, out))
	}
	return append(out, e)
}

// needsMerge reports whether HAVING condition e involves an aggregate,
// directly or through an alias of the select list.
func (w *selectRewriter) needsMerge(e sqlparser.Expr) bool {
	if sqlparser.ContainsAggregation(e) {
		return true
	}
	found := false
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		col, ok := n.(*sqlparser.ColName)
		if !ok || !col.Qualifier.IsEmpty() {
			return true, nil
		}
		for _, x := range w.exprs {
			if ae, ok := x.(*sqlparser.AliasedExpr); ok && ae.As.NotEmpty() && ae.As.Equal(col.Name) && sqlparser.ContainsAggregation(ae.Expr) {
				found = true
			}
		}
		return !found, nil
	}, e)
	return found
}

func (w *selectRewriter) havingCond(e sqlparser.Expr) (*havingNode, error) {
	switch x := e.(type) {
	case *sqlparser.AndExpr, *sqlparser.OrExpr:
		op, l, r := havingAnd, sqlparser.Expr(nil), sqlparser.Expr(nil)
		if a, ok := x.(*sqlparser.AndExpr); ok {
			l, r = a.Left, a.Right
		} else {
			o := x.(*sqlparser.OrExpr)
			op, l, r = havingOr, o.Left, o.Right
		}
		ln, err := w.havingCond(l)
		if err != nil {
			return nil, err
		}
		rn, err := w.havingCond(r)
		if err != nil {
			return nil, err
		}
		return &havingNode{op: op, sub: []*havingNode{ln, rn}}, nil
	case *sqlparser.NotExpr:
		n, err := w.havingCond(x.Expr)
		if err != nil {
			return nil, err
		}
		return &havingNode{op: havingNot, sub: []*havingNode{n}}, nil
	case *sqlparser.ComparisonExpr:
		var cmp string
		switch x.Operator {
		case sqlparser.EqualOp:
			cmp = "="
		case sqlparser.NotEqualOp:
			cmp = "!="
		case sqlparser.LessThanOp:
			cmp = "<"
		case sqlparser.LessEqualOp:
			cmp = "<="
		case sqlparser.GreaterThanOp:
			cmp = ">"
		case sqlparser.GreaterEqualOp:
			cmp = ">="
		case sqlparser.NullSafeEqualOp:
			cmp = "<=>"
		default:
			return nil, unsupported("HAVING comparison %s over several shards", x.Operator.ToString())
		}
		l, err := w.havingTerm(x.Left)
		if err != nil {
			return nil, err
		}
		r, err := w.havingTerm(x.Right)
		if err != nil {
			return nil, err
		}
		n := &havingNode{op: havingCompare, cmp: cmp, left: l, right: r}
		if w.mayCompareText(l, r) {
			n.weighted = true
			n.wL = w.derive(weightExpr(fn("if", sqlparser.BoolVal(false), sqlparser.CloneExpr(r.expr), sqlparser.CloneExpr(l.expr))))
			n.wR = w.derive(weightExpr(fn("if", sqlparser.BoolVal(false), sqlparser.CloneExpr(l.expr), sqlparser.CloneExpr(r.expr))))
		}
		return n, nil
	case *sqlparser.IsExpr:
		op := havingIsNull
		switch x.Right {
		case sqlparser.IsNullOp:
		case sqlparser.IsNotNullOp:
			op = havingIsNotNull
		default:
			return nil, unsupported("HAVING %s over several shards", sqlparser.String(e))
		}
		l, err := w.havingTerm(x.Left)
		if err != nil {
			return nil, err
		}
		if l.isConst {
			return nil, unsupported("HAVING %s over several shards", sqlparser.String(e))
		}
		return &havingNode{op: op, left: l}, nil
	}
	return nil, unsupported("HAVING condition %s over several shards", sqlparser.String(e))
}

// havingTerm is an operand of a comparison: a number, a string, NULL or
// '?', or a column (an aggregate, an alias, a group column), selected as a
// hidden column when the select list lacks it.
func (w *selectRewriter) havingTerm(e sqlparser.Expr) (havingTerm, error) {
	switch x := e.(type) {
	case *sqlparser.Argument:
		if i, ok := placeholderIndex(x.Name); ok {
			return havingTerm{isConst: true, arg: i, expr: e}, nil
		}
	case *sqlparser.NullVal:
		return havingTerm{isConst: true, arg: -1, expr: e}, nil
	case *sqlparser.Literal:
		if x.Type == sqlparser.StrVal {
			return havingTerm{isConst: true, arg: -1, val: []byte(x.Val), expr: e}, nil
		}
		if v, ok := havingNumber(x.Type, x.Val); ok {
			return havingTerm{isConst: true, arg: -1, val: v, expr: e}, nil
		}
		return havingTerm{}, unsupported("HAVING compares with %s over several shards (numbers, strings, NULL and '?' only)", sqlparser.String(e))
	case *sqlparser.UnaryExpr:
		if l, ok := x.Expr.(*sqlparser.Literal); ok && x.Operator == sqlparser.UMinusOp {
			if v, ok := havingNumber(l.Type, "-"+l.Val); ok {
				return havingTerm{isConst: true, arg: -1, val: v, expr: e}, nil
			}
		}
	case *sqlparser.ColName:
		c, err := w.column(e, true)
		if err != nil {
			return havingTerm{}, err
		}
		return havingTerm{col: c, arg: -1, expr: w.exprOf(c)}, nil
	case sqlparser.AggrFunc:
		c, err := w.column(e, false)
		if err != nil {
			return havingTerm{}, err
		}
		return havingTerm{col: c, arg: -1, expr: w.exprOf(c)}, nil
	}
	return havingTerm{}, unsupported("HAVING operand %s over several shards", sqlparser.String(e))
}

// mayCompareText reports whether a comparison of l and r may compare
// character values: a column that may be text, and no NULL.
func (w *selectRewriter) mayCompareText(l, r havingTerm) bool {
	if l.expr == nil || r.expr == nil {
		return false
	}
	for _, t := range []havingTerm{l, r} {
		if _, null := t.expr.(*sqlparser.NullVal); null {
			return false
		}
	}
	return (!l.isConst && mayBeText(l.expr)) || (!r.isConst && mayBeText(r.expr))
}

func havingNumber(t sqlparser.ValType, s string) (driver.Value, bool) {
	switch t {
	case sqlparser.IntVal:
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, true
		}
		if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			return n, true
		}
		return []byte(s), true // decimal text
	case sqlparser.DecimalVal:
		return []byte(s), true
	case sqlparser.FloatVal:
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f, true
		}
	}
	return nil, false
}

// resolve sets the final column indexes.
func (n *havingNode) resolve(w *selectRewriter) {
	if !n.left.isConst {
		n.idxL = w.index(n.left.col)
	}
	if !n.right.isConst {
		n.idxR = w.index(n.right.col)
	}
	if n.weighted {
		n.idxWL, n.idxWR = w.index(n.wL), w.index(n.wR)
	}
	for _, s := range n.sub {
		s.resolve(w)
	}
}

// bind returns the merge's condition for one call.
func (n *havingNode) bind(args []driver.NamedValue) havingExpr {
	h := havingExpr{Op: n.op, Cmp: n.cmp}
	operand := func(t havingTerm, idx int) havingOperand {
		if !t.isConst {
			return havingOperand{Column: idx}
		}
		if t.arg >= 0 {
			return havingOperand{Const: true, Value: args[t.arg].Value}
		}
		return havingOperand{Const: true, Value: t.val}
	}
	h.Left, h.Right = operand(n.left, n.idxL), operand(n.right, n.idxR)
	if n.weighted {
		h.Left.Weighted, h.Left.Weight = true, n.idxWL
		h.Right.Weighted, h.Right.Weight = true, n.idxWR
	}
	if len(n.sub) > 0 {
		h.Sub = make([]havingExpr, len(n.sub))
		for i, s := range n.sub {
			h.Sub[i] = s.bind(args)
		}
	}
	return h
}
