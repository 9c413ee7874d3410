package shard

import (
	"database/sql/driver"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompareValues(t *testing.T) {
	t0 := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	b := func(s string) []byte { return []byte(s) }
	tests := []struct {
		name string
		a, b driver.Value
		cls  colClass
		want int
	}{
		{"null null", nil, nil, classAuto, 0},
		{"null first", nil, int64(math.MinInt64), classAuto, -1},
		{"null before empty text", nil, b(""), classText, -1},
		{"value after null", b("a"), nil, classText, 1},
		{"int64", int64(-3), int64(2), classNumeric, -1},
		{"uint64 above MaxInt64 vs int64 max", uint64(math.MaxInt64) + 1, int64(math.MaxInt64), classNumeric, 1},
		{"uint64 max vs uint64", uint64(math.MaxUint64), uint64(math.MaxUint64 - 1), classNumeric, 1},
		{"negative int64 vs uint64", int64(-1), uint64(0), classNumeric, -1},
		{"int64 equals uint64", int64(7), uint64(7), classNumeric, 0},
		{"int64 vs float exact above 2^53", int64(1<<53 + 1), float64(1 << 53), classNumeric, 1},
		{"int64 vs float fraction", int64(2), 2.5, classNumeric, -1},
		{"int64 vs negative float fraction", int64(-2), -2.5, classNumeric, 1},
		{"int64 equals float", int64(3), 3.0, classNumeric, 0},
		{"int64 max vs float 2^63", int64(math.MaxInt64), float2p63, classNumeric, -1},
		{"uint64 max vs float 2^64", uint64(math.MaxUint64), float2p64, classNumeric, -1},
		{"uint64 2^63 equals float 2^63", uint64(1 << 63), float2p63, classNumeric, 0},
		{"float32 vs float64", float32(0.5), 0.25, classNumeric, 1},
		{"NaN below numbers", math.NaN(), math.Inf(-1), classNumeric, -1},
		{"bool as number", true, int64(1), classNumeric, 0},
		{"decimal text numeric", b("9.50"), b("10.00"), classNumeric, -1},
		{"decimal text trailing zeros", b("12.50"), b("12.5"), classNumeric, 0},
		{"decimal text negative", b("-1.5"), b("-1.25"), classNumeric, -1},
		{"decimal text negative zero", b("-0.00"), b("0"), classNumeric, 0},
		{"decimal text leading zeros", b("007.5"), b("7.50"), classNumeric, 0},
		{"decimal text small fraction", b("0.05"), b("0.5"), classNumeric, -1},
		{"decimal text vs int64", b("3.01"), int64(3), classNumeric, 1},
		{"int64 vs decimal text", int64(-4), b("-3.99"), classNumeric, -1},
		{"uint64 vs decimal text", uint64(math.MaxUint64), b("18446744073709551616"), classNumeric, -1},
		{"big decimal texts", b("123456789012345678901234.56"), b("123456789012345678901234.5"), classNumeric, 1},
		{"decimal text vs float", b("0.1"), 0.1, classNumeric, 0},
		{"float syntax in numeric column", b("1e3"), b("999.5"), classNumeric, 1},
		{"numeric-looking text in text column is bytewise", b("10"), b("9"), classText, -1},
		{"text bytewise case", b("B"), b("a"), classText, -1},
		{"text prefix", b("ab"), b("abc"), classText, -1},
		{"string vs []byte", "abc", b("abd"), classText, -1},
		{"auto: numbers numerically", b("10"), b("9"), classAuto, 1},
		{"auto: numbers before other text", b("10"), b("1a"), classAuto, -1},
		{"auto: other text bytewise", b("b"), b("a"), classAuto, 1},
		{"auto: int64 vs non-numeric text", int64(5), b("x"), classAuto, -1},
		{"text column: number before text", int64(5), b("1"), classText, -1},
		{"time", t0, t0.Add(time.Microsecond), classText, -1},
		{"time equal across zones", t0, t0.In(time.FixedZone("x", 3600)), classText, 0},
		{"TIME negative", b("-01:00:00"), b("00:00:00"), classTime, -1},
		{"TIME past 99 hours", b("100:00:00"), b("99:59:59"), classTime, 1},
		{"TIME fraction", b("00:00:01.5"), b("00:00:01.25"), classTime, 1},
		{"number before time", int64(1), t0, classAuto, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, compareValues(tt.a, tt.b, tt.cls))
			assert.Equal(t, -tt.want, compareValues(tt.b, tt.a, tt.cls), "antisymmetric")
			// Equality and the GROUP BY/DISTINCT key agree (float against
			// decimal text excepted, as documented).
			_, isFloat := tt.a.(float64)
			_, isFloat2 := tt.b.(float64)
			if !isFloat && !isFloat2 {
				ka := string(appendKey(nil, tt.a, tt.cls))
				kb := string(appendKey(nil, tt.b, tt.cls))
				assert.Equal(t, tt.want == 0, ka == kb, "keys %q %q", ka, kb)
			}
		})
	}
}

