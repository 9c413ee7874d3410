package shard

// HAVING of the merge: a condition on the merged groups, evaluated after
// the groups of every shard are combined (a shard sees only its part of a
// group, so it cannot filter them itself).

import (
	"database/sql/driver"
	"fmt"
	"strconv"
)

var _ rowStream = (*havingStream)(nil)

// havingOp is the kind of a havingExpr node.
type havingOp uint8

// havingExpr node kinds.
const (
	havingCompare   havingOp = iota + 1 // Left Cmp Right
	havingAnd                           // every Sub
	havingOr                            // some Sub
	havingNot                           // not Sub[0]
	havingIsNull                        // Left IS NULL
	havingIsNotNull                     // Left IS NOT NULL
)

// havingExpr is a condition on the merged group rows, as SQL's HAVING: a group
// is returned only when the condition is true (not false, not unknown).
// Comparisons with NULL are unknown, except "<=>"; AND, OR and NOT follow
// SQL's three-valued logic.
//
// Values compare as ORDER BY does (compareValues): numbers numerically
// across types and decimal text. A comparison that involves a character
// column (CHAR, VARCHAR, TEXT, by the column types) compares the weight
// strings of its two operands in the collation the server would compare
// them in, which the rewriter selects (havingOperand.Weight); without them,
// or against a number or a column of another type (which MySQL converts
// to numbers), it is refused with ErrUnsupported. So is text that is not a
// number against a numeric column.
type havingExpr struct {
	Op havingOp
	// Sub are the operands of havingAnd and havingOr (one or more) and
	// havingNot (one).
	Sub []havingExpr
	// Cmp of havingCompare: "=", "!=", "<", "<=", ">", ">=" or "<=>".
	Cmp string
	// Left and Right of havingCompare; Left of havingIsNull/IsNotNull.
	Left, Right havingOperand
}

// havingOperand is a column of the merged rows or, with Const, a value.
type havingOperand struct {
	Column int
	Const  bool
	Value  driver.Value
	// Weighted: Weight is the column that holds the operand's weight
	// string in the collation of its comparison, in the form of a
	// Collated plan's weight columns (merge_collation.go): the same on
	// every row for a Const, taken from the row a MIN or MAX picks for
	// such a column.
	Weighted bool
	Weight   int
}

const (
	havingUnknown int8 = -1
	havingFalse   int8 = 0
	havingTrue    int8 = 1
)

// havingCond is a havingExpr checked against the shard rows, ready to be
// evaluated.
type havingCond struct {
	op          havingOp
	sub         []havingCond
	cmp         string
	left, right havingOperand
	weighed     bool     // compare the operands' weights
	cls         colClass // how the operands compare
}

// havingEnv is what compileHaving checks a havingExpr against.
type havingEnv struct {
	ncols    int
	cols     []string
	types    []string
	collated bool
	picks    map[int]*pick
	checks   []weightCheck // of the weight columns the comparisons use
}

