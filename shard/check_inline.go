package shard

import (
	"math"
	"math/bits"
)

// The proof of an INLINE expression: the names it can produce, when they
// are finitely many. t_order_${order_id % 4} names four tables whatever
// the key; t_order_${order_id} names one per key, and cannot be proved.
//
// Every code part is summarised as f(x+P) = f(x) + D for all keys x >= 0
// (a period P and the increment D over a period). A part with D = 0
// repeats every P keys, so the keys 0 … P-1 show every name it gives; a
// part with D != 0 grows with the key. Keys are taken >= 0: Java's % of a
// negative key is negative, and no table is named t_order_-1.

// maxInlinePeriod bounds the keys evaluated to prove one expression, as
// maxInlineExpansion bounds the data nodes a table can have, and
// maxInlineEvals the evaluations of its code while finding its shape.
const (
	maxInlinePeriod = 1 << 16
	maxInlineEvals  = 1 << 20
)

// inlineShape is f(x+p) = f(x) + d over x >= 0; str marks a string
// (concatenation), whose d is always 0.
type inlineShape struct {
	p   uint64
	d   int64
	str bool
}

// inlineNames returns the names a's expression gives over the keys >= 0,
// each with the first key that gives it, in the order of those keys, and
// a period after which they repeat. ok is false when they cannot be
// enumerated: the expression uses the key whole (a string column, or one
// name per key), or its period is longer than maxInlinePeriod.
func (a *inlineAlgorithm) inlineNames() (names []string, keys []int64, period uint64, ok bool) {
	period = 1
	budget := maxInlineEvals
	for _, part := range a.tmpl.parts {
		if part.code == nil {
			continue
		}
		s, ok := a.shapeOf(part.code, &budget)
		if !ok || s.d != 0 {
			return nil, nil, 0, false
		}
		if period, ok = proofLCM(period, s.p, maxInlinePeriod); !ok {
			return nil, nil, 0, false
		}
	}
	seen := map[string]bool{}
	for x := int64(0); x < int64(period); x++ {
		name, err := a.nameAt(x)
		if err != nil {
			// Division by zero for some key: the expression fails at
			// run time whatever the tables, which a proof cannot fix.
			return nil, nil, 0, false
		}
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
			keys = append(keys, x)
		}
	}
	return names, keys, period, true
}

// nameAt evaluates the expression for the integer key x.
func (a *inlineAlgorithm) nameAt(x int64) (string, error) {
	b := inlineBinding{name: a.column, set: true, value: inlineVal{i: x}}
	var name []byte
	for _, part := range a.tmpl.parts {
		if part.code == nil {
			name = append(name, part.lit...)
			continue
		}
		v, err := part.code.eval(a.expr, b)
		if err != nil {
			return "", err
		}
		name = v.appendTo(name)
	}
	return string(name), nil
}