func TestClassOf(t *testing.T) {
	for name, want := range map[string]colClass{
		"DECIMAL": classNumeric, "UNSIGNED BIGINT": classNumeric, "double": classNumeric,
		"VARCHAR": classText, "VARBINARY": classText, "DATETIME": classText, "ENUM": classText,
		"TIME": classTime, "": classAuto, "NULL": classAuto, "decimal(10,2)": classNumeric,
	} {
		assert.Equal(t, want, classOf(name), name)
	}
}

var mergeCols3 = []string{"a", "b", "c"}

func TestMergeOrderBy(t *testing.T) {
	big := uint64(math.MaxInt64) + 10
	tests := []struct {
		name string
		plan mergePlan
		srcs [][][]driver.Value
		want [][]any
	}{
		{
			name: "asc across sources, ties by source order",
			plan: mergePlan{OrderBy: []orderKey{{Index: 0}}, Limit: noLimit},
			srcs: [][][]driver.Value{
				{mrow(1, "x", 0), mrow(3, "x", 0), mrow(5, "x", 0)},
				{mrow(2, "y", 1), mrow(3, "y", 1), mrow(6, "y", 1)},
				{mrow(0, "z", 2)},
			},
			want: mwant([]any{0, "z", 2}, []any{1, "x", 0}, []any{2, "y", 1}, []any{3, "x", 0}, []any{3, "y", 1}, []any{5, "x", 0}, []any{6, "y", 1}),
		},
		{
			name: "NULL first ascending",
			plan: mergePlan{OrderBy: []orderKey{{Index: 0}}, Limit: noLimit},
			srcs: [][][]driver.Value{
				{mrow(nil, "a", 0), mrow(2, "b", 0)},
				{mrow(nil, "c", 1), mrow(1, "d", 1)},
			},
			want: mwant([]any{nil, "a", 0}, []any{nil, "c", 1}, []any{1, "d", 1}, []any{2, "b", 0}),
		},
		{
			name: "NULL last descending",
			plan: mergePlan{OrderBy: []orderKey{{Index: 0, Desc: true}}, Limit: noLimit},
			srcs: [][][]driver.Value{
				{mrow(2, "b", 0), mrow(nil, "a", 0)},
				{mrow(1, "d", 1), mrow(nil, "c", 1)},
			},
			want: mwant([]any{2, "b", 0}, []any{1, "d", 1}, []any{nil, "a", 0}, []any{nil, "c", 1}),
		},
		{
			name: "mixed directions",
			plan: mergePlan{OrderBy: []orderKey{{Index: 1}, {Index: 0, Desc: true}}, Limit: noLimit},
			srcs: [][][]driver.Value{
				{mrow(5, "a", 0), mrow(1, "a", 0), mrow(9, "b", 0)},
				{mrow(2, nil, 1), mrow(7, "a", 1), mrow(nil, "a", 1), mrow(8, "b", 1)},
			},
			// b ascending with NULL first, then a descending with NULL last.
			want: mwant([]any{2, nil, 1}, []any{7, "a", 1}, []any{5, "a", 0}, []any{1, "a", 0}, []any{nil, "a", 1}, []any{9, "b", 0}, []any{8, "b", 1}),
		},
		{
			name: "uint64 beyond MaxInt64 with int64",
			plan: mergePlan{OrderBy: []orderKey{{Index: 0}}, Limit: noLimit},
			srcs: [][][]driver.Value{
				{mrow(int64(-5), "", 0), mrow(big, "", 0)},
				{mrow(int64(math.MaxInt64), "", 1), mrow(uint64(math.MaxUint64), "", 1)},
			},
			want: mwant([]any{-5, "", 0}, []any{int64(math.MaxInt64), "", 1}, []any{big, "", 0}, []any{uint64(math.MaxUint64), "", 1}),
		},
		{
			name: "decimal text compares as numbers",
			plan: mergePlan{OrderBy: []orderKey{{Index: 0, Desc: true}}, Limit: noLimit, ColumnTypes: []string{"DECIMAL", "VARCHAR", "INT"}},
			srcs: [][][]driver.Value{
				{mrow("100.00", "a", 0), mrow("9.50", "b", 0), mrow("-1.00", "c", 0)},
				{mrow("12.50", "d", 1), mrow("0.05", "e", 1)},
			},
			want: mwant([]any{"100.00", "a", 0}, []any{"12.50", "d", 1}, []any{"9.50", "b", 0}, []any{"0.05", "e", 1}, []any{"-1.00", "c", 0}),
		},
		{
			name: "text column bytewise",
			plan: mergePlan{OrderBy: []orderKey{{Index: 1}}, Limit: noLimit, ColumnTypes: []string{"INT", "VARCHAR", "INT"}},
			srcs: [][][]driver.Value{
				{mrow(1, "10", 0), mrow(2, "a", 0)},
				{mrow(3, "9", 1), mrow(4, "B", 1)},
			},
			want: mwant([]any{1, "10", 0}, []any{3, "9", 1}, []any{4, "B", 1}, []any{2, "a", 0}),
		},
		{
			name: "empty sources",
			plan: mergePlan{OrderBy: []orderKey{{Index: 0}}, Limit: noLimit},
			srcs: [][][]driver.Value{nil, {mrow(1, "a", 1)}, nil},
			want: mwant([]any{1, "a", 1}),
		},
		{
			name: "all sources empty",
			plan: mergePlan{OrderBy: []orderKey{{Index: 0}}, Limit: noLimit},
			srcs: [][][]driver.Value{nil, nil},
			want: nil,
		},
		{
			name: "single source",
			plan: mergePlan{OrderBy: []orderKey{{Index: 0}}, Limit: noLimit},
			srcs: [][][]driver.Value{{mrow(1, "a", 0), mrow(2, "b", 0)}},
			want: mwant([]any{1, "a", 0}, []any{2, "b", 0}),
		},
		{
			name: "offset and limit",
			plan: mergePlan{OrderBy: []orderKey{{Index: 0}}, Offset: 2, Limit: 2},
			srcs: [][][]driver.Value{{mrow(1, "", 0), mrow(3, "", 0), mrow(5, "", 0)}, {mrow(2, "", 1), mrow(4, "", 1)}},
			want: mwant([]any{3, "", 0}, []any{4, "", 1}),
		},
		{
			name: "limit beyond end",
			plan: mergePlan{OrderBy: []orderKey{{Index: 0}}, Offset: 1, Limit: 100},
			srcs: [][][]driver.Value{{mrow(1, "", 0)}, {mrow(2, "", 1)}},
			want: mwant([]any{2, "", 1}),
		},
		{
			name: "offset beyond end",
			plan: mergePlan{OrderBy: []orderKey{{Index: 0}}, Offset: 5, Limit: 2},
			srcs: [][][]driver.Value{{mrow(1, "", 0)}, {mrow(2, "", 1)}},
			want: nil,
		},
		{
			name: "limit 0",
			plan: mergePlan{OrderBy: []orderKey{{Index: 0}}, Limit: 0},
			srcs: [][][]driver.Value{{mrow(1, "", 0)}},
			want: nil,
		},
		{
			name: "no order: sources in turn",
			plan: mergePlan{Limit: noLimit},
			srcs: [][][]driver.Value{{mrow(3, "", 0), mrow(1, "", 0)}, nil, {mrow(2, "", 2)}},
			want: mwant([]any{3, "", 0}, []any{1, "", 0}, []any{2, "", 2}),
		},
		{
			name: "no order with offset and limit",
			plan: mergePlan{Offset: 1, Limit: 2},
			srcs: [][][]driver.Value{{mrow(3, "", 0)}, {mrow(1, "", 1), mrow(2, "", 1), mrow(9, "", 1)}},
			want: mwant([]any{1, "", 1}, []any{2, "", 1}),
		},
		{
			name: "visible drops a hidden ORDER BY column",
			plan: mergePlan{OrderBy: []orderKey{{Index: 2, Desc: true}}, Limit: noLimit, Visible: 2},
			srcs: [][][]driver.Value{{mrow(1, "a", 9), mrow(2, "b", 1)}, {mrow(3, "c", 5)}},
			want: mwant([]any{1, "a"}, []any{3, "c"}, []any{2, "b"}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, reuse := range []bool{false, true} {
				srcs := make([]*mergeSrc, len(tt.srcs))
				for i, rows := range tt.srcs {
					srcs[i] = newMergeSrc(mergeCols3, rows...)
					srcs[i].reuse = reuse
				}
				got := mergeAll(t, tt.plan, srcs...)
				assert.Equal(t, tt.want, mplain(got), "reuse=%v", reuse)
			}
		})
	}
}

