package shard

import (
	"bytes"
	"math/rand/v2"
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
