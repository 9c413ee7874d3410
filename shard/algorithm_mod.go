package shard

import (
	"errors"
	"math"
	"strconv"
)

// modAlgorithm is MOD: an integer value modulo sharding-count picks the
// target whose name ends with the remainder. The remainder is never
// negative (-1 mod 4 is 3), as with ShardingSphere's BigInteger.mod.
//
// start-offset and stop-offset (ShardingSphere 5.3) cut the decimal text
// of the value before it is read as a number: "ORD00042" with
// start-offset=3 is 42. Values of any length are accepted.
type modAlgorithm struct {
	count       uint64
	start, stop int // offsets into the value's text; 0 = whole
}

func newModAlgorithm(m map[string]string) (Algorithm, error) {
	p := algoProps{typ: "MOD", m: m}
	n, err := p.int64Prop("sharding-count", 1, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	start, err := p.optInt64Prop("start-offset", 0, 0, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	stop, err := p.optInt64Prop("stop-offset", 0, 0, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	// Suffix matching reads t_order_3 and t_order_03 alike, so
	// zero-padding needs no behaviour here; it is still checked.
	if _, err := p.optBoolProp("zero-padding", false); err != nil {
		return nil, err
	}
	return &modAlgorithm{count: uint64(n), start: int(start), stop: int(stop)}, nil
}

func (a *modAlgorithm) String() string {
	s := "MOD(sharding-count=" + strconv.FormatUint(a.count, 10)
	if a.start != 0 || a.stop != 0 {
		s += ", start-offset=" + strconv.Itoa(a.start) + ", stop-offset=" + strconv.Itoa(a.stop)
	}
	return s + ")"
}

func (a *modAlgorithm) Shard(targets []string, v Value) (string, error) {
	r, err := a.residue(v)
	if err != nil {
		return "", err
	}
	if i := numberedTarget(targets, r); i >= 0 {
		return targets[i], nil
	} else {
		return "", noTargetError("MOD", v, strconv.FormatUint(r, 10), i, targets)
	}
}

func (a *modAlgorithm) residue(v Value) (uint64, error) {
	if a.start == 0 && a.stop == 0 {
		if r, ok := residue(v, a.count); ok {
			return r, nil
		}
		return 0, valueError("MOD", v, "is not an integer")
	}
	var buf [24]byte
	var text []byte
	switch x := v.(type) {
	case string:
		return cutResidue(a, v, x)
	case []byte:
		text = x
	default:
		neg, mag, _, ok := intParts(v)
		if !ok {
			return 0, valueError("MOD", v, "is not an integer")
		}
		text = buf[:0]
		if neg {
			text = append(text, '-')
		}
		text = strconv.AppendUint(text, mag, 10)
	}
	return cutResidue(a, v, text)
}

// cutResidue cuts start-offset and stop-offset bytes off the text of v
// and returns the remainder of the number left.
func cutResidue[T string | []byte](a *modAlgorithm, v Value, text T) (uint64, error) {
	if a.start > len(text) || a.stop > len(text)-a.start {
		return 0, valueError("MOD", v, "is shorter than start-offset + stop-offset")
	}
	r, ok := decimalResidue(text[a.start:len(text)-a.stop], a.count)
	if !ok {
		return 0, valueError("MOD", v, "is not an integer once cut by start-offset and stop-offset")
	}
	return r, nil
}

// ShardRange narrows a closed integer range shorter than sharding-count
// to the targets of its remainders; an open or longer range, or one on
// cut values (start-offset, stop-offset), goes to every target.
func (a *modAlgorithm) ShardRange(targets []string, r Range) ([]string, error) {
	if a.start != 0 || a.stop != 0 {
		return targets, nil
	}
	lo, hi, empty, all, err := intRange("MOD", r)
	if err != nil || all {
		return targets, err
	}
	if empty {
		return []string{}, nil
	}
	if uint64(hi)-uint64(lo) >= a.count-1 {
		return targets, nil
	}
	// Fewer values than remainders: they cover the remainders from
	// rlo up to rhi, wrapping past count-1 when rhi < rlo.
	rlo, rhi := signedResidue(lo, a.count), signedResidue(hi, a.count)
	out := make([]string, 0, len(targets))
	for _, t := range targets {
		n, ok := trailingNumber(t)
		if ok && n < a.count && (rlo <= rhi && rlo <= n && n <= rhi || rlo > rhi && (n >= rlo || n <= rhi)) {
			out = append(out, t)
		}
	}
	return out, nil
}

// intRange reads the bounds of an integer range, made inclusive. all is
// true when a bound is open or not within the int64 range (the caller
// cannot narrow); empty when no integer lies in the range.
func intRange(algo string, r Range) (lo, hi int64, empty, all bool, err error) {
	lo, loAll, err := intBound(algo, r.Lo, math.MinInt64)
	if err != nil {
		return 0, 0, false, false, err
	}
	hi, hiAll, err := intBound(algo, r.Hi, math.MaxInt64)
	if err != nil {
		return 0, 0, false, false, err
	}
	if loAll || hiAll {
		return lo, hi, false, true, nil
	}
	// Past the int64 extremes lie uint64 values (and long decimal
	// strings): an exclusive bound there cannot be narrowed.
	if r.LoExclusive {
		if lo == math.MaxInt64 {
			return lo, hi, false, true, nil
		}
		lo++
	}
	if r.HiExclusive {
		if hi == math.MinInt64 {
			return lo, hi, false, true, nil
		}
		hi--
	}
	return lo, hi, lo > hi, false, nil
}

// intBound reads one bound of an integer range; open is the int64
// extreme on its side, the bound when v is nil. all is true when the
// bound is open or beyond the int64 range (x saturated then).
func intBound(algo string, v Value, open int64) (x int64, all bool, err error) {
	if v == nil {
		return open, true, nil
	}
	x, exact, ok := satInt64Of(v)
	if !ok {
		return 0, false, valueError(algo, v, "is not an integer")
	}
	return x, !exact, nil
}

// valueError reports a sharding value an algorithm cannot place.
func valueError(algo string, v Value, what string) error {
	return errors.New("rwshard: shard: " + algo + ": value " + describeValue(v) + " " + what)
}