func TestMergeColumnsAndTypes(t *testing.T) {
	s0 := typedMergeSrc{newMergeSrc(mergeCols3, mrow("10", 1, 0), mrow("9", 2, 0)), []string{"VARCHAR", "INT", "INT"}}
	s1 := typedMergeSrc{newMergeSrc(mergeCols3, mrow("1", 3, 1)), []string{"VARCHAR", "INT", "INT"}}
	m, err := merge(mergePlan{OrderBy: []orderKey{{Index: 0}}, Limit: noLimit, Visible: 2}, []rowSource{s0, s1})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, m.Columns())
	tn, ok := m.(driver.RowsColumnTypeDatabaseTypeName)
	require.True(t, ok)
	assert.Equal(t, "VARCHAR", tn.ColumnTypeDatabaseTypeName(0))
	assert.Equal(t, "", tn.ColumnTypeDatabaseTypeName(2))
	rows, err := mergeDrain(t, m)
	require.NoError(t, err)
	// The type names from the source make VARCHAR compare bytewise.
	assert.Equal(t, mwant([]any{"1", 3}, []any{"10", 1}, []any{"9", 2}), mplain(rows))
}

func TestMergeAggregatesGlobal(t *testing.T) {
	cols := []string{"cnt", "sum_i", "sum_d", "min_s", "max_t", "avg_d", "sum_f", "avg_d_sum", "avg_d_cnt"}
	types := []string{"BIGINT", "DECIMAL", "DECIMAL", "VARCHAR", "DATETIME", "DECIMAL", "DOUBLE", "DECIMAL", "BIGINT"}
	plan := mergePlan{
		Aggregates: []aggregate{
			{Kind: aggCount, Index: 0}, {Kind: aggSum, Index: 1}, {Kind: aggSum, Index: 2},
			{Kind: aggMin, Index: 3}, {Kind: aggMax, Index: 4},
			{Kind: aggAvg, Index: 5, SumIndex: 7, CountIndex: 8}, {Kind: aggSum, Index: 6},
		},
		Limit: noLimit, Visible: 7, ColumnTypes: types,
	}
	t1 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	got := mergeAll(t, plan,
		newMergeSrc(cols, mrow(2, "5", "0.10", "b", t1, "0.150000", 0.5, "0.30", 2)),
		newMergeSrc(cols, mrow(0, nil, nil, nil, nil, nil, nil, nil, 0)), // an empty shard
		newMergeSrc(cols, mrow(1, "-2", "0.20", "B", t2, "0.200000", 0.25, "0.20", 1)),
	)
	// AVG = (0.30+0.20)/(2+1) = 0.1666666… → scale 2+4, half away from zero.
	assert.Equal(t, mwant([]any{3, "3", "0.30", "B", t2.Format(time.RFC3339Nano), "0.166667", 0.75}), mplain(got))
}

