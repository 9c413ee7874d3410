package shard

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// rangeAlgorithm is BOUNDARY_RANGE and VOLUME_RANGE: integer values fall
// into numbered partitions, and partition p is the target whose name ends
// with p. Partition 0 holds the values below the first boundary, the last
// partition those at or above the last one; each other partition is
// half-open, [lower, upper).
//
// BOUNDARY_RANGE takes its boundaries from sharding-ranges ("10,20,30"
// gives 0: < 10, 1: [10, 20), 2: [20, 30), 3: >= 30); they are sorted,
// as ShardingSphere sorts them, and repeated ones make empty partitions,
// as there. Unlike ShardingSphere, an entry that is not an integer is an
// error rather than skipped, since skipping it renumbers the partitions.
//
// VOLUME_RANGE cuts [range-lower, range-upper) into partitions of
// sharding-volume values (the last one may be shorter): 0 is < lower,
// 1 is [lower, lower+volume), …, and the last is >= upper.
//
// Values beyond the int64 range (uint64, long decimal strings) fall in
// the first or last partition. A range goes to the partitions it
// overlaps; partitions without a target are skipped.
type rangeAlgorithm struct {
	typ    string
	bounds []int64 // BOUNDARY_RANGE: sorted boundaries
	// VOLUME_RANGE: partitions 1..n cut [lower, upper) by volume.
	lower, upper, volume, n int64
}

func newBoundaryRangeAlgorithm(m map[string]string) (Algorithm, error) {
	p := algoProps{typ: "BOUNDARY_RANGE", m: m}
	const key = "sharding-ranges"
	s, err := p.required(key)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(s, ",")
	bounds := make([]int64, 0, len(parts))
	for _, part := range parts {
		part = strings.TrimSpace(part)
		b, err := strconv.ParseInt(part, 10, 64)
		if err != nil {
			return nil, p.errorf(key, s, "entry %q is not an integer", part)
		}
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	return &rangeAlgorithm{typ: p.typ, bounds: bounds}, nil
}

func newVolumeRangeAlgorithm(m map[string]string) (Algorithm, error) {
	p := algoProps{typ: "VOLUME_RANGE", m: m}
	lower, err := p.int64Prop("range-lower", math.MinInt64, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	upper, err := p.int64Prop("range-upper", math.MinInt64, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	volume, err := p.int64Prop("sharding-volume", 1, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	if upper <= lower || uint64(upper)-uint64(lower) < uint64(volume) {
		return nil, p.errorf("sharding-volume", strconv.FormatInt(volume, 10),
			"range-upper - range-lower (%d - %d) must be at least the volume", upper, lower)
	}
	span := uint64(upper) - uint64(lower)
	n := (span-1)/uint64(volume) + 1 // ceil(span / volume)
	if n > math.MaxInt32 {
		return nil, p.errorf("sharding-volume", strconv.FormatInt(volume, 10),
			"makes %d partitions, more than %d", n, math.MaxInt32)
	}
	return &rangeAlgorithm{typ: p.typ, lower: lower, upper: upper, volume: volume, n: int64(n)}, nil
}

func (a *rangeAlgorithm) String() string {
	if a.typ == "VOLUME_RANGE" {
		return "VOLUME_RANGE(range-lower=" + strconv.FormatInt(a.lower, 10) + ", range-upper=" +
			strconv.FormatInt(a.upper, 10) + ", sharding-volume=" + strconv.FormatInt(a.volume, 10) + ")"
	}
	var b strings.Builder
	b.WriteString("BOUNDARY_RANGE(sharding-ranges=")
	for i, x := range a.bounds {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(x, 10))
	}
	b.WriteByte(')')
	return b.String()
}

// partition returns the partition of x.
func (a *rangeAlgorithm) partition(x int64) int64 {
	if a.bounds == nil {
		switch {
		case x < a.lower:
			return 0
		case x >= a.upper:
			return a.n + 1
		}
		return int64((uint64(x)-uint64(a.lower))/uint64(a.volume)) + 1
	}
	// The number of boundaries <= x.
	lo, hi := 0, len(a.bounds)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if a.bounds[mid] <= x {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return int64(lo)
}

func (a *rangeAlgorithm) lastPartition() int64 {
	if a.bounds == nil {
		return a.n + 1
	}
	return int64(len(a.bounds))
}

func (a *rangeAlgorithm) Shard(targets []string, v Value) (string, error) {
	x, _, ok := satInt64Of(v)
	if !ok {
		return "", valueError(a.typ, v, "is not an integer")
	}
	p := a.partition(x)
	if i := numberedTarget(targets, uint64(p)); i >= 0 {
		return targets[i], nil
	} else {
		return "", noTargetError(a.typ, v, strconv.FormatInt(p, 10), i, targets)
	}
}

// ShardRange returns the targets of the partitions r overlaps, in target
// order; none when r is empty.
func (a *rangeAlgorithm) ShardRange(targets []string, r Range) ([]string, error) {
	first, last := int64(0), a.lastPartition()
	var lo, hi int64
	var loExact, hiExact bool
	if r.Lo != nil {
		x, exact, ok := satInt64Of(r.Lo)
		if !ok {
			return nil, valueError(a.typ, r.Lo, "is not an integer")
		}
		if r.LoExclusive && exact && x < math.MaxInt64 {
			x++
		}
		lo, loExact, first = x, exact, a.partition(x)
	}
	if r.Hi != nil {
		x, exact, ok := satInt64Of(r.Hi)
		if !ok {
			return nil, valueError(a.typ, r.Hi, "is not an integer")
		}
		if r.HiExclusive && exact && x > math.MinInt64 {
			x--
		}
		hi, hiExact, last = x, exact, a.partition(x)
	}
	out := make([]string, 0, len(targets))
	if r.Lo != nil && r.Hi != nil && loExact && hiExact && lo > hi {
		return out, nil
	}
	for _, t := range targets {
		if n, ok := trailingNumber(t); ok && n >= uint64(first) && n <= uint64(last) {
			out = append(out, t)
		}
	}
	return out, nil
}
