package shard

import (
	"bytes"
	"database/sql/driver"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
)

// FuzzMerge decodes a dataset, its split into shards and a query from the
// input bytes (each byte one choice of the property test's generator) and
// checks the merge against the reference: no panic, same result.
func FuzzMerge(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 40, 3, 2, 1, 0, 7, 7, 7, 2, 9, 1, 0, 1, 3})
	r := rand.New(rand.NewPCG(7, 7))
	for range 16 {
		seed := make([]byte, 64+r.IntN(512))
		for i := range seed {
			seed[i] = byte(r.IntN(256))
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &mergeByteRand{b: data}
		c := genCase(r)
		runCase(t, c, r)
	})
}

// FuzzMergeCompare checks the comparison of arbitrary text in every column
// class: no panic, antisymmetry, equality agreeing with the GROUP BY /
// DISTINCT key, and (outside numeric columns, where float syntax compares
// through float64) transitivity.
func FuzzMergeCompare(f *testing.F) {
	f.Add([]byte("12.50"), []byte("12.5"), []byte("-0"), uint8(0))
	f.Add([]byte("10"), []byte("9"), []byte("a"), uint8(2))
	f.Add([]byte("-01:00:00"), []byte("100:00:00.5"), []byte("x"), uint8(3))
	f.Add([]byte("1e3"), []byte("999.9"), []byte(""), uint8(1))
	f.Fuzz(func(t *testing.T, a, b, c []byte, class uint8) {
		cls := colClass(class % 4)
		ab, ba := compareValues(a, b, cls), compareValues(b, a, cls)
		if ab != -ba {
			t.Fatalf("compare(%q, %q) = %d but reversed %d", a, b, ab, ba)
		}
		ka, kb := appendKey(nil, a, cls), appendKey(nil, b, cls)
		if cls != classNumeric && (ab == 0) != bytes.Equal(ka, kb) {
			t.Fatalf("compare(%q, %q) = %d but keys %q %q", a, b, ab, ka, kb)
		}
		if cls == classNumeric {
			return
		}
		bc, ac := compareValues(b, c, cls), compareValues(a, c, cls)
		if ab <= 0 && bc <= 0 && ac > 0 {
			t.Fatalf("not transitive: %q <= %q <= %q but %q > %q", a, b, c, a, c)
		}
	})
}

// FuzzMergeCompareNumbers checks numbers of mixed Go types and decimal
// text: antisymmetry, equality agreeing with the key (float against text
// excepted, documented as compared through float64) and transitivity of
// the exact comparisons.
func FuzzMergeCompareNumbers(f *testing.F) {
	f.Add(int64(-1), uint64(1<<63), 9.223372036854775807e18, []byte("9223372036854775808"))
	f.Add(int64(1<<53+1), uint64(1<<53), float64(1<<53), []byte("9007199254740993.0"))
	f.Add(int64(0), uint64(0), -0.0, []byte("-0.000"))
	f.Fuzz(func(t *testing.T, i int64, u uint64, fl float64, text []byte) {
		vals := []any{i, u, fl, text}
		for _, cls := range []colClass{classAuto, classNumeric} {
			for x, a := range vals {
				for y, b := range vals {
					ab, ba := compareValues(a, b, cls), compareValues(b, a, cls)
					if ab != -ba {
						t.Fatalf("compare(%v, %v) = %d but reversed %d", a, b, ab, ba)
					}
					floatText := (x == 2 && y == 3) || (x == 3 && y == 2)
					if !floatText && x != y {
						ka, kb := appendKey(nil, a, cls), appendKey(nil, b, cls)
						if (ab == 0) != bytes.Equal(ka, kb) {
							t.Fatalf("compare(%v, %q) = %d but keys %q %q", a, b, ab, ka, kb)
						}
					}
				}
			}
			// Exact comparisons among int64, uint64, float64 are transitive.
			for _, p := range [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
				a, b, c := vals[p[0]], vals[p[1]], vals[p[2]]
				if compareValues(a, b, cls) <= 0 && compareValues(b, c, cls) <= 0 && compareValues(a, c, cls) > 0 {
					t.Fatalf("not transitive: %v <= %v <= %v", a, b, c)
				}
			}
		}
	})
}

