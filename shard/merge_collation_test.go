package shard

import (
	"bytes"
	"database/sql/driver"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// padWeight is a weight column's value as a shard with a one-byte PAD
// SPACE collation sends it (latin1_swedish_ci: a space weighs 0x20): the
// header, then w, its trailing spaces trimmed as the shard trims them.
func padWeight(w string) []byte {
	for len(w) > 0 && w[len(w)-1] == ' ' {
		w = w[:len(w)-1]
	}
	return append([]byte{weightPad, 2, ' ', ' '}, w...)
}

// ciWeight is the weight column of s in a case-insensitive PAD SPACE
// collation of one byte per character (nil for NULL).
func ciWeight(s any) driver.Value {
	if s == nil {
		return nil
	}
	return padWeight(strings.ToUpper(s.(string)))
}

// ciRow is a row of text values (nil: NULL) each followed by its weight.
func ciRow(vals ...any) []driver.Value {
	var row []driver.Value
	for _, v := range vals {
		if v == nil {
			row = append(row, nil, nil)
			continue
		}
		row = append(row, []byte(v.(string)), ciWeight(v))
	}
	return row
}

// SELECT MIN(status), MAX(status) over 'Zeta' and 'apple' on two shards
// (the report that started this): the server's collation folds case, so
// MIN is apple and MAX Zeta; bytewise it is the other way round. The
// values come back as the shards spelled them; NULLs are ignored.
func TestMergeCollatedMinMax(t *testing.T) {
	cols := []string{"min(status)", "w_min", "max(status)", "w_max"}
	plan := mergePlan{
		Aggregates: []aggregate{{Kind: aggMin, Index: 0}, {Kind: aggMax, Index: 2}},
		Weights:    []weight{{Column: 0, Weight: 1}, {Column: 2, Weight: 3}},
		Limit:      noLimit, Collated: true,
		ColumnTypes: []string{"VARCHAR", "VARBINARY", "VARCHAR", "VARBINARY"},
	}
	got := mergeAll(t, plan,
		newMergeSrc(cols, ciRow("Zeta", "Zeta")),
		newMergeSrc(cols, ciRow(nil, nil)),
		newMergeSrc(cols, ciRow("apple", "apple")))
	require.Len(t, got, 1)
	assert.Equal(t, "apple", string(got[0][0].([]byte)))
	assert.Equal(t, "Zeta", string(got[0][2].([]byte)))
	assert.Equal(t, padWeight("APPLE"), got[0][1], "the weight comes with the value it weighs")

	// Equal weights: the first row wins, spelled as its shard spelled it.
	got = mergeAll(t, plan, newMergeSrc(cols, ciRow("APPLE", "b")), newMergeSrc(cols, ciRow("apple", "B")))
	assert.Equal(t, "APPLE", string(got[0][0].([]byte)))
	assert.Equal(t, "b", string(got[0][2].([]byte)))

	// Only NULLs: NULL.
	got = mergeAll(t, plan, newMergeSrc(cols, ciRow(nil, nil)))
	assert.Equal(t, []driver.Value{nil, nil, nil, nil}, got[0])
}

// GROUP BY g ORDER BY MAX(name): the groups are sorted in memory by the
// merged MAX's weight, not its bytes.
func TestMergeCollatedOrderByMax(t *testing.T) {
	cols := []string{"g", "max(name)", "w"}
	plan := mergePlan{
		OrderBy: []orderKey{{Index: 1}}, GroupBy: []int{0},
		Aggregates: []aggregate{{Kind: aggMax, Index: 1}},
		Weights:    []weight{{Column: 1, Weight: 2}},
		Limit:      noLimit, Visible: 2, Collated: true,
		ColumnTypes: []string{"INT", "VARCHAR", "VARBINARY"},
	}
	row := func(g int, name string) []driver.Value { return mrow(g, name, ciWeight(name)) }
	got := mergeAll(t, plan,
		newMergeSrc(cols, row(1, "b"), row(2, "Apple"), row(3, "c")),
		newMergeSrc(cols, row(1, "Cherry"), row(2, "a"), row(3, "B")))
	// Group maxima: 1 Cherry, 2 Apple, 3 c.
	assert.Equal(t, mwant([]any{2, "Apple"}, []any{3, "c"}, []any{1, "Cherry"}), mplain(got))
}

// COUNT(DISTINCT status) over 'b' on one shard and 'b ' on another: one
// value under a PAD SPACE collation. The weights come here as MariaDB's
// WEIGHT_STRING gives them, with the space: the merge trims it too.
func TestMergeCollatedCountDistinctPadSpace(t *testing.T) {
	cols := []string{"count(distinct status)", "status", "w"}
	plan := mergePlan{
		Aggregates: []aggregate{{Kind: aggCount, Index: 0, Distinct: true, ArgIndex: 1}},
		Weights:    []weight{{Column: 1, Weight: 2}},
		Limit:      noLimit, Visible: 1, Collated: true,
		ColumnTypes: []string{"BIGINT", "VARCHAR", "VARBINARY"},
	}
	untrimmed := func(s string) []byte { return append([]byte{weightPad, 2, ' ', ' '}, s...) }
	got := mergeAll(t, plan,
		newMergeSrc(cols, mrow(1, "b", untrimmed("B"))),
		newMergeSrc(cols, mrow(1, "b ", untrimmed("B ")), mrow(0, nil, nil)),
		newMergeSrc(cols, mrow(1, "B  ", untrimmed("B  ")), mrow(1, "c", untrimmed("C"))))
	assert.Equal(t, mwant([]any{2}), mplain(got))

	// Under NO PAD 'b' and 'b ' differ.
	nopad := func(s string) []byte { return append([]byte{weightNoPad, 2, ' ', ' '}, s...) }
	got = mergeAll(t, plan,
		newMergeSrc(cols, mrow(1, "b", nopad("B"))),
		newMergeSrc(cols, mrow(1, "b ", nopad("B "))))
	assert.Equal(t, mwant([]any{2}), mplain(got))
}

// PAD SPACE compares as if the shorter value went on with spaces: 'b\t'
// sorts before 'b' (a tab is below a space), 'b~' after; 'b' and 'b '
// are one DISTINCT value.
func TestMergeCollatedPadSpaceOrder(t *testing.T) {
	cols := []string{"name", "w"}
	plan := mergePlan{
		OrderBy: []orderKey{{Index: 0}}, Distinct: true,
		Weights: []weight{{Column: 0, Weight: 1}},
		Limit:   noLimit, Visible: 1, Collated: true,
		ColumnTypes: []string{"VARCHAR", "VARBINARY"},
	}
	row := func(s string) []driver.Value { return mrow(s, ciWeight(s)) }
	got := mergeAll(t, plan,
		newMergeSrc(cols, row("a"), row("b\t"), row("b"), row("b~")),
		newMergeSrc(cols, row("b\t"), row("B "), row("c")))
	assert.Equal(t, mwant([]any{"a"}, []any{"b\t"}, []any{"b"}, []any{"b~"}, []any{"c"}), mplain(got))
}

// HAVING MAX(note) = 'apple' and MIN(note) < ?: the merge compares the
// weights the shards computed in the comparison's collation, taken from
// the row that MAX or MIN picked.
func TestMergeCollatedHaving(t *testing.T) {
	cols := []string{"g", "max(note)", "w_max", "w_max_cmp", "w_const"}
	h := havingExpr{Op: havingCompare, Cmp: "=",
		Left:  havingOperand{Column: 1, Weighted: true, Weight: 3},
		Right: havingOperand{Const: true, Value: []byte("apple"), Weighted: true, Weight: 4}}
	plan := mergePlan{
		OrderBy: []orderKey{{Index: 0}}, GroupBy: []int{0},
		Aggregates: []aggregate{{Kind: aggMax, Index: 1}},
		Weights:    []weight{{Column: 1, Weight: 2}},
		Having:     &h, Limit: noLimit, Visible: 2, Collated: true,
		ColumnTypes: []string{"INT", "VARCHAR", "VARBINARY", "VARBINARY", "VARBINARY"},
	}
	row := func(g int, note string) []driver.Value {
		return mrow(g, note, ciWeight(note), ciWeight(note), ciWeight("apple"))
	}
	got := mergeAll(t, plan,
		newMergeSrc(cols, row(1, "APPLE"), row(2, "apple"), row(3, "Apple ")),
		newMergeSrc(cols, row(1, "Aardvark"), row(2, "banana"), row(3, "a")))
	// Group maxima: 1 APPLE (= apple), 2 banana, 3 "Apple " (= apple).
	assert.Equal(t, mwant([]any{1, "APPLE"}, []any{3, "Apple "}), mplain(got))

	// Without the weights, or against a number, a character column is
	// refused.
	for _, hv := range []havingExpr{
		{Op: havingCompare, Cmp: "=", Left: havingOperand{Column: 1}, Right: havingOperand{Const: true, Value: []byte("apple")}},
		{Op: havingCompare, Cmp: ">", Left: havingOperand{Column: 1, Weighted: true, Weight: 3}, Right: havingOperand{Const: true, Value: int64(0), Weighted: true, Weight: 4}},
		{Op: havingCompare, Cmp: ">", Left: havingOperand{Column: 1, Weighted: true, Weight: 3}, Right: havingOperand{Column: 0, Weighted: true, Weight: 4}},
	} {
		p := plan
		p.Having = &hv
		_, err := merge(p, mergeSources([]*mergeSrc{newMergeSrc(cols)}))
		assert.ErrorIs(t, err, ErrUnsupported, "%+v", hv)
	}
	// Text that is not a number against a number.
	hv := havingCmp(0, "=", "1a")
	p := plan
	p.Having = &hv
	_, err := merge(p, mergeSources([]*mergeSrc{newMergeSrc(cols)}))
	assert.ErrorIs(t, err, ErrUnsupported)
}

// What a Collated plan refuses rather than compare bytewise, each with
// ErrUnsupported and a message naming the column.
func TestMergeCollatedRefusals(t *testing.T) {
	cols := []string{"name", "w"}
	types := []string{"VARCHAR", "VARBINARY"}
	order := mergePlan{OrderBy: []orderKey{{Index: 0}}, Weights: []weight{{Column: 0, Weight: 1}},
		Limit: noLimit, Visible: 1, Collated: true, ColumnTypes: types}
	multiLevel := []byte{weightPad, 6, 0x02, 0x09, 0x00, 0x20, 0x00, 0x02, 0x20, 0x8F} // uca1400_as_cs
	for _, c := range []struct {
		name string
		plan mergePlan
		rows [][]driver.Value
		has  string
	}{
		{"several levels of weights", order, [][]driver.Value{mrow("b", multiLevel)}, "several levels"},
		{"another collation on another shard", order, [][]driver.Value{mrow("a", ciWeight("a")), mrow("b", append([]byte{weightNoPad, 2, ' ', ' '}, 'B'))}, "another collation"},
		{"type unknown and text", func() mergePlan { p := order; p.ColumnTypes = nil; return p }(), [][]driver.Value{mrow("a", ciWeight("a"))}, "type of name"},
		{"text without a weight", func() mergePlan { p := order; p.Weights = nil; return p }(), nil, "name is compared as text without its weight"},
		{"ORDER BY an ENUM", func() mergePlan { p := order; p.ColumnTypes = []string{"ENUM", "VARBINARY"}; return p }(), nil, "ENUM"},
		{"MIN without a weight", mergePlan{Aggregates: []aggregate{{Kind: aggMin, Index: 0}}, Limit: noLimit, Collated: true, ColumnTypes: types}, nil, "name is compared as text"},
		{"DISTINCT over *", mergePlan{Distinct: true, Limit: noLimit, Collated: true, ColumnTypes: types}, nil, "instead of *"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var srcs []rowSource
			for _, r := range c.rows {
				srcs = append(srcs, newMergeSrc(cols, r))
			}
			if srcs == nil {
				srcs = []rowSource{newMergeSrc(cols)}
			}
			m, err := merge(c.plan, srcs)
			if err == nil {
				_, err = mergeDrain(t, m)
			}
			require.ErrorIs(t, err, ErrUnsupported)
			assert.Contains(t, err.Error(), c.has)
		})
	}

	// Numbers (NULL weights) of unknown type merge as before.
	p := order
	p.ColumnTypes = nil
	got := mergeAll(t, p, newMergeSrc(cols, mrow(10, nil)), newMergeSrc(cols, mrow(9, nil)))
	assert.Equal(t, mwant([]any{9}, []any{10}), mplain(got))
}

