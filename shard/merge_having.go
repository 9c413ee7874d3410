package shard

// HAVING of the merge: a condition on the merged groups, evaluated after
// the groups of every shard are combined (a shard sees only its part of a
// group, so it cannot filter them itself).

import (
	"database/sql/driver"
)

var _ rowStream = (*havingStream)(nil)

// HavingOp is the kind of a Having node.
type HavingOp uint8

// Having node kinds.
const (
	HavingCompare   HavingOp = iota + 1 // Left Cmp Right
	HavingAnd                           // every Sub
	HavingOr                            // some Sub
	HavingNot                           // not Sub[0]
	HavingIsNull                        // Left IS NULL
	HavingIsNotNull                     // Left IS NOT NULL
)

// Having is a condition on the merged group rows, as SQL's HAVING: a group
// is returned only when the condition is true (not false, not unknown).
// Comparisons with NULL are unknown, except "<=>"; AND, OR and NOT follow
// SQL's three-valued logic.
//
// Values compare as ORDER BY does (compareValues): numbers numerically
// across types and decimal text. Character columns cannot be compared in
// the merge (their collation is the server's): Merge refuses a Having on a
// CHAR, VARCHAR or TEXT column when it knows the column types.
type Having struct {
	Op HavingOp
	// Sub are the operands of HavingAnd and HavingOr (one or more) and
	// HavingNot (one).
	Sub []Having
	// Cmp of HavingCompare: "=", "!=", "<", "<=", ">", ">=" or "<=>".
	Cmp string
	// Left and Right of HavingCompare; Left of HavingIsNull/IsNotNull.
	Left, Right HavingOperand
}

// HavingOperand is a column of the merged rows or, with Const, a value.
type HavingOperand struct {
	Column int
	Const  bool
	Value  driver.Value
}

const (
	havingUnknown int8 = -1
	havingFalse   int8 = 0
	havingTrue    int8 = 1
)

func (h *Having) validate(ncols int, types []string) error {
	operand := func(o HavingOperand) error {
		if o.Const {
			return nil
		}
		if o.Column < 0 || o.Column >= ncols {
			return planError("Having column %d out of range (%d columns)", o.Column, ncols)
		}
		if types != nil && isCharType(types[o.Column]) {
			return planError("Having compares character column %d (%s), whose collation is the server's", o.Column, types[o.Column])
		}
		return nil
	}
	switch h.Op {
	case HavingCompare:
		switch h.Cmp {
		case "=", "!=", "<", "<=", ">", ">=", "<=>":
		default:
			return planError("Having comparison %q", h.Cmp)
		}
		if err := operand(h.Left); err != nil {
			return err
		}
		return operand(h.Right)
	case HavingIsNull, HavingIsNotNull:
		return operand(h.Left)
	case HavingAnd, HavingOr, HavingNot:
		if len(h.Sub) == 0 || (h.Op == HavingNot && len(h.Sub) != 1) {
			return planError("Having op %d with %d operands", h.Op, len(h.Sub))
		}
		for i := range h.Sub {
			if err := h.Sub[i].validate(ncols, types); err != nil {
				return err
			}
		}
		return nil
	}
	return planError("Having op %d", h.Op)
}

// eval is the condition's truth value on row.
func (h *Having) eval(row []driver.Value, cls []colClass) int8 {
	val := func(o HavingOperand) (driver.Value, colClass) {
		if o.Const {
			return o.Value, classAuto
		}
		return row[o.Column], cls[o.Column]
	}
	switch h.Op {
	case HavingCompare:
		l, lc := val(h.Left)
		r, rc := val(h.Right)
		if h.Cmp == "<=>" {
			if l == nil || r == nil {
				return truth(l == nil && r == nil)
			}
		} else if l == nil || r == nil {
			return havingUnknown
		}
		c := lc
		if h.Left.Const {
			c = rc
		}
		n := compareValues(l, r, c)
		switch h.Cmp {
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
	case HavingIsNull, HavingIsNotNull:
		v, _ := val(h.Left)
		return truth((v == nil) == (h.Op == HavingIsNull))
	case HavingNot:
		switch t := h.Sub[0].eval(row, cls); t {
		case havingUnknown:
			return t
		default:
			return 1 - t
		}
	default: // HavingAnd, HavingOr: SQL's three-valued logic
		decides, out := havingFalse, havingTrue // AND: one false decides
		if h.Op == HavingOr {
			decides, out = havingTrue, havingFalse // OR: one true does
		}
		for i := range h.Sub {
			switch v := h.Sub[i].eval(row, cls); v {
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
	cond *Having
	cls  []colClass
}

func (h *havingStream) next() ([]driver.Value, int, error) {
	for {
		row, src, err := h.in.next()
		if err != nil {
			return nil, src, err
		}
		if h.cond.eval(row, h.cls) == havingTrue {
			return row, src, nil
		}
	}
}