// shapeOf summarises n; ok is false when n is not of the form the proof
// handles, or when proving it would take more evaluations than budget
// has left.
func (a *inlineAlgorithm) shapeOf(n *inlineNode, budget *int) (inlineShape, bool) {
	switch n.kind {
	case 'i':
		return inlineShape{p: 1}, true
	case 's':
		return inlineShape{p: 1, str: true}, true
	case 'v':
		return inlineShape{p: 1, d: 1}, true
	case '-':
		s, ok := a.shapeOf(n.kids[0], budget)
		if !ok || s.str || s.d == math.MinInt64 {
			return inlineShape{}, false
		}
		return inlineShape{p: s.p, d: -s.d}, true
	case 'b':
	default:
		return inlineShape{}, false
	}
	l, ok := a.shapeOf(n.kids[0], budget)
	if !ok {
		return l, false
	}
	r, ok := a.shapeOf(n.kids[1], budget)
	if !ok {
		return r, false
	}
	p, ok := proofLCM(l.p, r.p, maxInlinePeriod)
	if !ok {
		return inlineShape{}, false
	}
	if l.str || r.str {
		// Concatenation: a string repeats when both sides do; any
		// other operator on a string fails at run time.
		if n.op != '+' || l.d != 0 || r.d != 0 {
			return inlineShape{}, false
		}
		return inlineShape{p: p, str: true}, true
	}
	switch n.op {
	case '+', '-':
		dl, ok1 := proofMul(l.d, int64(p/l.p))
		dr, ok2 := proofMul(r.d, int64(p/r.p))
		if n.op == '-' {
			if dr == math.MinInt64 {
				ok2 = false
			}
			dr = -dr
		}
		d, ok3 := proofAdd(dl, dr)
		return inlineShape{p: p, d: d}, ok1 && ok2 && ok3
	case '*':
		switch {
		case l.d == 0 && r.d == 0:
			return inlineShape{p: p}, true
		case inlineConstant(n.kids[1]):
			c, ok := a.constant(n.kids[1])
			d, ok2 := proofMul(l.d, c)
			return inlineShape{p: l.p, d: d}, ok && ok2
		case inlineConstant(n.kids[0]):
			c, ok := a.constant(n.kids[0])
			d, ok2 := proofMul(r.d, c)
			return inlineShape{p: r.p, d: d}, ok && ok2
		}
		return inlineShape{}, false
	}
	// / and %.
	if l.d == 0 && r.d == 0 {
		return inlineShape{p: p}, true
	}
	if !inlineConstant(n.kids[1]) {
		return inlineShape{}, false
	}
	c, ok := a.constant(n.kids[1])
	if !ok || c == 0 || c == math.MinInt64 {
		return inlineShape{}, false
	}
	// Java's / and % truncate toward zero: shifting the dividend by a
	// multiple of c shifts the quotient and keeps the remainder only
	// while the dividend keeps its sign.
	if !a.oneSign(n.kids[0], l, budget) {
		return inlineShape{}, false
	}
	absC := uint64(c)
	if c < 0 {
		absC = uint64(-c)
	}
	absD := uint64(l.d)
	if l.d < 0 {
		absD = -absD
	}
	k := absC / proofGCD(absD, absC)
	kp, ok := proofMulBounded(k, l.p, maxInlinePeriod)
	if !ok {
		return inlineShape{}, false
	}
	if n.op == '%' {
		return inlineShape{p: kp}, true
	}
	// k·d is a multiple of c: the quotient grows by k·d / c a period.
	kd, ok := proofMul(l.d, int64(k))
	if !ok {
		return inlineShape{}, false
	}
	return inlineShape{p: kp, d: kd / c}, true
}

// oneSign reports whether the code n, of shape s, keeps one sign over
// every key >= 0: its values over the first period all >= 0 and growing,
// or all <= 0 and falling.
func (a *inlineAlgorithm) oneSign(n *inlineNode, s inlineShape, budget *int) bool {
	if *budget -= int(s.p); *budget < 0 {
		return false
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	b := inlineBinding{name: a.column, set: true}
	for x := uint64(0); x < s.p; x++ {
		b.value = inlineVal{i: int64(x)}
		v, err := n.eval(a.expr, b)
		if err != nil || v.str {
			return false
		}
		lo, hi = min(lo, v.i), max(hi, v.i)
	}
	return s.d >= 0 && lo >= 0 || s.d <= 0 && hi <= 0
}

// inlineConstant reports whether n uses no variable.
func inlineConstant(n *inlineNode) bool { return len(n.vars(nil)) == 0 }

// constant evaluates code without a variable to an integer.
func (a *inlineAlgorithm) constant(n *inlineNode) (int64, bool) {
	v, err := n.eval(a.expr, inlineBinding{})
	if err != nil || v.str {
		return 0, false
	}
	return v.i, true
}

func proofGCD(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// proofLCM is the least common multiple of a and b (both > 0); ok is
// false when it exceeds limit.
func proofLCM(a, b, limit uint64) (uint64, bool) {
	return proofMulBounded(a/proofGCD(a, b), b, limit)
}

// proofMulBounded is a·b; ok is false when it exceeds limit.
func proofMulBounded(a, b, limit uint64) (uint64, bool) {
	hi, lo := bits.Mul64(a, b)
	return lo, hi == 0 && lo <= limit
}

func proofMul(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	c := a * b
	return c, c/b == a && !(a == -1 && b == math.MinInt64) && !(b == -1 && a == math.MinInt64)
}

func proofAdd(a, b int64) (int64, bool) {
	c := a + b
	return c, (c > a) == (b > 0)
}