func TestMergeAggregatesEdgeCases(t *testing.T) {
	cols := []string{"cnt", "s", "avg", "as", "ac"}
	plan := mergePlan{
		Aggregates: []aggregate{{Kind: aggCount, Index: 0}, {Kind: aggSum, Index: 1}, {Kind: aggAvg, Index: 2, SumIndex: 3, CountIndex: 4}},
		Limit:      noLimit, Visible: 3,
	}
	t.Run("no rows at all", func(t *testing.T) {
		got := mergeAll(t, plan, newMergeSrc(cols), newMergeSrc(cols))
		assert.Equal(t, mwant([]any{0, nil, nil}), mplain(got))
	})
	t.Run("every SUM NULL", func(t *testing.T) {
		got := mergeAll(t, plan, newMergeSrc(cols, mrow(0, nil, nil, nil, 0)), newMergeSrc(cols, mrow(0, nil, nil, nil, 0)))
		assert.Equal(t, mwant([]any{0, nil, nil}), mplain(got))
	})
	t.Run("exact decimal sums", func(t *testing.T) {
		got := mergeAll(t, plan, newMergeSrc(cols, mrow(1, "0.1", nil, "0.1", 1)), newMergeSrc(cols, mrow(1, "0.2", nil, "0.2", 1)))
		assert.Equal(t, mwant([]any{2, "0.3", "0.15000"}), mplain(got))
	})
	t.Run("scales align", func(t *testing.T) {
		got := mergeAll(t, plan, newMergeSrc(cols, mrow(1, "1.5", nil, "7", 2)), newMergeSrc(cols, mrow(1, "-0.125", nil, "0", 1)))
		assert.Equal(t, mwant([]any{2, "1.375", "2.3333"}), mplain(got))
	})
	t.Run("AVG rounds half away from zero", func(t *testing.T) {
		// 1/8 = 0.125 → scale 0+4 "0.1250"; 0.00005 needs the rounding:
		// 1/20000 = 0.00005 → "0.0001", and negative → "-0.0001".
		got := mergeAll(t, plan, newMergeSrc(cols, mrow(0, nil, nil, "1", 10000)), newMergeSrc(cols, mrow(0, nil, nil, "0", 10000)))
		assert.Equal(t, mwant([]any{0, nil, "0.0001"}), mplain(got))
		got = mergeAll(t, plan, newMergeSrc(cols, mrow(0, nil, nil, "-1", 20000)))
		assert.Equal(t, mwant([]any{0, nil, "-0.0001"}), mplain(got))
		got = mergeAll(t, plan, newMergeSrc(cols, mrow(0, nil, nil, "-1", 30000)))
		assert.Equal(t, mwant([]any{0, nil, "0.0000"}), mplain(got), "no negative zero")
	})
	t.Run("AVG of floats is float64", func(t *testing.T) {
		got := mergeAll(t, plan, newMergeSrc(cols, mrow(0, nil, nil, 1.5, 1)), newMergeSrc(cols, mrow(0, nil, nil, 2.0, 2)))
		assert.Equal(t, mwant([]any{0, nil, 3.5 / 3}), mplain(got))
	})
	t.Run("AVG with count 0 is NULL", func(t *testing.T) {
		got := mergeAll(t, plan, newMergeSrc(cols, mrow(0, nil, nil, "0", 0)))
		assert.Equal(t, mwant([]any{0, nil, nil}), mplain(got))
	})
	t.Run("int64 sums overflow into uint64 and decimal text", func(t *testing.T) {
		got := mergeAll(t, plan, newMergeSrc(cols, mrow(int64(math.MaxInt64), int64(math.MaxInt64), nil, nil, 0)), newMergeSrc(cols, mrow(1, int64(math.MaxInt64), nil, nil, 0)))
		assert.Equal(t, mwant([]any{uint64(math.MaxInt64) + 1, uint64(math.MaxInt64) * 2, nil}), mplain(got))
		got = mergeAll(t, plan, newMergeSrc(cols, mrow(0, uint64(math.MaxUint64), nil, nil, 0)), newMergeSrc(cols, mrow(0, uint64(math.MaxUint64), nil, nil, 0)))
		assert.Equal(t, mwant([]any{0, "36893488147419103230", nil}), mplain(got))
		got = mergeAll(t, plan, newMergeSrc(cols, mrow(0, int64(math.MinInt64), nil, nil, 0)), newMergeSrc(cols, mrow(0, int64(-1), nil, nil, 0)))
		assert.Equal(t, mwant([]any{0, "-9223372036854775809", nil}), mplain(got))
	})
	t.Run("big decimals", func(t *testing.T) {
		got := mergeAll(t, plan,
			newMergeSrc(cols, mrow(0, "99999999999999999999999999.99", nil, "99999999999999999999999999.99", 1)),
			newMergeSrc(cols, mrow(0, "0.01", nil, "0.01", 1)))
		assert.Equal(t, mwant([]any{0, "100000000000000000000000000.00", "50000000000000000000000000.000000"}), mplain(got))
	})
	t.Run("offset skips the one row", func(t *testing.T) {
		p := plan
		p.Offset = 1
		got := mergeAll(t, p, newMergeSrc(cols, mrow(1, nil, nil, nil, 0)))
		assert.Empty(t, got)
	})
	t.Run("non-numeric SUM input names the source", func(t *testing.T) {
		m, err := merge(plan, []rowSource{newMergeSrc(cols, mrow(1, "1", nil, nil, 0)), newMergeSrc(cols, mrow(1, "abc", nil, nil, 0))})
		require.NoError(t, err)
		_, err = mergeDrain(t, m)
		var se *SourceError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, 1, se.Source)
		assert.ErrorIs(t, err, ErrMergeValue)
		assert.Contains(t, err.Error(), "rwshard: merge: source 1: column 1 (SUM)")
	})
}

