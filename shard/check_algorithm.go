package shard

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The proof of each built-in algorithm: the targets it can pick, from its
// properties alone.

// proveTargets returns the picks of alg, sharding on column, that do not
// find exactly one of targets (the first proofMaxListed of them) and how
// many there are in all; why says why alg cannot be proved, when it
// cannot.
func proveTargets(alg Algorithm, column string, targets []string) (bad []proofGap, total int, why string) {
	switch a := alg.(type) {
	case *modAlgorithm:
		bad, total = proveNumbered(targets, a.count, nil, func(r uint64) string {
			return column + " mod " + proofItoa(a.count) + " = " + proofItoa(r)
		})
	case *hashModAlgorithm:
		bad, total = proveNumbered(targets, a.count, nil, func(r uint64) string {
			return "xxhash(" + column + ") mod " + proofItoa(a.count) + " = " + proofItoa(r)
		})
	case *javaHashModAlgorithm:
		bad, total = proveNumbered(targets, uint64(a.count), nil, func(r uint64) string {
			return "abs(hashCode(" + column + ")) mod " + proofItoa(uint64(a.count)) + " = " + proofItoa(r)
		})
	case *rangeAlgorithm:
		bad, total = proveNumbered(targets, uint64(a.lastPartition())+1, a.emptyPartitions(), func(p uint64) string {
			return a.describePartition(column, int64(p))
		})
	case *intervalAlgorithm:
		bad, total = a.prove(column, targets)
	case *inlineAlgorithm:
		names, keys, _, ok := a.inlineNames()
		if !ok {
			return nil, 0, "it names a target per value of " + column +
				" (or takes it as a string), so its targets cannot be listed"
		}
		have := make(map[string]bool, len(targets))
		for _, t := range targets {
			have[t] = true
		}
		for i, name := range names {
			if !have[name] {
				if total++; len(bad) < proofMaxListed {
					bad = append(bad, proofGap{want: name, when: a.describeKey(column, keys[i])})
				}
			}
		}
	default:
		return nil, 0, "a custom algorithm: rwshard cannot list what it picks"
	}
	return bad, total, ""
}

// proveNumbered checks an algorithm that picks the target whose name ends
// with a number: every number below n but those of empty must be the
// trailing number of exactly one target. when describes the keys of a
// number. n may be large (MOD's sharding-count goes to 2^31-1): the work
// is bounded by the targets, not by n.
func proveNumbered(targets []string, n uint64, empty []uint64, when func(uint64) string) (bad []proofGap, total int) {
	byNum := map[uint64][]string{}
	for _, t := range targets {
		if m, ok := trailingNumber(t); ok && m < n && !slices.Contains(empty, m) {
			byNum[m] = append(byNum[m], t)
		}
	}
	reachable := n - uint64(len(empty))
	missing := reachable - uint64(len(byNum))
	if missing > math.MaxInt32 {
		missing = math.MaxInt32 // only ever printed as "and N more"
	}
	total = int(missing)
	for m := uint64(0); m < n && len(bad) < proofMaxListed && uint64(len(bad)) < missing; m++ {
		if _, ok := byNum[m]; !ok && !slices.Contains(empty, m) {
			bad = append(bad, proofGap{want: guessTargetName(targets, proofItoa(m)), when: when(m)})
		}
	}
	var several []uint64
	for m, ts := range byNum {
		if len(ts) > 1 {
			several = append(several, m)
		}
	}
	slices.Sort(several)
	for _, m := range several {
		if total++; len(bad) < proofMaxListed {
			bad = append(bad, proofGap{want: guessTargetName(targets, proofItoa(m)), when: when(m), found: byNum[m]})
		}
	}
	return bad, total
}

