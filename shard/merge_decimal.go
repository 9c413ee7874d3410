package shard

// Exact arithmetic of the merge: SUM and COUNT add shard results exactly
// (integers with overflow into math/big, decimal text as a scaled big
// integer), and AVG divides with MySQL's rounding. Floats stay floats.

import (
	"database/sql/driver"
	"fmt"
	"math"
	"math/big"
	"strconv"
)

type numKind uint8

const (
	numNone  numKind = iota // no non-NULL input yet
	numInt                  // integer: i, or big when bigOn
	numDec                  // decimal: big / 10^scale
	numFloat                // f
)

// numAcc is an exact running sum of numbers of mixed representation.
// It must not be copied once used (it holds big.Ints).
type numAcc struct {
	kind  numKind
	i     int64
	bigOn bool
	big   big.Int
	scale int
	f     float64
	tmp   big.Int
	pow   big.Int // scratch for powers of ten
	out   []byte  // decimal text of value: valid until reset
}

func (a *numAcc) reset() {
	a.kind, a.i, a.bigOn, a.scale, a.f = numNone, 0, false, 0, 0
	a.big.SetInt64(0)
}

func (a *numAcc) add(v driver.Value) error {
	kind, n, text := valueKind(v)
	switch kind {
	case vkNull:
		return nil
	case vkNum:
		switch n.k {
		case 0:
			a.addInt(n.i)
		case 1:
			if n.u <= math.MaxInt64 {
				a.addInt(int64(n.u))
			} else {
				a.addBig(a.tmp.SetUint64(n.u))
			}
		default:
			a.addFloat(n.f)
		}
		return nil
	case vkText:
		return a.addText(text)
	}
	return fmt.Errorf("%w: %T", ErrMergeValue, v)
}

func (a *numAcc) addInt(x int64) {
	switch a.kind {
	case numNone:
		a.kind, a.i = numInt, x
	case numInt:
		if !a.bigOn {
			s := a.i + x
			if (x >= 0 && s >= a.i) || (x < 0 && s < a.i) {
				a.i = s
				return
			}
		}
		a.addBig(a.tmp.SetInt64(x))
	case numDec:
		a.addBig(a.tmp.SetInt64(x))
	case numFloat:
		a.f += float64(x)
	}
}

// addBig adds the integer x (which it may change).
func (a *numAcc) addBig(x *big.Int) {
	switch a.kind {
	case numNone:
		a.kind, a.bigOn = numInt, true
		a.big.Set(x)
	case numInt:
		if !a.bigOn {
			a.big.SetInt64(a.i)
			a.bigOn = true
		}
		a.big.Add(&a.big, x)
	case numDec:
		a.mulPow10(x, a.scale)
		a.big.Add(&a.big, x)
	case numFloat:
		f, _ := new(big.Float).SetInt(x).Float64()
		a.f += f
	}
}

func (a *numAcc) addFloat(x float64) {
	if a.kind != numFloat {
		a.f = a.float()
		a.kind = numFloat
	}
	a.f += x
}

// addText adds decimal text exactly; other number syntax ("1e5") as a
// float; anything else is an error.
func (a *numAcc) addText(b []byte) error {
	d, ok := parseDecimal(b)
	if !ok || a.kind == numFloat {
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			return fmt.Errorf("%w: %q is not a number", ErrMergeValue, b)
		}
		a.addFloat(f)
		return nil
	}
	switch a.kind {
	case numNone:
		a.big.SetInt64(0)
	case numInt:
		if !a.bigOn {
			a.big.SetInt64(a.i)
		}
	}
	a.kind = numDec
	scale := len(d.frac)
	if scale > a.scale {
		a.mulPow10(&a.big, scale-a.scale)
		a.scale = scale
	}
	d.unscaled(&a.tmp)
	a.mulPow10(&a.tmp, a.scale-scale)
	a.big.Add(&a.big, &a.tmp)
	return nil
}

// mulPow10 multiplies x by 10^n (n >= 0) without allocating for n < 20.
func (a *numAcc) mulPow10(x *big.Int, n int) {
	switch {
	case n <= 0 || x.Sign() == 0:
	case n < 20:
		x.Mul(x, a.pow.SetUint64(pow10Uint(n)))
	default:
		x.Mul(x, bigPow10(n))
	}
}

func pow10Uint(n int) uint64 {
	p := uint64(1)
	for range n {
		p *= 10
	}
	return p
}