func TestMergeGroupByStreaming(t *testing.T) {
	cols := []string{"g", "cnt", "sum", "min", "max"}
	plan := mergePlan{
		OrderBy:     []orderKey{{Index: 0, Desc: true}},
		GroupBy:     []int{0},
		Aggregates:  []aggregate{{Kind: aggCount, Index: 1}, {Kind: aggSum, Index: 2}, {Kind: aggMin, Index: 3}, {Kind: aggMax, Index: 4}},
		Limit:       noLimit,
		ColumnTypes: []string{"VARCHAR", "BIGINT", "DECIMAL", "VARCHAR", "INT"},
	}
	mk := func() []*mergeSrc {
		s := []*mergeSrc{
			newMergeSrc(cols, mrow("c", 2, "3", "x", 7), mrow("a", 1, "1", "q", 1), mrow(nil, 4, nil, nil, nil)),
			newMergeSrc(cols, mrow("b", 5, "10", "k", 3), mrow("a", 2, "2", "p", 9)),
			newMergeSrc(cols),
			newMergeSrc(cols, mrow("c", 1, "-1", "y", 2), mrow(nil, 1, "5", "z", 0)),
		}
		for _, x := range s {
			x.reuse = true
		}
		return s
	}
	got := mergeAll(t, plan, mk()...)
	assert.Equal(t, mwant(
		[]any{"c", 3, "2", "x", 7},
		[]any{"b", 5, "10", "k", 3},
		[]any{"a", 3, "3", "p", 9},
		[]any{nil, 5, "5", "z", 0},
	), mplain(got))

	// Streaming: LIMIT 1 stops after the second group starts; nothing is
	// read past it.
	p2 := plan
	p2.Limit = 1
	srcs := mk()
	got = mergeAll(t, p2, srcs...)
	assert.Equal(t, mwant([]any{"c", 3, "2", "x", 7}), mplain(got))
	assert.Equal(t, []int{2, 1, 1, 2}, []int{srcs[0].nexts, srcs[1].nexts, srcs[2].nexts, srcs[3].nexts})
}

