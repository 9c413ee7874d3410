package shard

// Rewrite of a SELECT that runs on several shards, and its merge plan.
//
//   - LIMIT o, n becomes LIMIT 0, o+n on each shard (when the merge can
//     stop early: no GROUP BY, or a GROUP BY that streams); the merge
//     skips o rows and returns n. Otherwise the shards get no LIMIT.
//   - ORDER BY and GROUP BY items that are not in the select list are
//     appended to it as derived columns, hidden by mergePlan.Visible.
//   - AVG(x) keeps its column and appends SUM(x) and COUNT(x) for the
//     merge; COUNT, SUM, MIN and MAX are merged as they are.
//   - COUNT/SUM/AVG(DISTINCT x) append x (and its WEIGHT_STRING) and add
//     x to the shards' GROUP BY: each shard returns a row per group and
//     distinct x, and the merge adds each x once per group
//     (aggregate.Distinct). LIMIT is then not pushed down.
//   - HAVING conditions on aggregates are evaluated by the merge on the
//     merged groups (rewrite_having.go); LIMIT is then not pushed down.
//   - GROUP BY without ORDER BY gets ORDER BY the group columns, so the
//     groups of the shards stream in one order.
//   - Each ORDER BY and GROUP BY item, each column of a DISTINCT select
//     list, each DISTINCT aggregate argument and each MIN and MAX that may
//     be a character string gets a derived weight column (WEIGHT_STRING
//     and how its collation pads, weightExpr): the merge compares
//     character values through it, in the shards' collation
//     (mergePlan.Weights, mergePlan.Collated). HAVING comparisons that may
//     compare text get the weights of both operands in the comparison's
//     collation (rewrite_having.go).
//
// Refused, because the shards' partial answers cannot be combined:
// HAVING beyond comparisons (rewrite_having.go), COUNT(DISTINCT a, b), other aggregates (GROUP_CONCAT, STD…),
// aggregates inside expressions, window functions, WITH ROLLUP,
// SQL_CALC_FOUND_ROWS, SELECT … INTO.

