package shard

// Character values in the merge. Only the shards know their collations, so
// the rewriter sends, next to each character value the merge compares, its
// weight string in the shards' collation, as Vitess does. MySQL's
// WEIGHT_STRING alone is not enough: under a PAD SPACE collation (every
// MariaDB collation but the _nopad_ ones) 'b' and 'b ' are equal and
// 'b\t' sorts before 'b', yet WEIGHT_STRING keeps the trailing space, and
// the weights of an accent- or case-sensitive UCA collation hold several
// levels that bytewise order does not compare as the server does. So each
// weight column (mergePlan.Collated) carries a header that says how the
// collation pads:
//
//	'P' or 'N'   PAD SPACE, or NO PAD
//	n            one byte: the length of the next field
//	T            WEIGHT_STRING of two spaces in the collation
//	W            WEIGHT_STRING(x), trailing space weights removed under PAD SPACE
//
// NULL when x is NULL or not a string (the weight of a number is NULL).
// The header is the same on every row of one collation. T is two copies
// of one space's weight S in a collation with one level of weights;
// anything else (several levels, no weight) is refused. Values then
// compare as the server does: under NO PAD the weights bytewise, under PAD
// SPACE the weights padded with S without end.

import (
	"bytes"
	"cmp"
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"
)

const (
	weightPad   = 'P'
	weightNoPad = 'N'
)

// ordinalType reports ENUM and SET, which MySQL sorts by their position in
// the column's definition, a number the result does not show.
func ordinalType(typeName string) bool {
	t := strings.ToUpper(strings.TrimSpace(typeName))
	return t == "ENUM" || t == "SET"
}

// knownType reports a type name the merge knows how to compare (NULL is
// the type of a column of NULLs).
func knownType(typeName string) bool {
	return classOf(typeName) != classAuto || strings.EqualFold(strings.TrimSpace(typeName), "NULL")
}

// cutWeight cuts a weight column's value into its header and the weight
// string; a value too short for its header is all header.
func cutWeight(v []byte) (header, w []byte) {
	if len(v) < 2 || len(v) < 2+int(v[1]) {
		return v, nil
	}
	return v[:2+int(v[1])], v[2+int(v[1]):]
}

// headerSpace reads a header: the weight of one space (nil under NO PAD);
// ok is false when the merge cannot compare weights of that collation.
func headerSpace(h []byte) (space []byte, ok bool) {
	if len(h) < 2 || (h[0] != weightPad && h[0] != weightNoPad) {
		return nil, false
	}
	n := int(h[1])
	if n < 2 || n%2 != 0 || len(h) != 2+n {
		return nil, false
	}
	t := h[2:]
	if !bytes.Equal(t[:n/2], t[n/2:]) {
		return nil, false // several levels of weights
	}
	if h[0] == weightNoPad {
		return nil, true
	}
	return primitiveRoot(t[:n/2]), true
}

// splitWeight splits a weight column's value into the weight of one space
// (nil under NO PAD) and the weight string; ok is false when the header is
// not one the merge can compare with.
func splitWeight(v []byte) (space, w []byte, ok bool) {
	h, w := cutWeight(v)
	space, ok = headerSpace(h)
	return space, w, ok
}

// primitiveRoot is the shortest s such that s repeated is p repeated.
func primitiveRoot(p []byte) []byte {
	for k := 1; k < len(p); k++ {
		if len(p)%k == 0 && bytes.Equal(p[k:], p[:len(p)-k]) {
			return p[:k]
		}
	}
	return p
}

// trimPad removes the trailing units of space from w: under PAD SPACE, w
// and w+space weigh the same.
func trimPad(w, space []byte) []byte {
	if len(space) == 0 {
		return w
	}
	for bytes.HasSuffix(w, space) {
		w = w[:len(w)-len(space)]
	}
	return w
}

// compareWeights orders two values of a weight column as their collation
// orders the strings they weigh. Values of different collations, which
// weightCheck refuses as rows are read, order by their headers, so that
// the order stays total.
func compareWeights(x, y []byte) int {
	hx, wx := cutWeight(x)
	hy, wy := cutWeight(y)
	if c := bytes.Compare(hx, hy); c != 0 {
		return c
	}
	space, ok := headerSpace(hx)
	if !ok || space == nil {
		return bytes.Compare(wx, wy)
	}
	return comparePadded(wx, wy, space)
}

// comparePadded compares x and y each followed by space repeated without
// end.
func comparePadded(x, y, space []byte) int {
	n := min(len(x), len(y))
	if c := bytes.Compare(x[:n], y[:n]); c != 0 {
		return c
	}
	switch {
	case len(x) > len(y):
		return comparePadTail(x[n:], space)
	case len(x) < len(y):
		return -comparePadTail(y[n:], space)
	}
	return 0
}

// comparePadTail compares rest+space… with space… (both from the same
// position): the rest of the longer weight against the padding of the
// shorter one.
func comparePadTail(rest, space []byte) int {
	k := len(space)
	for i, b := range rest {
		if c := cmp.Compare(b, space[i%k]); c != 0 {
			return c
		}
	}
	// Both go on with spaces, out of step when rest is not whole units.
	r := len(rest)
	for j := range k {
		if c := cmp.Compare(space[j], space[(r+j)%k]); c != 0 {
			return c
		}
	}
	return 0
}