func TestMergeGroupByInMemory(t *testing.T) {
	cols := []string{"g", "cnt"}
	plan := mergePlan{
		OrderBy:    []orderKey{{Index: 1, Desc: true}, {Index: 0}},
		GroupBy:    []int{0},
		Aggregates: []aggregate{{Kind: aggCount, Index: 1}},
		Limit:      noLimit,
	}
	srcs := func() []*mergeSrc {
		return []*mergeSrc{
			newMergeSrc(cols, mrow("a", 5), mrow("b", 1), mrow("c", 1)),
			newMergeSrc(cols, mrow("c", 9), mrow("b", 2), mrow("d", 3)),
		}
	}
	got := mergeAll(t, plan, srcs()...)
	assert.Equal(t, mwant([]any{"c", 10}, []any{"a", 5}, []any{"b", 3}, []any{"d", 3}), mplain(got))

	// Without ORDER BY the groups come sorted by the group columns.
	plan.OrderBy = nil
	got = mergeAll(t, plan, srcs()...)
	assert.Equal(t, mwant([]any{"a", 5}, []any{"b", 3}, []any{"c", 10}, []any{"d", 3}), mplain(got))

	// Two group columns, one hidden; no aggregates: GROUP BY as DISTINCT.
	xg := []string{"x", "g1", "g2"}
	plan = mergePlan{GroupBy: []int{1, 2}, Limit: noLimit, Visible: 2}
	got = mergeAll(t, plan,
		newMergeSrc(xg, mrow("p", 1, "u"), mrow("q", 1, "v")),
		newMergeSrc(xg, mrow("r", 1, "u"), mrow("s", nil, "u"), mrow("t", nil, "u")))
	assert.Equal(t, mwant([]any{"s", nil}, []any{"p", 1}, []any{"q", 1}), mplain(got))
}

func TestMergeDistinct(t *testing.T) {
	cols := []string{"a", "b", "h"}
	tests := []struct {
		name string
		plan mergePlan
		srcs [][][]driver.Value
		want [][]any
	}{
		{
			name: "ordered on every visible column",
			plan: mergePlan{Distinct: true, OrderBy: []orderKey{{Index: 1, Desc: true}, {Index: 0}}, Limit: noLimit, Visible: 2},
			srcs: [][][]driver.Value{
				{mrow(1, "b", 0), mrow(1, "a", 0), mrow(2, "a", 0)},
				{mrow(1, "b", 1), mrow(1, "a", 1), mrow(nil, nil, 1)},
			},
			want: mwant([]any{1, "b"}, []any{1, "a"}, []any{2, "a"}, []any{nil, nil}),
		},
		{
			name: "ordered on some visible columns",
			plan: mergePlan{Distinct: true, OrderBy: []orderKey{{Index: 0}}, Limit: noLimit, Visible: 2},
			srcs: [][][]driver.Value{
				{mrow(1, "x", 0), mrow(1, "y", 0), mrow(2, "x", 0)},
				{mrow(1, "y", 1), mrow(1, "x", 1), mrow(2, "x", 1), mrow(2, "z", 1)},
			},
			want: mwant([]any{1, "x"}, []any{1, "y"}, []any{2, "x"}, []any{2, "z"}),
		},
		{
			name: "unordered",
			plan: mergePlan{Distinct: true, Limit: noLimit, Visible: 2},
			srcs: [][][]driver.Value{
				{mrow(1, "x", 0), mrow(2, "x", 0)},
				{mrow(2, "x", 1), mrow(1, "x", 1), mrow(3, "x", 1)},
			},
			want: mwant([]any{1, "x"}, []any{2, "x"}, []any{3, "x"}),
		},
		{
			name: "hidden ORDER BY column",
			plan: mergePlan{Distinct: true, OrderBy: []orderKey{{Index: 2}}, Limit: noLimit, Visible: 2},
			srcs: [][][]driver.Value{
				{mrow(1, "x", 1), mrow(2, "x", 2)},
				{mrow(2, "x", 0), mrow(1, "x", 3)},
			},
			want: mwant([]any{2, "x"}, []any{1, "x"}),
		},
		{
			name: "numeric equality",
			plan: mergePlan{Distinct: true, Limit: noLimit, Visible: 1, ColumnTypes: []string{"DECIMAL", "INT", "INT"}},
			srcs: [][][]driver.Value{{mrow("1.50", 0, 0)}, {mrow("1.5", 0, 0), mrow(int64(2), 0, 0), mrow("2.00", 0, 0)}},
			want: mwant([]any{"1.50"}, []any{2}),
		},
		{
			name: "offset and limit count distinct rows",
			plan: mergePlan{Distinct: true, OrderBy: []orderKey{{Index: 0}}, Offset: 1, Limit: 1, Visible: 1},
			srcs: [][][]driver.Value{{mrow(1, 0, 0), mrow(2, 0, 0)}, {mrow(1, 0, 0), mrow(2, 0, 0), mrow(3, 0, 0)}},
			want: mwant([]any{2}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srcs := make([]*mergeSrc, len(tt.srcs))
			for i, rows := range tt.srcs {
				srcs[i] = newMergeSrc(cols, rows...)
				srcs[i].reuse = true
			}
			assert.Equal(t, tt.want, mplain(mergeAll(t, tt.plan, srcs...)))
		})
	}
}