// comparePadded against the definition: the weights padded with spaces to
// a length beyond both, compared bytewise; equal exactly when their keys
// are; a total order.
func TestMergeWeightsPadded(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	spaces := [][]byte{{0x20}, {0x00, 0x20}, {0x02, 0x09}, {0x00, 0x00, 0x20}}
	alphabet := []byte{0x00, 0x02, 0x09, 0x20, 0x41, 0xFF}
	gen := func(space []byte) []byte {
		units := r.IntN(5)
		var w []byte
		for range units {
			if r.IntN(3) == 0 {
				w = append(w, space...)
				continue
			}
			for range len(space) {
				w = append(w, alphabet[r.IntN(len(alphabet))])
			}
		}
		return w
	}
	padTo := func(w, space []byte, n int) []byte {
		out := slices.Clone(w)
		for i := 0; len(out) < n; i++ {
			out = append(out, space[i%len(space)])
		}
		return out
	}
	for range 20000 {
		space := spaces[r.IntN(len(spaces))]
		head := append([]byte{weightPad, byte(2 * len(space))}, append(slices.Clone(space), space...)...)
		x, y, z := gen(space), gen(space), gen(space)
		vx, vy, vz := append(slices.Clone(head), x...), append(slices.Clone(head), y...), append(slices.Clone(head), z...)
		n := max(len(x), len(y)) + 2*len(space)
		want := bytes.Compare(padTo(x, space, n), padTo(y, space, n))
		got := compareWeights(vx, vy)
		require.Equal(t, want, got, "%x vs %x (space %x)", x, y, space)
		require.Equal(t, -got, compareWeights(vy, vx))
		require.Equal(t, got == 0, bytes.Equal(appendWeightKey(nil, vx), appendWeightKey(nil, vy)), "%x vs %x", x, y)
		if got <= 0 && compareWeights(vy, vz) <= 0 {
			require.LessOrEqual(t, compareWeights(vx, vz), 0, "%x <= %x <= %x", x, y, z)
		}
	}
}