import (
	"database/sql/driver"
	"math"
	"slices"
	"strconv"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

// selectRewrite is the merge side of a multi-shard SELECT.
type selectRewrite struct {
	plan      mergePlan        // Offset and Limit are bound per call
	limitNode *sqlparser.Limit // the marker of the shards' LIMIT; nil: no LIMIT on the shards
	limit     bool             // the query has a LIMIT
	offset    limitSource      // OFFSET (n 0 when absent)
	count     limitSource      // row count
	hasOffset bool
	having    *havingNode // the merge's HAVING; nil: none
}

// limitSource is a LIMIT or OFFSET value: a literal or an argument.
type limitSource struct {
	arg int // position in the caller's args, or -1
	n   int64
}

func (s limitSource) value(args []driver.NamedValue) (int64, error) {
	if s.arg < 0 {
		return s.n, nil
	}
	return intArg(args[s.arg].Value)
}

// bind returns the merge plan and the shards' LIMIT for one call.
func (sr *selectRewrite) bind(args []driver.NamedValue) (*mergePlan, limitValues, error) {
	mp := new(mergePlan)
	*mp = sr.plan
	mp.Limit = noLimit
	if sr.having != nil {
		h := sr.having.bind(args)
		mp.Having = &h
	}
	var lv limitValues
	if !sr.limit {
		return mp, lv, nil
	}
	off, err := sr.offset.value(args)
	if err != nil {
		return nil, lv, err
	}
	cnt, err := sr.count.value(args)
	if err != nil {
		return nil, lv, err
	}
	mp.Offset, mp.Limit = off, cnt
	if sr.hasOffset {
		lv = limitValues{n: addSat(off, cnt), zeroStart: true, arg: sr.offset.arg >= 0 || sr.count.arg >= 0}
	} else {
		lv = limitValues{n: cnt, arg: sr.count.arg >= 0}
	}
	lv.argValue = lv.n
	return mp, lv, nil
}

// colRef is a column of the shard rows before the number of derived
// columns is known: a position in the select list or a derived column.
type colRef struct {
	derived bool
	n       int
}

type selectRewriter struct {
	sel     *sqlparser.Select
	exprs   []sqlparser.SelectExpr // the caller's select list
	star    bool
	first   int // first '*' position
	last    int // last '*' position
	derived []sqlparser.SelectExpr
	aggs    []aggRef
	grouped []colRef
	order   []orderRef
	weights []weightRef // derived WEIGHT_STRING columns
	// distinct are the arguments of COUNT/SUM/AVG(DISTINCT …): the shards
	// group by them too.
	distinct []distinctArg
}

// distinctArg is the argument of a DISTINCT aggregate and its column.
type distinctArg struct {
	expr sqlparser.Expr
	col  colRef
}

// weightRef is a column and the derived column of its WEIGHT_STRING.
type weightRef struct{ col, weight colRef }

type aggRef struct {
	kind            aggKind
	col, sum, count colRef
	distinct        bool
	arg             colRef // DISTINCT: the argument's column
}

type orderRef struct {
	col  colRef
	desc bool
}

// rewriteMultiSelect rewrites sel (a clone, with table markers) for
// several shards and returns its merge side.
func rewriteMultiSelect(sel *sqlparser.Select) (*selectRewrite, error) {
	switch {
	case sel.Into != nil:
		return nil, unsupported("SELECT … INTO over several shards")
	case sel.SQLCalcFoundRows:
		return nil, unsupported("SQL_CALC_FOUND_ROWS over several shards")
	case sel.GroupBy != nil && sel.GroupBy.WithRollup:
		return nil, unsupported("GROUP BY … WITH ROLLUP over several shards")
	case sel.Windows != nil || hasWindow(sel):
		return nil, unsupported("window function over several shards")
	}
	w := &selectRewriter{sel: sel, first: -1, last: -1}
	if sel.SelectExprs != nil {
		w.exprs = sel.SelectExprs.Exprs
	}
	for i, e := range w.exprs {
		switch e.(type) {
		case *sqlparser.StarExpr:
			if !w.star {
				w.first = i
			}
			w.star, w.last = true, i
		case *sqlparser.Nextval:
			return nil, unsupported("NEXT VALUE over several shards")
		}
	}

	// Aggregates of the select list.
	for i, e := range w.exprs {
		ae, ok := e.(*sqlparser.AliasedExpr)
		if !ok {
			continue
		}
		if err := w.aggregate(ae.Expr, colRef{n: i}); err != nil {
			return nil, err
		}
	}

	// ORDER BY NULL is MySQL's "no order".
	if len(sel.OrderBy) == 1 {
		if _, ok := sel.OrderBy[0].Expr.(*sqlparser.NullVal); ok {
			sel.OrderBy = nil
		}
	}
	var groupExprs []sqlparser.Expr
	if sel.GroupBy != nil {
		groupExprs = sel.GroupBy.Exprs
	}
	for _, g := range groupExprs {
		if sqlparser.ContainsAggregation(g) {
			return nil, unsupported("aggregate in GROUP BY")
		}
		ref, err := w.column(g, false)
		if err != nil {
			return nil, err
		}
		w.grouped = append(w.grouped, ref)
		w.weigh(ref)
	}
	for _, o := range sel.OrderBy {
		ref, err := w.column(o.Expr, true)
		if err != nil {
			return nil, err
		}
		w.order = append(w.order, orderRef{col: ref, desc: o.Direction == sqlparser.DescOrder})
		w.weigh(ref)
	}
	if sel.Distinct {
		for i := range w.exprs {
			if w.resolvable(colRef{n: i}) {
				w.weigh(colRef{n: i})
			}
		}
	}
	if len(groupExprs) > 0 && len(sel.OrderBy) == 0 {
		for i, g := range groupExprs {
			sel.OrderBy = append(sel.OrderBy, &sqlparser.Order{Expr: sqlparser.CloneExpr(g), Direction: sqlparser.AscOrder})
			w.order = append(w.order, orderRef{col: w.grouped[i]})
		}
	}
	having, err := w.having()
	if err != nil {
		return nil, err
	}
	// The shards group by the DISTINCT arguments too: a row per distinct
	// value, which the merge adds once per group.
	for _, d := range w.distinct {
		if sel.GroupBy == nil {
			sel.GroupBy = &sqlparser.GroupBy{}
		}
		if !slices.ContainsFunc(sel.GroupBy.Exprs, func(g sqlparser.Expr) bool { return sameExpr(g, d.expr) }) {
			sel.GroupBy.Exprs = append(sel.GroupBy.Exprs, sqlparser.CloneExpr(d.expr))
		}
	}
	sel.SelectExprs = &sqlparser.SelectExprs{Exprs: append(append([]sqlparser.SelectExpr(nil), w.exprs...), w.derived...)}

	// Column indexes, now that the derived columns are known.
	rw := &selectRewrite{having: having}
	mp := &rw.plan
	if having != nil {
		having.resolve(w)
	}
	for _, o := range w.order {
		mp.OrderBy = append(mp.OrderBy, orderKey{Index: w.index(o.col), Desc: o.desc})
	}
	for _, g := range w.grouped {
		mp.GroupBy = append(mp.GroupBy, w.index(g))
	}
	for _, x := range w.weights {
		mp.Weights = append(mp.Weights, weight{Column: w.index(x.col), Weight: w.index(x.weight)})
	}
	isAgg := make(map[int]bool)
	for _, a := range w.aggs {
		ag := aggregate{Kind: a.kind, Index: w.index(a.col), Distinct: a.distinct}
		if a.distinct {
			ag.ArgIndex = w.index(a.arg)
		}
		mp.Aggregates = append(mp.Aggregates, ag)
		if a.kind == aggAvg {
			// The helpers are aggregate columns too: an ORDER BY SUM(x)
			// may use them.
			ag.SumIndex, ag.CountIndex = w.index(a.sum), w.index(a.count)
			mp.Aggregates[len(mp.Aggregates)-1] = ag
			mp.Aggregates = append(mp.Aggregates,
				aggregate{Kind: aggSum, Index: ag.SumIndex, Distinct: ag.Distinct, ArgIndex: ag.ArgIndex},
				aggregate{Kind: aggCount, Index: ag.CountIndex, Distinct: ag.Distinct, ArgIndex: ag.ArgIndex})
		}
	}
	for _, a := range mp.Aggregates {
		isAgg[a.Index] = true
	}
	for _, g := range mp.GroupBy {
		if isAgg[g] {
			return nil, unsupported("GROUP BY an aggregate")
		}
	}
	mp.Distinct = sel.Distinct
	// Every value the merge compares that may be text has its weight.
	mp.Collated = len(mp.OrderBy) > 0 || len(mp.GroupBy) > 0 || len(mp.Aggregates) > 0 || mp.Distinct || having != nil
	switch d := len(w.derived); {
	case d == 0:
		mp.Visible = 0
	case w.star:
		mp.Visible = -d
	default:
		mp.Visible = len(w.exprs)
	}

	// LIMIT.
	if l := sel.Limit; l != nil {
		rw.limit = true
		var ok bool
		if rw.count, ok = limitValue(l.Rowcount); !ok {
			return nil, unsupported("LIMIT with an expression over several shards")
		}
		rw.offset = limitSource{arg: -1}
		if l.Offset != nil {
			rw.hasOffset = true
			if rw.offset, ok = limitValue(l.Offset); !ok {
				return nil, unsupported("OFFSET with an expression over several shards")
			}
		}
		// Each shard's first offset+limit rows hold the answer when the
		// merge reads the shards in the final order (or in none); not when
		// it groups in memory, nor when derived columns make DISTINCT
		// compare more columns on the shards than in the merge (weight
		// columns do not: equal values have equal weights, their trailing
		// spaces trimmed on the shard).
		// Nor when the shards group by DISTINCT arguments: their rows are
		// parts of groups.
		push := (len(mp.GroupBy) == 0 || groupsStream(mp.GroupBy, mp.OrderBy)) && !(sel.Distinct && len(w.derived) > len(w.weights)) &&
			len(w.distinct) == 0 && having == nil
		if push {
			rw.limitNode = &sqlparser.Limit{}
			sel.Limit = rw.limitNode
		} else {
			sel.Limit = nil
		}
	}
	return rw, nil
}

// aggregate records the aggregate at column col, if e is one.
func (w *selectRewriter) aggregate(e sqlparser.Expr, col colRef) error {
	var kind aggKind
	distinct := false // MIN and MAX ignore DISTINCT
	switch x := e.(type) {
	case *sqlparser.CountStar:
		kind = aggCount
	case *sqlparser.Count:
		kind, distinct = aggCount, x.Distinct
	case *sqlparser.Sum:
		kind, distinct = aggSum, x.Distinct
	case *sqlparser.Min:
		kind = aggMin
	case *sqlparser.Max:
		kind = aggMax
	case *sqlparser.Avg:
		kind, distinct = aggAvg, x.Distinct
	case *sqlparser.AnyValue:
		return nil // a value of the group: what the merge keeps anyway
	case sqlparser.AggrFunc:
		return unsupported("aggregate %s over several shards", strings.ToUpper(x.AggrName()))
	default:
		if sqlparser.ContainsAggregation(e) {
			return unsupported("aggregate inside an expression (%s) over several shards", sqlparser.String(e))
		}
		return nil
	}
	if !w.resolvable(col) {
		return unsupported("aggregate between two * in the select list over several shards")
	}
	a := aggRef{kind: kind, col: col, distinct: distinct}
	if distinct {
		var arg sqlparser.Expr
		switch x := e.(type) {
		case *sqlparser.Count:
			if len(x.Args) != 1 {
				return unsupported("COUNT(DISTINCT …) of %d expressions over several shards", len(x.Args))
			}
			arg = x.Args[0]
		case *sqlparser.Sum:
			arg = x.Arg
		case *sqlparser.Avg:
			arg = x.Arg
		}
		if sqlparser.ContainsAggregation(arg) {
			return unsupported("aggregate inside an aggregate (%s) over several shards", sqlparser.String(e))
		}
		a.arg = w.distinctColumn(arg)
	}
	if kind == aggAvg {
		arg := e.(*sqlparser.Avg).Arg
		a.sum = w.derive(&sqlparser.Sum{Arg: sqlparser.CloneExpr(arg), Distinct: distinct})
		a.count = w.derive(&sqlparser.Count{Args: []sqlparser.Expr{sqlparser.CloneExpr(arg)}, Distinct: distinct})
	}
	w.aggs = append(w.aggs, a)
	if kind == aggMin || kind == aggMax {
		w.weigh(col) // the merge picks the least or greatest text by weight
	}
	return nil
}

// distinctColumn returns the derived column of a DISTINCT aggregate's
// argument, one per argument, with its weight string when it may be text.
func (w *selectRewriter) distinctColumn(arg sqlparser.Expr) colRef {
	for _, d := range w.distinct {
		if sameExpr(d.expr, arg) {
			return d.col
		}
	}
	c := w.derive(sqlparser.CloneExpr(arg))
	w.weigh(c)
	w.distinct = append(w.distinct, distinctArg{expr: arg, col: c})
	return c
}

// derive appends e to the select list as a derived column.
func (w *selectRewriter) derive(e sqlparser.Expr) colRef {
	w.derived = append(w.derived, &sqlparser.AliasedExpr{Expr: e})
	return colRef{derived: true, n: len(w.derived) - 1}
}

// weigh derives the weight column of column c's expression, once per
// column, unless the expression cannot be a character string.
func (w *selectRewriter) weigh(c colRef) {
	for _, x := range w.weights {
		if x.col == c {
			return
		}
	}
	e := w.exprOf(c)
	if e == nil || !mayBeText(e) {
		return
	}
	w.weights = append(w.weights, weightRef{col: c, weight: w.derive(weightExpr(e))})
}

// exprOf is the expression of column c; nil for a '*'.
func (w *selectRewriter) exprOf(c colRef) sqlparser.Expr {
	if c.derived {
		return w.derived[c.n].(*sqlparser.AliasedExpr).Expr
	}
	if ae, ok := w.exprs[c.n].(*sqlparser.AliasedExpr); ok {
		return ae.Expr
	}
	return nil
}

// mayBeText reports whether e may be a character string the merge
// compares: not a number, NULL, arithmetic, a comparison or another truth
// value, nor an aggregate other than MIN or MAX of text (the merge
// combines the others on its own). A string literal or a '?' may be text.
func mayBeText(e sqlparser.Expr) bool {
	switch x := e.(type) {
	case *sqlparser.Min:
		return mayBeText(x.Arg)
	case *sqlparser.Max:
		return mayBeText(x.Arg)
	case *sqlparser.Literal:
		return x.Type == sqlparser.StrVal
	case *sqlparser.UnaryExpr:
		return x.Operator == sqlparser.NStringOp
	case *sqlparser.NullVal, sqlparser.BoolVal, *sqlparser.BinaryExpr, *sqlparser.ComparisonExpr, *sqlparser.BetweenExpr,
		*sqlparser.AndExpr, *sqlparser.OrExpr, *sqlparser.XorExpr, *sqlparser.NotExpr, *sqlparser.IsExpr:
		return false
	}
	return !sqlparser.ContainsAggregation(e)
}

// resolvable reports whether the index of a select-list column can be
// known: not after a '*' unless after the last one.
func (w *selectRewriter) resolvable(c colRef) bool {
	return c.derived || !w.star || c.n < w.first || c.n > w.last
}

// index is the final index of c: negative when counted from the end.
func (w *selectRewriter) index(c colRef) int {
	v, d := len(w.exprs), len(w.derived)
	switch {
	case c.derived && !w.star:
		return v + c.n
	case c.derived:
		return -(d - c.n)
	case !w.star || c.n < w.first:
		return c.n
	default:
		return -(v - c.n) - d
	}
}

// column finds the column of an ORDER BY (orderBy) or GROUP BY item,
// deriving one when the select list does not have it.
func (w *selectRewriter) column(e sqlparser.Expr, orderBy bool) (colRef, error) {
	if l, ok := e.(*sqlparser.Literal); ok && l.Type == sqlparser.IntVal {
		p, err := strconv.Atoi(l.Val)
		if err != nil || p < 1 || p > len(w.exprs) {
			return colRef{}, unsupported("position %s in ORDER BY or GROUP BY is not in the select list", l.Val)
		}
		c := colRef{n: p - 1}
		if _, star := w.exprs[p-1].(*sqlparser.StarExpr); star || !w.resolvable(c) {
			return colRef{}, unsupported("position %s in ORDER BY or GROUP BY after * over several shards", l.Val)
		}
		return c, nil
	}
	byAlias := func() (colRef, bool) {
		col, ok := e.(*sqlparser.ColName)
		if !ok || !col.Qualifier.IsEmpty() {
			return colRef{}, false
		}
		for i, x := range w.exprs {
			if ae, ok := x.(*sqlparser.AliasedExpr); ok && ae.As.NotEmpty() && ae.As.Equal(col.Name) && w.resolvable(colRef{n: i}) {
				return colRef{n: i}, true
			}
		}
		return colRef{}, false
	}
	byExpr := func() (colRef, bool) {
		for i, x := range w.exprs {
			if ae, ok := x.(*sqlparser.AliasedExpr); ok && sameExpr(ae.Expr, e) && w.resolvable(colRef{n: i}) {
				return colRef{n: i}, true
			}
		}
		for i, x := range w.derived {
			if sameExpr(x.(*sqlparser.AliasedExpr).Expr, e) {
				return colRef{derived: true, n: i}, true
			}
		}
		return colRef{}, false
	}
	first, second := byExpr, byAlias
	if orderBy {
		first, second = byAlias, byExpr
	}
	if c, ok := first(); ok {
		return c, nil
	}
	if c, ok := second(); ok {
		return c, nil
	}
	if sqlparser.ContainsAggregation(e) {
		// ORDER BY COUNT(*) not selected: a hidden aggregate column.
		if _, ok := e.(sqlparser.AggrFunc); !ok {
			return colRef{}, unsupported("aggregate inside an expression (%s) over several shards", sqlparser.String(e))
		}
		c := w.derive(sqlparser.CloneExpr(e))
		if err := w.aggregate(e, c); err != nil {
			return colRef{}, err
		}
		return c, nil
	}
	return w.derive(sqlparser.CloneExpr(e)), nil
}

// sameExpr compares expressions, columns by name when either is
// unqualified.
var lenientColumns = &sqlparser.Comparator{RefOfColName_: func(a, b *sqlparser.ColName) bool {
	if a == nil || b == nil {
		return a == b
	}
	if !a.Name.Equal(b.Name) {
		return false
	}
	return a.Qualifier.IsEmpty() || b.Qualifier.IsEmpty() || strings.EqualFold(a.Qualifier.Name.String(), b.Qualifier.Name.String())
}}

func sameExpr(a, b sqlparser.Expr) bool { return lenientColumns.Expr(a, b) }

// hasWindow reports whether a window function (an OVER clause) appears.
func hasWindow(n sqlparser.SQLNode) bool {
	found := false
	_ = sqlparser.Walk(func(node sqlparser.SQLNode) (bool, error) {
		if _, ok := node.(*sqlparser.OverClause); ok {
			found = true
		}
		return !found, nil
	}, n)
	return found
}

// limitValue reads a LIMIT or OFFSET item: an integer literal or '?'.
func limitValue(e sqlparser.Expr) (limitSource, bool) {
	switch e := e.(type) {
	case *sqlparser.Literal:
		if e.Type == sqlparser.IntVal {
			if n, err := strconv.ParseInt(e.Val, 10, 64); err == nil {
				return limitSource{arg: -1, n: n}, true
			}
			// LIMIT o, 18446744073709551615 is MySQL's "all the rest".
			if _, err := strconv.ParseUint(e.Val, 10, 64); err == nil {
				return limitSource{arg: -1, n: math.MaxInt64}, true
			}
		}
	case *sqlparser.Argument:
		if i, ok := placeholderIndex(e.Name); ok {
			return limitSource{arg: i}, true
		}
	}
	return limitSource{}, false
}

// weightExpr is the SQL of x's weight column, in the form
// merge_collation.go describes:
//
//	CONCAT(IF(pads, 'P', 'N'), CHAR(LENGTH(WEIGHT_STRING(two spaces))),
//	       WEIGHT_STRING(two spaces),
//	       TRIM(TRAILING IF(pads, WEIGHT_STRING(one space), empty) FROM WEIGHT_STRING(x)))
//
// inside IF(COLLATION(x) = 'binary', NULL, …) unless x holds a
// placeholder, where pads compares the empty string with one space, and
// every string is in x's collation: IF(FALSE, x, s) has the value of s
// and the collation of x, as s has in a comparison with x. The shard trims
// the trailing spaces so that its DISTINCT over the weight column keeps
// one of 'a' and 'a ', as it does over the column.
func weightExpr(x sqlparser.Expr) sqlparser.Expr {
	as := func(s string) sqlparser.Expr { // a string in x's collation
		return fn("if", sqlparser.BoolVal(false), sqlparser.CloneExpr(x), sqlparser.NewStrLiteral(s))
	}
	ws := func(e sqlparser.Expr) sqlparser.Expr { return &sqlparser.WeightStringFuncExpr{Expr: e} }
	pads := func() sqlparser.Expr {
		return &sqlparser.ComparisonExpr{Operator: sqlparser.EqualOp, Left: as(""), Right: as(" ")}
	}
	w := fn("concat",
		fn("if", pads(), sqlparser.NewStrLiteral(string(rune(weightPad))), sqlparser.NewStrLiteral(string(rune(weightNoPad)))),
		&sqlparser.CharExpr{Exprs: []sqlparser.Expr{fn("length", ws(as("  ")))}},
		ws(as("  ")),
		&sqlparser.TrimFuncExpr{
			TrimFuncType: sqlparser.NormalTrimType, Type: sqlparser.TrailingTrimType,
			TrimArg:   fn("if", pads(), ws(as(" ")), sqlparser.NewStrLiteral("")),
			StringArg: ws(sqlparser.CloneExpr(x)),
		})
	if hasArgument(x) {
		// A placeholder's collation is not known when the statement is
		// prepared: no shortcut.
		return w
	}
	// A value that is not a character string (a number, a date, a binary
	// string: COLLATION says 'binary') has no weight the merge uses; the
	// server decides this once per statement, so such a column costs no
	// weight computation per row.
	notText := &sqlparser.ComparisonExpr{Operator: sqlparser.EqualOp,
		Left: fn("collation", sqlparser.CloneExpr(x)), Right: sqlparser.NewStrLiteral("binary")}
	return fn("if", notText, &sqlparser.NullVal{}, w)
}

// hasArgument reports whether e contains a placeholder.
func hasArgument(e sqlparser.Expr) bool {
	found := false
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		if _, ok := n.(*sqlparser.Argument); ok {
			found = true
		}
		return !found, nil
	}, e)
	return found
}

func fn(name string, args ...sqlparser.Expr) sqlparser.Expr {
	return &sqlparser.FuncExpr{Name: sqlparser.NewIdentifierCI(name), Exprs: args}
}