// emptyPartitions lists the partitions of a range algorithm that no
// value falls in: BOUNDARY_RANGE's between repeated boundaries, and the
// one below a first boundary at the int64 minimum.
func (a *rangeAlgorithm) emptyPartitions() []uint64 {
	var out []uint64
	for i, x := range a.bounds {
		if i == 0 && x == math.MinInt64 || i > 0 && a.bounds[i-1] == x {
			out = append(out, uint64(i))
		}
	}
	if a.bounds == nil && a.lower == math.MinInt64 {
		out = append(out, 0)
	}
	return out
}

// partitionStart is the least value of partition p (the int64 minimum
// for the first).
func (a *rangeAlgorithm) partitionStart(p int64) int64 {
	switch {
	case p == 0:
		return math.MinInt64
	case a.bounds != nil:
		return a.bounds[p-1]
	case p == a.n+1:
		return a.upper
	}
	return a.lower + (p-1)*a.volume
}

// describePartition says which values of column partition p holds.
func (a *rangeAlgorithm) describePartition(column string, p int64) string {
	last := a.lastPartition()
	lo := strconv.FormatInt(a.partitionStart(p), 10)
	switch {
	case p == 0 && last == 0:
		return "every " + column
	case p == 0:
		return column + " < " + strconv.FormatInt(a.partitionStart(1), 10)
	case p == last:
		return column + " >= " + lo
	}
	return lo + " <= " + column + " < " + strconv.FormatInt(a.partitionStart(p+1), 10)
}

// prove checks that the suffix of every step of the interval ends exactly
// one target's name.
func (a *intervalAlgorithm) prove(column string, targets []string) (bad []proofGap, total int) {
	x := newTargetIndex(targets)
	seen := map[string]bool{}
	for k, suffix := range a.suffixes {
		if seen[suffix] {
			continue // every March in t_order_03, say
		}
		seen[suffix] = true
		found := x.suffixed(suffix)
		if len(found) == 1 {
			continue
		}
		if total++; len(bad) < proofMaxListed {
			p := proofGap{want: guessTargetName(targets, suffix), when: a.describeStep(column, k)}
			if len(found) > 1 {
				p.found = found
			}
			bad = append(bad, p)
		}
	}
	return bad, total
}

// describeStep says which values of column step k holds.
func (a *intervalAlgorithm) describeStep(column string, k int) string {
	return string(a.pattern.appendFormat(nil, a.starts[k])) + " <= " + column + " < " +
		string(a.pattern.appendFormat(nil, a.starts[k+1]))
}

// describeKey says which keys give the name of key x.
func (a *inlineAlgorithm) describeKey(column string, x int64) string {
	if a.column == "" {
		return "every " + column
	}
	return column + " = " + strconv.FormatInt(x, 10)
}

// The joint proof: a database and a table strategy on one column, over
// data sources that hold different tables. The keys are cut into classes
// on which both algorithms are constant, and each class is followed to
// its data source, then to its table there.

// maxJointClasses bounds the classes of a joint proof.
const maxJointClasses = 1 << 16

// residueKind says what an algorithm that picks by the key modulo a
// period reduces, and the period: two algorithms of one kind agree on
// which keys share a residue. ok is false for other algorithms.
func residueKind(alg Algorithm) (kind string, period uint64, ok bool) {
	switch a := alg.(type) {
	case *modAlgorithm:
		if a.start != 0 || a.stop != 0 {
			return "cut:" + strconv.Itoa(a.start) + ":" + strconv.Itoa(a.stop), a.count, true
		}
		return "int", a.count, true
	case *hashModAlgorithm:
		return "xxhash:" + a.valueType, a.count, true
	case *javaHashModAlgorithm:
		return "java:" + a.valueType, uint64(a.count), true
	case *inlineAlgorithm:
		_, _, period, ok := a.inlineNames()
		return "int", period, ok
	}
	return "", 0, false
}