func TestMergeErrors(t *testing.T) {
	boom := errors.New("boom")
	t.Run("a failing source is named", func(t *testing.T) {
		for _, plan := range []mergePlan{
			{OrderBy: []orderKey{{Index: 0}}, Limit: noLimit},
			{Limit: noLimit},
			{GroupBy: []int{0}, OrderBy: []orderKey{{Index: 0}}, Limit: noLimit},
			{GroupBy: []int{0}, Limit: noLimit},
			{Aggregates: []aggregate{{Kind: aggCount, Index: 1}}, Limit: noLimit},
			{Distinct: true, Limit: noLimit},
		} {
			s0 := newMergeSrc(mergeCols3, mrow(1, 1, 1), mrow(2, 2, 2))
			s1 := newMergeSrc(mergeCols3, mrow(1, 1, 1), mrow(2, 2, 2))
			s1.failAt, s1.failErr = 1, boom
			m, err := merge(plan, []rowSource{s0, s1})
			require.NoError(t, err)
			_, err = mergeDrain(t, m)
			var se *SourceError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, 1, se.Source)
			assert.ErrorIs(t, err, boom)
			assert.Equal(t, "rwshard: merge: source 1: boom", err.Error())
			assert.Equal(t, 1, s0.closes)
			assert.Equal(t, 1, s1.closes)
			// The error is sticky.
			assert.ErrorIs(t, m.Next(make([]driver.Value, 3)), boom)
		}
	})
	t.Run("close errors are reported once per source", func(t *testing.T) {
		s0 := newMergeSrc(mergeCols3, mrow(1, 1, 1))
		s1 := newMergeSrc(mergeCols3, mrow(2, 2, 2))
		s1.closeErr = boom
		m, err := merge(mergePlan{OrderBy: []orderKey{{Index: 0}}, Limit: 1}, []rowSource{s0, s1})
		require.NoError(t, err)
		_, err = mergeDrain(t, m)
		var se *SourceError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, 1, se.Source)
		assert.NoError(t, m.Close(), "second Close")
		assert.Equal(t, 1, s1.closes)
		assert.Equal(t, io.EOF, m.Next(make([]driver.Value, 3)))
	})
	t.Run("invalid plans close the sources", func(t *testing.T) {
		for name, plan := range map[string]mergePlan{
			"order index":         {OrderBy: []orderKey{{Index: 3}}},
			"group index":         {GroupBy: []int{-1}},
			"visible":             {Visible: 4},
			"offset":              {Offset: -1},
			"aggregate kind":      {Aggregates: []aggregate{{Kind: 9, Index: 0}}},
			"aggregate index":     {Aggregates: []aggregate{{Kind: aggSum, Index: 3}}},
			"two aggregates":      {Aggregates: []aggregate{{Kind: aggSum, Index: 0}, {Kind: aggMax, Index: 0}}},
			"AVG columns":         {Aggregates: []aggregate{{Kind: aggAvg, Index: 0, SumIndex: 1, CountIndex: 1}}},
			"AVG columns missing": {Aggregates: []aggregate{{Kind: aggAvg, Index: 0}}},
			"group is aggregate":  {GroupBy: []int{0}, Aggregates: []aggregate{{Kind: aggSum, Index: 0}}},
			"column types":        {ColumnTypes: []string{"INT"}},
		} {
			s := newMergeSrc(mergeCols3)
			_, err := merge(plan, []rowSource{s})
			assert.ErrorIs(t, err, ErrMergePlan, name)
			assert.Equal(t, 1, s.closes, name)
		}
		_, err := merge(mergePlan{}, nil)
		assert.ErrorIs(t, err, ErrMergePlan)
		_, err = merge(mergePlan{}, []rowSource{nil})
		assert.ErrorIs(t, err, ErrMergePlan)
	})
	t.Run("sources disagree on columns", func(t *testing.T) {
		s0, s1 := newMergeSrc(mergeCols3), newMergeSrc([]string{"a"})
		_, err := merge(mergePlan{Limit: noLimit}, []rowSource{s0, s1})
		var se *SourceError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, 1, se.Source)
		assert.ErrorIs(t, err, ErrMergeColumns)
		assert.Equal(t, 1, s0.closes)
		assert.Equal(t, 1, s1.closes)
	})
}

func TestMergeClosesEarly(t *testing.T) {
	s0 := newMergeSrc(mergeCols3, mrow(1, 0, 0), mrow(3, 0, 0))
	s1 := newMergeSrc(mergeCols3, mrow(2, 0, 0), mrow(4, 0, 0))
	m, err := merge(mergePlan{OrderBy: []orderKey{{Index: 0}}, Limit: 2}, []rowSource{s0, s1})
	require.NoError(t, err)
	dest := make([]driver.Value, 3)
	require.NoError(t, m.Next(dest))
	require.NoError(t, m.Next(dest))
	assert.Equal(t, int64(2), dest[0])
	assert.Zero(t, s0.closes+s1.closes, "the last row may point into a source until the next call")
	assert.Equal(t, io.EOF, m.Next(dest))
	assert.Equal(t, 1, s0.closes, "limit reached: sources closed before the caller's Close")
	assert.Equal(t, 1, s1.closes)
	require.NoError(t, m.Close())
	assert.Equal(t, 1, s0.closes)
}