// float is the sum as a float64 (0 when empty).
func (a *numAcc) float() float64 {
	switch a.kind {
	case numInt:
		if !a.bigOn {
			return float64(a.i)
		}
		f, _ := new(big.Float).SetInt(&a.big).Float64()
		return f
	case numDec:
		f, _ := new(big.Rat).SetFrac(&a.big, bigPow10(a.scale)).Float64()
		return f
	case numFloat:
		return a.f
	}
	return 0
}

// value is the sum in the representation of its inputs: int64 (uint64,
// decimal text when it overflows), decimal text with the largest input
// scale, or float64; nil when there was no non-NULL input.
func (a *numAcc) value() driver.Value {
	switch a.kind {
	case numInt:
		switch {
		case !a.bigOn:
			return a.i
		case a.big.IsInt64():
			return a.big.Int64()
		case a.big.IsUint64():
			return a.big.Uint64()
		}
		return a.big.Append(nil, 10)
	case numDec:
		a.out = appendScaled(a.out[:0], &a.big, a.scale)
		return a.out
	case numFloat:
		return a.f
	}
	return nil
}

// unscaled returns the exact sum as a new big.Int u and scale s:
// sum = u / 10^s.
func (a *numAcc) unscaled() (*big.Int, int) {
	if a.kind == numInt && !a.bigOn {
		return big.NewInt(a.i), 0
	}
	return new(big.Int).Set(&a.big), a.scale
}

// avgMaxScale is MySQL's largest DECIMAL scale.
const avgMaxScale = 30

// avgIncrement is MySQL's default div_precision_increment.
const avgIncrement = 4

// avgValue is sum/cnt: NULL without input or with a count of 0; float64
// when either is a float; else decimal text with the sum's scale + 4
// digits, rounded half away from zero as MySQL rounds DECIMAL division.
func avgValue(sum, cnt *numAcc) driver.Value {
	if sum.kind == numNone || cnt.kind == numNone {
		return nil
	}
	if sum.kind == numFloat || cnt.kind == numFloat {
		c := cnt.float()
		if c == 0 {
			return nil
		}
		return sum.float() / c
	}
	s, ss := sum.unscaled()
	c, cs := cnt.unscaled()
	if c.Sign() == 0 {
		return nil
	}
	rs := ss + avgIncrement
	if rs > avgMaxScale {
		rs = max(ss, avgMaxScale)
	}
	// avg = (s / 10^ss) / (c / 10^cs); result r / 10^rs with
	// r = round(s * 10^(cs+rs) / (c * 10^ss)).
	n := s.Mul(s, bigPow10(cs+rs))
	d := c.Mul(c, bigPow10(ss))
	neg := (n.Sign() < 0) != (d.Sign() < 0)
	n.Abs(n)
	d.Abs(d)
	q, r := new(big.Int).QuoRem(n, d, new(big.Int))
	if r.Lsh(r, 1).Cmp(d) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if neg {
		q.Neg(q)
	}
	return appendScaled(nil, q, rs)
}

// unscaled sets z to the digits of d as an integer, with d's sign:
// d = z / 10^len(d.frac).
func (d decText) unscaled(z *big.Int) {
	if n := len(d.ip) + len(d.frac); n <= 18 {
		var u uint64
		for _, c := range d.ip {
			u = u*10 + uint64(c-'0')
		}
		for _, c := range d.frac {
			u = u*10 + uint64(c-'0')
		}
		z.SetUint64(u)
	} else {
		digits := make([]byte, 0, n)
		digits = append(append(digits, d.ip...), d.frac...)
		z.SetString(string(digits), 10)
	}
	if d.neg {
		z.Neg(z)
	}
}

// appendScaled appends u / 10^scale as decimal text with exactly scale
// fraction digits, as MySQL sends DECIMAL: "-0.5000", "12.50", "7".
func appendScaled(dst []byte, u *big.Int, scale int) []byte {
	var buf [24]byte
	var digits []byte
	if u.IsInt64() {
		digits = strconv.AppendInt(buf[:0], u.Int64(), 10)
	} else {
		digits = u.Append(nil, 10)
	}
	if digits[0] == '-' {
		dst = append(dst, '-')
		digits = digits[1:]
	}
	if scale <= 0 {
		return append(dst, digits...)
	}
	intLen := len(digits) - scale
	if intLen <= 0 {
		dst = append(dst, '0', '.')
		for ; intLen < 0; intLen++ {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	dst = append(dst, digits[:intLen]...)
	dst = append(dst, '.')
	return append(dst, digits[intLen:]...)
}

// bigPow10 returns 10^n as a new big.Int.
func bigPow10(n int) *big.Int {
	if n < 20 {
		return new(big.Int).SetUint64(pow10Uint(n))
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}