func compileHaving(h *havingExpr, env *havingEnv) (*havingCond, error) {
	c, err := env.compile(h)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

func (env *havingEnv) inRange(what string, i int) error {
	if i < 0 || i >= env.ncols {
		return planError("Having %s %d out of range (%d columns)", what, i, env.ncols)
	}
	return nil
}

func (env *havingEnv) operand(o havingOperand) error {
	if o.Weighted {
		if err := env.inRange("weight column", o.Weight); err != nil {
			return err
		}
	}
	if o.Const {
		return nil
	}
	return env.inRange("column", o.Column)
}

func (env *havingEnv) compile(h *havingExpr) (havingCond, error) {
	c := havingCond{op: h.Op, cmp: h.Cmp, left: h.Left, right: h.Right}
	switch h.Op {
	case havingCompare:
		switch h.Cmp {
		case "=", "!=", "<", "<=", ">", ">=", "<=>":
		default:
			return c, planError("Having comparison %q", h.Cmp)
		}
		if err := env.operand(h.Left); err != nil {
			return c, err
		}
		if err := env.operand(h.Right); err != nil {
			return c, err
		}
		return c, env.comparison(&c)
	case havingIsNull, havingIsNotNull:
		return c, env.operand(h.Left)
	case havingAnd, havingOr, havingNot:
		if len(h.Sub) == 0 || (h.Op == havingNot && len(h.Sub) != 1) {
			return c, planError("Having op %d with %d operands", h.Op, len(h.Sub))
		}
		c.sub = make([]havingCond, len(h.Sub))
		for i := range h.Sub {
			var err error
			if c.sub[i], err = env.compile(&h.Sub[i]); err != nil {
				return c, err
			}
		}
		return c, nil
	}
	return c, planError("Having op %d", h.Op)
}

// comparison decides how the operands of c compare.
func (env *havingEnv) comparison(c *havingCond) error {
	l, r := c.left, c.right
	c.cls = classAuto
	if !l.Const && env.types != nil {
		c.cls = classOf(env.types[l.Column])
	} else if !r.Const && env.types != nil {
		c.cls = classOf(env.types[r.Column])
	}
	if (l.Const && l.Value == nil) || (r.Const && r.Value == nil) {
		return nil // unknown, or for <=> whether the other is NULL
	}
	char := func(o havingOperand) bool { return !o.Const && env.types != nil && isCharType(env.types[o.Column]) }
	text := func(o havingOperand) bool {
		if o.Const {
			switch o.Value.(type) {
			case []byte, string:
				return true
			}
			return false
		}
		return char(o)
	}
	name := func(o havingOperand) string {
		if o.Const {
			return "a constant"
		}
		return env.cols[o.Column]
	}
	switch {
	case char(l) || char(r):
		if !text(l) || !text(r) {
			return unsupportedMerge("HAVING compares %s with %s: MySQL compares a character value with a number as numbers, the merge does not", name(l), name(r))
		}
		if !l.Weighted || !r.Weighted {
			return fmt.Errorf("%w: HAVING compares %s and %s without their weight strings: %w", ErrMergePlan, name(l), name(r),
				unsupportedMerge("character values compare in the server's collation"))
		}
		c.weighed, c.cls = true, classText
		if env.collated {
			c.cls = classWeight
			env.checks = append(env.checks, weightCheck{weight: l.Weight, name: name(l)}, weightCheck{weight: r.Weight, name: name(r)})
		}
		for _, o := range []havingOperand{l, r} {
			if p := env.picks[o.Column]; p != nil && !o.Const {
				p.carry(o.Weight)
			}
		}
	case env.collated && (env.types == nil || (!l.Const && !knownType(env.types[l.Column])) || (!r.Const && !knownType(env.types[r.Column]))):
		// Refused at the first text: a weight that is not NULL.
		for _, o := range []havingOperand{l, r} {
			if o.Weighted {
				env.checks = append(env.checks, weightCheck{weight: o.Weight, name: name(o), untyped: true})
			}
		}
	case c.cls == classNumeric && (text(l) || text(r)):
		num, v := l, r.Value
		if l.Const {
			num, v = r, l.Value
		}
		if !numericText(v) {
			return unsupportedMerge("HAVING compares the number %s with text that is not a number", name(num))
		}
	}
	return nil
}

// numericText reports text that reads as a number, as decimal or float
// syntax.
func numericText(v driver.Value) bool {
	var b []byte
	switch x := v.(type) {
	case []byte:
		b = x
	case string:
		b = []byte(x)
	default:
		return true
	}
	if _, ok := parseDecimal(b); ok {
		return true
	}
	_, err := strconv.ParseFloat(string(b), 64)
	return err == nil
}

// eval is the condition's truth value on row.
func (h *havingCond) eval(row []driver.Value) int8 {
	val := func(o havingOperand) driver.Value {
		if o.Const {
			return o.Value
		}
		return row[o.Column]
	}
	switch h.op {
	case havingCompare:
		l, r := val(h.left), val(h.right)
		if h.cmp == "<=>" {
			if l == nil || r == nil {
				return truth(l == nil && r == nil)
			}
		} else if l == nil || r == nil {
			return havingUnknown
		}
		if h.weighed {
			l, r = row[h.left.Weight], row[h.right.Weight]
		}
		n := compareValues(l, r, h.cls)
		switch h.cmp {
		case "=", "<=>":
			return truth(n == 0)
		case "!=":
			return truth(n != 0)
		case "<":
			return truth(n < 0)
		case "<=":
			return truth(n <= 0)
		case ">":
			return truth(n > 0)
		default:
			return truth(n >= 0)
		}
	case havingIsNull, havingIsNotNull:
		return truth((val(h.left) == nil) == (h.op == havingIsNull))
	case havingNot:
		switch t := h.sub[0].eval(row); t {
		case havingUnknown:
			return t
		default:
			return 1 - t
		}
	default: // havingAnd, havingOr: SQL's three-valued logic
		decides, out := havingFalse, havingTrue // AND: one false decides
		if h.op == havingOr {
			decides, out = havingTrue, havingFalse // OR: one true does
		}
		for i := range h.sub {
			switch v := h.sub[i].eval(row); v {
			case decides:
				return v
			case havingUnknown:
				out = havingUnknown
			}
		}
		return out
	}
}

func truth(b bool) int8 {
	if b {
		return havingTrue
	}
	return havingFalse
}

// havingStream passes the merged groups for which the condition is true.
type havingStream struct {
	in   rowStream
	cond *havingCond
}

func (h *havingStream) next() ([]driver.Value, int, error) {
	for {
		row, src, err := h.in.next()
		if err != nil {
			return nil, src, err
		}
		if h.cond.eval(row) == havingTrue {
			return row, src, nil
		}
	}
}
