package shard

// Sharding conditions: the part of a WHERE clause that narrows the data
// nodes, as a tree the analysis builds once per SQL text and each call
// evaluates with its arguments into a set of nodes.
//
//	column = v, column IN (v, …)        the nodes of the values
//	BETWEEN, <, <=, >, >=               Algorithm.ShardRange
//	a AND b                             intersection
//	a OR b                              union (a branch without condition: every node)
//	anything else                       every node
//
// The evaluation also says whether the result is keyed: narrowed by a
// sharding column in every OR branch. A write that is not keyed is
// refused; a read that is not keyed is a broadcast read.

import (
	"database/sql/driver"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

type condOp uint8

const (
	condAll   condOp = iota // no restriction
	condAnd                 // every kid
	condOr                  // any kid
	condIn                  // column = v or IN (v, …)
	condRange               // column in a range
	condNone                // no node needed: the query level reads no sharded table
)

// routeCond is a node of the condition tree.
type routeCond struct {
	op   condOp
	kids []*routeCond
	ref  int    // the sharded table reference (index into routePlan.shards)
	col  string // the sharding column, lower case
	vals []condValue
	// condRange bounds
	lo, hi         *condValue
	loExcl, hiExcl bool
}

// condValue is a value of a condition or of an INSERT row: a literal
// converted once, or an argument bound per call.
type condValue struct {
	arg int // position in the caller's args, or -1 for lit
	lit Value
}

func (v condValue) value(args []driver.NamedValue) Value {
	if v.arg >= 0 {
		return args[v.arg].Value
	}
	return v.lit
}

var (
	condAllNode  = &routeCond{op: condAll}
	condNoneNode = &routeCond{op: condNone}
)

func condAndOf(a, b *routeCond) *routeCond {
	switch {
	case a.op == condAll:
		return b
	case b.op == condAll:
		return a
	}
	c := &routeCond{op: condAnd}
	for _, x := range []*routeCond{a, b} {
		if x.op == condAnd {
			c.kids = append(c.kids, x.kids...)
		} else {
			c.kids = append(c.kids, x)
		}
	}
	return c
}

func condOrOf(a, b *routeCond) *routeCond {
	if a.op == condAll || b.op == condAll {
		return condAllNode
	}
	c := &routeCond{op: condOr}
	for _, x := range []*routeCond{a, b} {
		if x.op == condOr {
			c.kids = append(c.kids, x.kids...)
		} else {
			c.kids = append(c.kids, x)
		}
	}
	return c
}

// condScope resolves column names of a WHERE clause to the sharded table
// references of one query level of the statement (see level).
type condScope struct {
	shards  []*shardRef
	byName  map[string]int          // alias or table name (lower case) → reference
	local   []int                   // the references of the level's FROM, in order
	derived map[string]*derivedCols // alias → a derived table over sharded tables
}

// resolve returns the references whose sharding column col is: the
// qualified one, or every reference of the level sharded by that column
// name; through the plain columns of a linked derived table too.
func (s *condScope) resolve(c *sqlparser.ColName, f func(ref int, col string)) {
	col := c.Name.Lowered()
	through := func(d *derivedCols) {
		if d == nil || !d.linked {
			return
		}
		if src, ok := d.cols[col]; ok && s.shards[src.ref].table.hasColumn(src.col) {
			f(src.ref, src.col)
		}
	}
	if !c.Qualifier.IsEmpty() {
		q := strings.ToLower(c.Qualifier.Name.String())
		if i, ok := s.byName[q]; ok {
			if s.shards[i].table.hasColumn(col) {
				f(i, col)
			}
			return
		}
		through(s.derived[q])
		return
	}
	for _, i := range s.local {
		if s.shards[i].table.hasColumn(col) {
			f(i, col)
		}
	}
	for _, d := range s.derived {
		through(d)
	}
}

// build returns the condition tree of e.
func (s *condScope) build(e sqlparser.Expr) *routeCond {
	switch e := e.(type) {
	case *sqlparser.AndExpr:
		return condAndOf(s.build(e.Left), s.build(e.Right))
	case *sqlparser.OrExpr:
		return condOrOf(s.build(e.Left), s.build(e.Right))
	case *sqlparser.ComparisonExpr:
		return s.comparison(e)
	case *sqlparser.BetweenExpr:
		col, ok := e.Left.(*sqlparser.ColName)
		if !ok || !e.IsBetween {
			return condAllNode
		}
		lo, ok1 := literalValue(e.From)
		hi, ok2 := literalValue(e.To)
		if !ok1 || !ok2 {
			return condAllNode
		}
		return s.leaves(col, func(ref int, c string) *routeCond {
			return &routeCond{op: condRange, ref: ref, col: c, lo: &lo, hi: &hi}
		})
	}
	return condAllNode
}

func (s *condScope) comparison(e *sqlparser.ComparisonExpr) *routeCond {
	if e.Modifier != sqlparser.Missing {
		return condAllNode
	}
	op := e.Operator
	if cols, ok := e.Left.(sqlparser.ValTuple); ok {
		return s.tuple(op, cols, e.Right)
	}
	// BINARY col = v and col = BINARY v compare bytes: they hold for some
	// of the rows col = v holds for, all in the nodes of v. Only equality
	// and IN: a range in byte order is not one in the column's collation.
	left, right := e.Left, e.Right
	if op == sqlparser.EqualOp || op == sqlparser.InOp {
		left, right = unBinary(left), unBinary(right)
		if t, ok := right.(sqlparser.ValTuple); ok && op == sqlparser.InOp {
			right = unBinaryTuple(t)
		}
	}
	col, ok := left.(*sqlparser.ColName)
	other := right
	if !ok {
		if col, ok = right.(*sqlparser.ColName); !ok {
			return condAllNode
		}
		other = left
		switch op { // v < col is col > v
		case sqlparser.LessThanOp:
			op = sqlparser.GreaterThanOp
		case sqlparser.GreaterThanOp:
			op = sqlparser.LessThanOp
		case sqlparser.LessEqualOp:
			op = sqlparser.GreaterEqualOp
		case sqlparser.GreaterEqualOp:
			op = sqlparser.LessEqualOp
		case sqlparser.InOp:
			return condAllNode
		}
	}
	switch op {
	case sqlparser.EqualOp:
		v, ok := literalValue(other)
		if !ok {
			return condAllNode
		}
		return s.leaves(col, func(ref int, c string) *routeCond {
			return &routeCond{op: condIn, ref: ref, col: c, vals: []condValue{v}}
		})
	case sqlparser.InOp:
		tuple, ok := other.(sqlparser.ValTuple)
		if !ok {
			return condAllNode
		}
		vals := make([]condValue, 0, len(tuple))
		for _, x := range tuple {
			v, ok := literalValue(x)
			if !ok {
				return condAllNode
			}
			vals = append(vals, v)
		}
		return s.leaves(col, func(ref int, c string) *routeCond {
			return &routeCond{op: condIn, ref: ref, col: c, vals: vals}
		})
	case sqlparser.LessThanOp, sqlparser.LessEqualOp, sqlparser.GreaterThanOp, sqlparser.GreaterEqualOp:
		v, ok := literalValue(other)
		if !ok {
			return condAllNode
		}
		return s.leaves(col, func(ref int, c string) *routeCond {
			rc := &routeCond{op: condRange, ref: ref, col: c}
			switch op {
			case sqlparser.LessThanOp:
				rc.hi, rc.hiExcl = &v, true
			case sqlparser.LessEqualOp:
				rc.hi = &v
			case sqlparser.GreaterThanOp:
				rc.lo, rc.loExcl = &v, true
			default:
				rc.lo = &v
			}
			return rc
		})
	}
	return condAllNode
}

// unBinary returns x of BINARY x (CAST(x AS BINARY), without a length:
// BINARY(n) cuts the value), else e.
func unBinary(e sqlparser.Expr) sqlparser.Expr {
	if x, ok := binaryOperand(e); ok {
		return x
	}
	return e
}

func binaryOperand(e sqlparser.Expr) (sqlparser.Expr, bool) {
	var x sqlparser.Expr
	var t *sqlparser.ConvertType
	switch c := e.(type) {
	case *sqlparser.ConvertExpr:
		x, t = c.Expr, c.Type
	case *sqlparser.CastExpr:
		if c.Array {
			return nil, false
		}
		x, t = c.Expr, c.Type
	default:
		return nil, false
	}
	if t == nil || !strings.EqualFold(t.Type, "binary") || t.Length != nil || t.Scale != nil || t.Charset.Name != "" {
		return nil, false
	}
	return x, true
}

// unBinaryTuple is t with BINARY taken off its values, copied if needed.
func unBinaryTuple(t sqlparser.ValTuple) sqlparser.ValTuple {
	for i := range t {
		if _, ok := binaryOperand(t[i]); ok {
			out := append(sqlparser.ValTuple(nil), t...)
			for j := i; j < len(out); j++ {
				out[j] = unBinary(out[j])
			}
			return out
		}
	}
	return t
}

// tuple handles (a, b) = (1, 2) and (a, b) IN ((1, 2), (3, 4)): a
// conjunction of equalities per row, the rows of IN in a disjunction.
func (s *condScope) tuple(op sqlparser.ComparisonExprOperator, cols sqlparser.ValTuple, right sqlparser.Expr) *routeCond {
	row := func(vals sqlparser.Expr) *routeCond {
		t, ok := vals.(sqlparser.ValTuple)
		if !ok || len(t) != len(cols) {
			return condAllNode
		}
		c := condAllNode
		for i, x := range cols {
			col, ok := x.(*sqlparser.ColName)
			if !ok {
				continue
			}
			c = condAndOf(c, s.comparison(&sqlparser.ComparisonExpr{Operator: sqlparser.EqualOp, Left: col, Right: t[i]}))
		}
		return c
	}
	switch op {
	case sqlparser.EqualOp:
		return row(right)
	case sqlparser.InOp:
		rows, ok := right.(sqlparser.ValTuple)
		if !ok || len(rows) == 0 {
			return condAllNode
		}
		c := row(rows[0])
		for _, r := range rows[1:] {
			c = condOrOf(c, row(r))
		}
		return c
	}
	return condAllNode
}

// leaves is the conjunction of one leaf per reference col resolves to.
func (s *condScope) leaves(col *sqlparser.ColName, leaf func(ref int, c string) *routeCond) *routeCond {
	out := condAllNode
	s.resolve(col, func(ref int, c string) {
		out = condAndOf(out, leaf(ref, c))
	})
	return out
}

// literalValue converts a literal or a placeholder to a condition value:
// integers to int64 (uint64 beyond), strings and temporal literals to
// string, NULL to nil; anything else is not a sharding value.
func literalValue(e sqlparser.Expr) (condValue, bool) {
	switch e := e.(type) {
	case *sqlparser.Argument:
		if i, ok := placeholderIndex(e.Name); ok {
			return condValue{arg: i}, true
		}
	case *sqlparser.NullVal:
		return condValue{arg: -1, lit: nil}, true
	case *sqlparser.Literal:
		switch e.Type {
		case sqlparser.IntVal:
			if n, err := strconv.ParseInt(e.Val, 10, 64); err == nil {
				return condValue{arg: -1, lit: n}, true
			}
			if n, err := strconv.ParseUint(e.Val, 10, 64); err == nil {
				return condValue{arg: -1, lit: n}, true
			}
		case sqlparser.StrVal, sqlparser.DateVal, sqlparser.TimeVal, sqlparser.TimestampVal:
			return condValue{arg: -1, lit: e.Val}, true
		}
	case *sqlparser.UnaryExpr:
		if l, ok := e.Expr.(*sqlparser.Literal); ok && e.Operator == sqlparser.UMinusOp && l.Type == sqlparser.IntVal {
			if n, err := strconv.ParseInt("-"+l.Val, 10, 64); err == nil {
				return condValue{arg: -1, lit: n}, true
			}
		}
	}
	return condValue{}, false
}

// nodeEval evaluates conditions for one call: node sets are bitsets of
// words uint64 carved from a scratch buffer.
type nodeEval struct {
	shards  []*shardRef
	args    []driver.NamedValue
	words   int
	scratch []uint64
}

func (e *nodeEval) alloc() []uint64 {
	n := len(e.scratch)
	if n+e.words > cap(e.scratch) {
		e.scratch = make([]uint64, 0, 2*cap(e.scratch)+4*e.words)
		n = 0
	}
	e.scratch = e.scratch[:n+e.words]
	s := e.scratch[n : n+e.words]
	clear(s)
	return s
}

// eval returns the nodes c allows and whether c is keyed.
func (e *nodeEval) eval(c *routeCond) ([]uint64, bool, error) {
	switch c.op {
	case condAnd:
		var out []uint64
		keyed := false
		for i, k := range c.kids {
			s, kk, err := e.eval(k)
			if err != nil {
				return nil, false, err
			}
			keyed = keyed || kk
			if i == 0 {
				out = s
				continue
			}
			for w := range out {
				out[w] &= s[w]
			}
		}
		return out, keyed, nil
	case condOr:
		var out []uint64
		keyed := true
		for i, k := range c.kids {
			s, kk, err := e.eval(k)
			if err != nil {
				return nil, false, err
			}
			keyed = keyed && kk
			if i == 0 {
				out = s
				continue
			}
			for w := range out {
				out[w] |= s[w]
			}
		}
		return out, keyed, nil
	case condIn, condRange:
		out := e.alloc()
		err := e.leaf(c, out)
		return out, err == nil, err
	case condNone:
		return e.alloc(), true, nil
	}
	out := e.alloc()
	copy(out, e.shards[0].table.full)
	return out, false, nil
}

// leaf adds to out the nodes of reference c.ref that a row satisfying c
// can be in.
func (e *nodeEval) leaf(c *routeCond, out []uint64) error {
	t := e.shards[c.ref].table
	if c.op == condIn {
		for _, cv := range c.vals {
			v := cv.value(e.args)
			if v == nil { // = NULL holds for no row
				continue
			}
			if err := e.exact(t, c.col, v, out); err != nil {
				return err
			}
		}
		return nil
	}
	var r Range
	if c.lo != nil {
		if r.Lo = c.lo.value(e.args); r.Lo == nil {
			return nil
		}
		r.LoExclusive = c.loExcl
	}
	if c.hi != nil {
		if r.Hi = c.hi.value(e.args); r.Hi == nil {
			return nil
		}
		r.HiExclusive = c.hiExcl
	}
	return e.rangeNodes(t, c.col, r, out)
}

// exact adds the node(s) of value v of column col to out.
func (e *nodeEval) exact(t *routeTable, col string, v Value, out []uint64) error {
	dsFrom, dsTo := 0, len(t.ds)
	if col == t.dbCol {
		ds, err := t.rule.DatabaseStrategy.Algorithm.Shard(t.ds, v)
		if err != nil {
			return err
		}
		d, ok := t.dsIndex[ds]
		if !ok {
			return targetErr(t.rule.DatabaseStrategy, ds, t.ds)
		}
		if col != t.tblCol {
			orInto(out, t.dsMask[d])
			return nil
		}
		dsFrom, dsTo = d, d+1
	}
	// col is the table strategy's column: within each data source still
	// possible.
	var tbl string
	for d := dsFrom; d < dsTo; d++ {
		if d == dsFrom || !t.sameTabs {
			var err error
			if tbl, err = t.rule.TableStrategy.Algorithm.Shard(t.dsTables[d], v); err != nil {
				return err
			}
		}
		n, ok := t.nodeOf[d][tbl]
		if !ok {
			return targetErr(t.rule.TableStrategy, tbl, t.dsTables[d])
		}
		out[n/64] |= 1 << (n % 64)
	}
	return nil
}

// rangeNodes adds the nodes that may hold values of col in r to out.
func (e *nodeEval) rangeNodes(t *routeTable, col string, r Range, out []uint64) error {
	dsSel := t.ds
	if col == t.dbCol {
		var err error
		if dsSel, err = t.rule.DatabaseStrategy.Algorithm.ShardRange(t.ds, r); err != nil {
			return err
		}
	}
	for _, ds := range dsSel {
		d, ok := t.dsIndex[ds]
		if !ok {
			return targetErr(t.rule.DatabaseStrategy, ds, t.ds)
		}
		if col != t.tblCol {
			orInto(out, t.dsMask[d])
			continue
		}
		tbls, err := t.rule.TableStrategy.Algorithm.ShardRange(t.dsTables[d], r)
		if err != nil {
			return err
		}
		for _, tbl := range tbls {
			n, ok := t.nodeOf[d][tbl]
			if !ok {
				return targetErr(t.rule.TableStrategy, tbl, t.dsTables[d])
			}
			out[n/64] |= 1 << (n % 64)
		}
	}
	return nil
}

func orInto(dst, src []uint64) {
	for i := range dst {
		dst[i] |= src[i]
	}
}

func countBits(s []uint64) int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// forBits calls f for every node in s, in order.
func forBits(s []uint64, f func(i int)) {
	for w, word := range s {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			f(w*64 + b)
			word &^= 1 << b
		}
	}
}

func targetErr(s *Strategy, got string, targets []string) error {
	name := s.AlgorithmName
	if name == "" {
		name = fmt.Sprintf("%T", s.Algorithm)
	}
	return fmt.Errorf("rwshard: shard: algorithm %s of column %s chose %q, not one of %s", name, s.Column, got, strings.Join(targets, ", "))
}