// describeResidue says which keys of column have residue r modulo period
// for algorithms of kind.
func describeResidue(kind, column string, period, r uint64) string {
	if strings.HasPrefix(kind, "xxhash:") || strings.HasPrefix(kind, "java:") {
		column = "hash(" + column + ")"
	}
	return column + " mod " + proofItoa(period) + " = " + proofItoa(r)
}

// targetIndex is a list of targets indexed for the joint proof, which
// looks up up to maxJointClasses keys in it.
type targetIndex struct {
	targets []string
	byName  map[string]bool
	byNum   map[uint64][]string         // by trailing number
	byTail  map[int]map[string][]string // by length, then the name's last bytes that hasNameSuffix takes
}

func newTargetIndex(targets []string) *targetIndex {
	x := &targetIndex{targets: targets, byName: map[string]bool{}, byNum: map[uint64][]string{}}
	for _, t := range targets {
		x.byName[t] = true
		if m, ok := trailingNumber(t); ok {
			x.byNum[m] = append(x.byNum[m], t)
		}
	}
	return x
}

// pickResidue returns the targets of x that alg picks for the keys of
// residue r (of its residueKind), and the name it looks for.
func pickResidue(alg Algorithm, x *targetIndex, r uint64) (found []string, want func() string) {
	var n uint64
	switch a := alg.(type) {
	case *modAlgorithm:
		n = a.count
	case *hashModAlgorithm:
		n = a.count
	case *javaHashModAlgorithm:
		n = uint64(a.count)
	case *inlineAlgorithm:
		name, err := a.nameAt(int64(r))
		want = func() string { return name }
		if err == nil && x.byName[name] {
			return []string{name}, want
		}
		return nil, want
	}
	return x.byNum[r%n], func() string { return guessTargetName(x.targets, proofItoa(r%n)) }
}

// suffixed returns the targets of x that end with suffix, as
// suffixedTarget finds them.
func (x *targetIndex) suffixed(suffix string) []string {
	if x.byTail == nil {
		x.byTail = map[int]map[string][]string{}
	}
	byTail, ok := x.byTail[len(suffix)]
	if !ok {
		byTail = map[string][]string{}
		for _, t := range x.targets {
			if len(t) >= len(suffix) && hasNameSuffix(t, t[len(t)-len(suffix):]) {
				byTail[t[len(t)-len(suffix):]] = append(byTail[t[len(t)-len(suffix):]], t)
			}
		}
		x.byTail[len(suffix)] = byTail
	}
	return byTail[suffix]
}

// lineTarget returns the targets of x that a range or interval algorithm
// picks for the key v, and the name it looks for; in is false when v is
// not a key of its domain (outside the interval's steps).
func lineTarget(alg Algorithm, x *targetIndex, v Value) (found []string, want func() string, in bool) {
	switch a := alg.(type) {
	case *rangeAlgorithm:
		n, _, _ := satInt64Of(v)
		p := uint64(a.partition(n))
		return x.byNum[p], func() string { return guessTargetName(x.targets, proofItoa(p)) }, true
	case *intervalAlgorithm:
		t, _, err := a.timeOf(v)
		if err != nil {
			return nil, nil, false
		}
		k := a.step(t)
		if k < 0 || k >= len(a.suffixes) {
			return nil, nil, false
		}
		return x.suffixed(a.suffixes[k]), func() string { return guessTargetName(x.targets, a.suffixes[k]) }, true
	}
	return nil, nil, false
}

// lineStarts returns the least key of every class of an algorithm that
// cuts a line of keys into intervals (ranges of integers, steps of time),
// in order; ok is false for other algorithms or too many classes.
func lineStarts(alg Algorithm) (starts []Value, typ string, ok bool) {
	switch a := alg.(type) {
	case *rangeAlgorithm:
		last := a.lastPartition()
		if last >= maxJointClasses {
			return nil, "", false
		}
		for p := int64(0); p <= last; p++ {
			starts = append(starts, a.partitionStart(p))
		}
		return starts, "int", true
	case *intervalAlgorithm:
		for _, s := range a.starts[:len(a.suffixes)] {
			starts = append(starts, s)
		}
		return starts, "time", true
	}
	return nil, "", false
}