// appendWeightKey appends what identifies v's equivalence class in its
// collation: its header and its weight without trailing spaces.
func appendWeightKey(b, v []byte) []byte {
	h, w := cutWeight(v)
	b = append(b, h...)
	if space, ok := headerSpace(h); ok {
		w = trimPad(w, space)
	}
	return append(b, w...)
}

// weightCheck checks the weight column of one compared column on every
// row: a header the merge can compare with, the same on every row.
type weightCheck struct {
	weight  int
	name    string // the compared column, for the error
	header  []byte // the first non-NULL row's
	untyped bool   // the column's type is unknown: text cannot be compared
}

func (c *weightCheck) check(row []driver.Value) error {
	var v []byte
	switch x := row[c.weight].(type) {
	case nil:
		return nil // NULL, or not text
	case []byte:
		v = x
	case string:
		v = []byte(x)
	default:
		return fmt.Errorf("%w: the weight string of %s is a %T", ErrUnsupported, c.name, x)
	}
	if c.untyped {
		return fmt.Errorf("%w: the shards do not say the type of %s, so the merge cannot tell whether it compares in a collation", ErrUnsupported, c.name)
	}
	if _, _, ok := splitWeight(v); !ok {
		return fmt.Errorf("%w: %s is in a collation whose weight strings rwshard cannot compare (several levels of weights, as an accent- or case-sensitive UCA collation has): compare it on one shard, or through a collation such as utf8mb4_unicode_ci or utf8mb4_bin", ErrUnsupported, c.name)
	}
	h, _ := cutWeight(v)
	if c.header == nil {
		c.header = append([]byte{}, h...)
	} else if !bytes.Equal(c.header, h) {
		return fmt.Errorf("%w: %s has another collation on this shard than on the others", ErrUnsupported, c.name)
	}
	return nil
}

// compared is how the merge compares the values it must compare as text.
type compared struct {
	// weigh maps a character column to its weight column: its ORDER BY
	// keys, GROUP BY entries, DISTINCT comparison and DISTINCT aggregate
	// argument use the weight instead.
	weigh map[int]int
	// checks are the weight columns in use of a Collated plan, checked on
	// every row.
	checks []weightCheck
	// picks are the MIN and MAX columns by index.
	picks map[int]*pick
}

// pick is how a MIN or MAX column chooses its row: by the value, or by its
// weight string; the chosen row gives the columns of keep (the aggregate's
// own first, then its weight and the weights HAVING compares it with).
type pick struct {
	by   int
	keep []int
}

// carry adds a column that the chosen row gives.
func (p *pick) carry(col int) {
	if !slices.Contains(p.keep, col) {
		p.keep = append(p.keep, col)
	}
}

func unsupportedMerge(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnsupported}, args...)...)
}

// collation decides which columns compare through a weight column. A
// Collated plan promises a weight for every value that may be text, so a
// character value without one, or a column whose type the merge cannot
// tell, is refused rather than compared bytewise; so is an ORDER BY on
// ENUM or SET, which MySQL sorts by a position the result does not show.
func (p *mergePlan) collation(cols, types []string, cls []colClass, visible int) (*compared, error) {
	c := &compared{weigh: make(map[int]int, len(p.Weights)), picks: make(map[int]*pick)}
	for _, w := range p.Weights {
		switch {
		case types == nil || !knownType(types[w.Column]):
			if p.Collated {
				// Refused at the first value that is text: its weight
				// is not NULL.
				c.checks = append(c.checks, weightCheck{weight: w.Weight, name: cols[w.Column], untyped: true})
			}
		case isCharType(types[w.Column]):
			c.weigh[w.Column] = w.Weight
			if p.Collated {
				cls[w.Weight] = classWeight
				c.checks = append(c.checks, weightCheck{weight: w.Weight, name: cols[w.Column]})
			}
		}
	}
	if p.Collated && types != nil {
		need := func(col int) error {
			if _, ok := c.weigh[col]; !ok && isCharType(types[col]) {
				return unsupportedMerge("%s is compared as text without its weight string, so not in its collation", cols[col])
			}
			return nil
		}
		var err error
		for _, k := range p.OrderBy {
			if ordinalType(types[k.Index]) {
				return nil, unsupportedMerge("ORDER BY or GROUP BY %s: MySQL sorts %s by its position in the column's definition, which the merge does not see (sort by CAST(… AS CHAR) or …+0)", cols[k.Index], strings.ToUpper(types[k.Index]))
			}
			err = cmp.Or(err, need(k.Index))
		}
		for _, g := range p.GroupBy {
			err = cmp.Or(err, need(g))
		}
		for i := 0; p.Distinct && i < visible; i++ {
			if e := need(i); e != nil {
				// The columns of a '*' have no weight strings.
				err = cmp.Or(err, fmt.Errorf("%w (SELECT DISTINCT: name the columns instead of *)", e))
			}
		}
		for _, a := range p.Aggregates {
			switch {
			case a.Distinct:
				err = cmp.Or(err, need(a.ArgIndex))
			case a.Kind == aggMin || a.Kind == aggMax:
				err = cmp.Or(err, need(a.Index))
			}
		}
		if err != nil {
			return nil, err
		}
	}
	for _, a := range p.Aggregates {
		if a.Kind != aggMin && a.Kind != aggMax {
			continue
		}
		pk := &pick{by: a.Index, keep: []int{a.Index}}
		if w, ok := c.weigh[a.Index]; ok {
			pk.by = w
			pk.keep = append(pk.keep, w)
		}
		c.picks[a.Index] = pk
	}
	return c, nil
}