// FuzzMergeDistinctHaving splits (g, x) rows over shards as the rewrite of
// "SELECT g, COUNT(DISTINCT x), SUM(DISTINCT x), COUNT(*) … GROUP BY g
// HAVING COUNT(DISTINCT x) >= k ORDER BY g" has them (a row per shard, g
// and x) and checks the merge against counting on the whole data.
func FuzzMergeDistinctHaving(f *testing.F) {
	f.Add([]byte{3, 1, 2, 1, 2, 3, 0, 1, 1, 2, 2, 0, 5, 5, 1}, uint8(2), uint8(1))
	f.Add([]byte{}, uint8(1), uint8(0))
	f.Add([]byte{0, 0, 0, 0, 7, 7, 7, 7, 1, 2, 3, 4, 5, 6, 7, 8}, uint8(4), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, shards, k uint8) {
		n := 1 + int(shards%4)
		type part struct{ g, x int64 }
		// Per shard: its distinct (g, x) with their row counts, sorted by g.
		per := make([]map[part]int64, n)
		for i := range per {
			per[i] = map[part]int64{}
		}
		distinct := map[int64]map[int64]bool{}
		count := map[int64]int64{}
		for i := 0; i+1 < len(data); i += 2 {
			g, x := int64(data[i]%5), int64(data[i+1]%7)
			per[(i/2)%n][part{g, x}]++
			if distinct[g] == nil {
				distinct[g] = map[int64]bool{}
			}
			if x != 0 { // x 0 stands for NULL
				distinct[g][x] = true
			}
			count[g]++
		}
		cols := []string{"g", "cd", "sd", "c", "x"}
		srcs := make([]*mergeSrc, n)
		for i, m := range per {
			var rows [][]driver.Value
			for g := int64(0); g < 5; g++ {
				for x := int64(0); x < 7; x++ {
					c, ok := m[part{g, x}]
					if !ok {
						continue
					}
					var xv, sd driver.Value
					cd := int64(0)
					if x != 0 {
						xv, sd, cd = x, []byte(strconv.FormatInt(x, 10)), 1
					}
					rows = append(rows, mrow(g, cd, sd, c, xv))
				}
			}
			srcs[i] = newMergeSrc(cols, rows...)
		}
		h := havingExpr{Op: havingCompare, Cmp: ">=", Left: havingOperand{Column: 1}, Right: havingOperand{Const: true, Value: int64(k % 4)}}
		plan := mergePlan{
			OrderBy: []orderKey{{Index: 0}}, GroupBy: []int{0},
			Aggregates: []aggregate{{Kind: aggCount, Index: 1, Distinct: true, ArgIndex: 4}, {Kind: aggSum, Index: 2, Distinct: true, ArgIndex: 4},
				{Kind: aggCount, Index: 3}},
			Having: &h, Limit: noLimit, Visible: 4,
			ColumnTypes: []string{"INT", "BIGINT", "DECIMAL", "BIGINT", "INT"},
		}
		got := mplain(mergeAll(t, plan, srcs...))
		var want [][]any
		for g := int64(0); g < 5; g++ {
			if count[g] == 0 || int64(len(distinct[g])) < int64(k%4) {
				continue
			}
			var sum any
			s := int64(0)
			for x := range distinct[g] {
				s += x
			}
			if len(distinct[g]) > 0 {
				sum = strconv.FormatInt(s, 10)
			}
			want = append(want, []any{g, int64(len(distinct[g])), sum, count[g]})
		}
		if len(want) == 0 {
			want = nil
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}