// TestMergeWeights: a character column with a weight string (as a shard
// with a case-insensitive collation sends WEIGHT_STRING) orders, groups
// and compares for DISTINCT through it; numbers (weight NULL) and columns
// of unknown type keep their own values.
func TestMergeWeights(t *testing.T) {
	// name, its weight (upper case: a case-insensitive collation), n.
	cols := []string{"name", "weight_string(name)", "n"}
	types := []string{"VARCHAR", "VARBINARY", "BIGINT"}
	ci := func(names ...string) *mergeSrc {
		var rows [][]driver.Value
		for i, s := range names {
			w := []byte(nil)
			if s != "" {
				w = []byte(strings.ToUpper(s))
			}
			var v driver.Value
			if s != "" {
				v = []byte(s)
			}
			rows = append(rows, []driver.Value{v, w, int64(i + 1)})
		}
		return newMergeSrc(cols, rows...)
	}
	weights := []weight{{Column: 0, Weight: 1}}
	names := func(rows [][]driver.Value) []any {
		var out []any
		for _, r := range mplain(rows) {
			out = append(out, r[0])
		}
		return out
	}

	t.Run("ORDER BY", func(t *testing.T) {
		got := mergeAll(t, mergePlan{OrderBy: []orderKey{{Index: 0}}, Weights: weights, Limit: noLimit, Visible: 1, ColumnTypes: types},
			ci("", "apple", "Cherry"), ci("Banana", "date"))
		assert.Equal(t, []any{nil, "apple", "Banana", "Cherry", "date"}, names(got))
		got = mergeAll(t, mergePlan{OrderBy: []orderKey{{Index: 0, Desc: true}}, Weights: weights, Limit: noLimit, Visible: 1, ColumnTypes: types},
			ci("Cherry", "apple", ""), ci("date", "Banana"))
		assert.Equal(t, []any{"date", "Cherry", "Banana", "apple", nil}, names(got))
	})
	t.Run("without weights: bytewise", func(t *testing.T) {
		got := mergeAll(t, mergePlan{OrderBy: []orderKey{{Index: 0}}, Limit: noLimit, Visible: 1, ColumnTypes: types},
			ci("apple", "Cherry"), ci("Banana", "date"))
		assert.Equal(t, []any{"Banana", "apple", "Cherry", "date"}, names(got), "two sorted runs interleaved by bytes")
	})
	t.Run("unknown column types: bytewise", func(t *testing.T) {
		got := mergeAll(t, mergePlan{OrderBy: []orderKey{{Index: 0}}, Weights: weights, Limit: noLimit, Visible: 1},
			ci("apple", "Cherry"), ci("Banana", "date"))
		assert.Equal(t, []any{"Banana", "apple", "Cherry", "date"}, names(got))
	})
	t.Run("GROUP BY streaming and in memory", func(t *testing.T) {
		agg := []aggregate{{Kind: aggSum, Index: 2}}
		for _, order := range [][]orderKey{{{Index: 0}}, nil} {
			got := mergeAll(t, mergePlan{OrderBy: order, GroupBy: []int{0}, Aggregates: agg, Weights: weights, Limit: noLimit, ColumnTypes: types},
				ci("abc", "b"), ci("ABC", "B", "c"))
			require.Len(t, got, 3, "order %v", order)
			p := mplain(got)
			assert.Equal(t, "ABC", strings.ToUpper(p[0][0].(string)))
			assert.Equal(t, int64(1+1), p[0][2], "abc and ABC are one group")
			assert.Equal(t, int64(2+2), p[1][2], "b and B are one group")
			assert.Equal(t, int64(3), p[2][2])
		}
	})
	t.Run("DISTINCT", func(t *testing.T) {
		for _, order := range [][]orderKey{{{Index: 0}}, nil} {
			got := mergeAll(t, mergePlan{OrderBy: order, Distinct: true, Weights: weights, Limit: noLimit, Visible: 1, ColumnTypes: types},
				ci("abc", "b"), ci("ABC", "B", "c"))
			assert.Len(t, got, 3, "order %v: %v", order, names(got))
		}
	})
	t.Run("numbers keep their own order", func(t *testing.T) {
		num := []string{"BIGINT", "VARBINARY", "BIGINT"}
		got := mergeAll(t, mergePlan{OrderBy: []orderKey{{Index: 0}}, Weights: weights, Limit: noLimit, Visible: 1, ColumnTypes: num},
			newMergeSrc(cols, mrow(2, nil, 1), mrow(10, nil, 2)), newMergeSrc(cols, mrow(9, nil, 3)))
		assert.Equal(t, []any{int64(2), int64(9), int64(10)}, names(got))
	})
	t.Run("plan checked", func(t *testing.T) {
		for _, w := range [][]weight{{{0, 3}}, {{-1, 1}}, {{1, 1}}} {
			_, err := merge(mergePlan{Weights: w, Limit: noLimit}, mergeSources([]*mergeSrc{ci("a")}))
			assert.ErrorIs(t, err, ErrMergePlan, "%v", w)
		}
	})
}