// proveJoint follows every class of keys of t's one sharding column to
// its data source and its table there.
func proveJoint(t *TableRule, l proofLayout) []proofFinding {
	db, tbl := t.DatabaseStrategy, t.TableStrategy
	after := ", after database strategy " + proofStrategyName(db) + ","
	bad := map[string][]proofGap{} // by data source
	total := map[string]int{}
	// add counts a gap and makes it (naming the target costs a pass
	// over the targets) only when it is listed.
	add := func(ds string, gap func() proofGap) {
		if total[ds]++; len(bad[ds]) < proofMaxListed {
			bad[ds] = append(bad[ds], gap())
		}
	}
	dk, dp, dok := residueKind(db.Algorithm)
	tk, tp, tok := residueKind(tbl.Algorithm)
	ds, dt, lok := lineStarts(db.Algorithm)
	ts, tt, ltok := lineStarts(tbl.Algorithm)
	dsIndex := newTargetIndex(l.ds)
	tables := map[string]*targetIndex{}
	for _, d := range l.ds {
		tables[d] = newTargetIndex(l.tables[d])
	}
	switch {
	case dok && tok && dk == tk:
		period, ok := proofLCM(dp, tp, maxJointClasses)
		if !ok {
			return []proofFinding{unprovenFinding(t, "table", tbl, "with database strategy "+proofAlgorithmName(db)+
				" on the same column, more than "+strconv.Itoa(maxJointClasses)+" classes of keys to follow")}
		}
		for r := uint64(0); r < period; r++ {
			found, _ := pickResidue(db.Algorithm, dsIndex, r)
			if len(found) != 1 {
				continue // the database strategy's own problem
			}
			tfound, want := pickResidue(tbl.Algorithm, tables[found[0]], r)
			if len(tfound) != 1 {
				add(found[0], func() proofGap {
					p := proofGap{want: want(), when: describeResidue(dk, db.Column, period, r)}
					if len(tfound) > 1 {
						p.found = tfound
					}
					return p
				})
			}
		}
	case lok && ltok && dt == tt:
		starts := append(slices.Clone(ds), ts...)
		slices.SortFunc(starts, compareLineStarts)
		starts = slices.CompactFunc(starts, func(a, b Value) bool { return compareLineStarts(a, b) == 0 })
		for _, v := range starts {
			found, _, in := lineTarget(db.Algorithm, dsIndex, v)
			if !in || len(found) != 1 {
				continue // the database strategy's own problem, or a key out of its domain
			}
			tfound, want, in := lineTarget(tbl.Algorithm, tables[found[0]], v)
			if !in {
				continue // beyond the table strategy's interval: not a key of its domain
			}
			if len(tfound) != 1 {
				add(found[0], func() proofGap {
					p := proofGap{want: want(), when: db.Column + " = " + describeLineStart(v)}
					if len(tfound) > 1 {
						p.found = tfound
					}
					return p
				})
			}
		}
	default:
		return []proofFinding{unprovenFinding(t, "table", tbl, "with database strategy "+proofAlgorithmName(db)+
			" on the same column, and different tables in each data source, the two cannot be followed together")}
	}
	var out []proofFinding
	for _, d := range l.ds {
		if total[d] > 0 {
			out = append(out, proofFinding{err: proofMissingError(t, "table", tbl, []string{d}, after, bad[d], total[d], l.tables[d])})
		}
	}
	return out
}

func compareLineStarts(a, b Value) int {
	switch x := a.(type) {
	case int64:
		y := b.(int64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case time.Time:
		return x.Compare(b.(time.Time))
	}
	return 0
}

func describeLineStart(v Value) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case time.Time:
		return x.Format("2006-01-02 15:04:05.999999999")
	}
	return describeValue(v)
}