func TestMergeWeightHeader(t *testing.T) {
	for _, c := range []struct {
		v     []byte
		space []byte
		ok    bool
	}{
		{padWeight("AB"), []byte(" "), true},
		{[]byte{weightPad, 4, 0, 0x20, 0, 0x20, 0, 0x42}, []byte{0, 0x20}, true}, // utf8mb4_general_ci
		{[]byte{weightNoPad, 6, 0, 0, 0x20, 0, 0, 0x20}, nil, true},              // utf8mb4_nopad_bin, ''
		{[]byte{weightPad, 4, 0x20, 0x20, 0x20, 0x20}, []byte{0x20}, true},       // a period shorter than the unit
		{[]byte{weightPad, 6, 2, 9, 0, 0x20, 0, 2}, nil, false},                  // several levels
		{[]byte{weightPad, 0}, nil, false},
		{[]byte{weightPad, 4, 0}, nil, false},
		{[]byte{'X', 2, 0x20, 0x20}, nil, false},
		{nil, nil, false},
	} {
		space, _, ok := splitWeight(c.v)
		assert.Equal(t, c.ok, ok, "%x", c.v)
		if ok {
			assert.Equal(t, c.space, space, "%x", c.v)
		}
	}
}

// FuzzMergeWeights: no panic on any weight column value, antisymmetry,
// equality agreeing with the GROUP BY / DISTINCT key, transitivity.
func FuzzMergeWeights(f *testing.F) {
	f.Add(padWeight("B"), padWeight("B\t"), append(padWeight("B"), ' '))
	f.Add([]byte{weightPad, 4, 0, 0x20, 0, 0x20, 0, 0x42}, []byte{weightPad, 4, 0, 0x20, 0, 0x20, 0}, []byte{})
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		ab, ba := compareValues(a, b, classWeight), compareValues(b, a, classWeight)
		if ab != -ba {
			t.Fatalf("compare(%x, %x) = %d but reversed %d", a, b, ab, ba)
		}
		ka, kb := appendKey(nil, a, classWeight), appendKey(nil, b, classWeight)
		if (ab == 0) != bytes.Equal(ka, kb) {
			t.Fatalf("compare(%x, %x) = %d but keys %x %x", a, b, ab, ka, kb)
		}
		bc, ac := compareValues(b, c, classWeight), compareValues(a, c, classWeight)
		if ab <= 0 && bc <= 0 && ac > 0 {
			t.Fatalf("not transitive: %x <= %x <= %x but %x > %x", a, b, c, a, c)
		}
	})
}
