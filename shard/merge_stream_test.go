package shard

import (
	"database/sql/driver"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lazySources returns k sources of n rows each, made on demand (never
// held in memory): row i of source s has key key(s, i) and a payload.
func lazySources(k, n int, key func(s, i int) int64) []*mergeSrc {
	srcs := make([]*mergeSrc, k)
	for s := range srcs {
		srcs[s] = &mergeSrc{
			cols: []string{"id", "payload"}, n: n, failAt: -1,
			gen: func(i int, dest []driver.Value) {
				dest[0] = key(s, i)
				dest[1] = []byte("payload")
			},
		}
	}
	return srcs
}

// TestMergeReadsOnlyOffsetPlusLimit is DESIGN §10's budget: an ORDER BY …
// LIMIT o, n over 4 shards of 100 000 rows reads at most o+n+1 rows of any
// source (o+n+k in all), however large the sources.
func TestMergeReadsOnlyOffsetPlusLimit(t *testing.T) {
	const k, n, offset, limit = 4, 100_000, 100, 10
	layouts := map[string]func(s, i int) int64{
		// Keys interleaved across the sources: each gives about (o+n)/k.
		"interleaved": func(s, i int) int64 { return int64(i*k + s) },
		// All of the first o+n rows in source 0: it gives o+n, the others 1.
		"skewed": func(s, i int) int64 { return int64(s*10*n + i) },
	}
	for name, key := range layouts {
		for _, desc := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/desc=%v", name, desc), func(t *testing.T) {
				kf := key
				if desc {
					kf = func(s, i int) int64 { return -key(s, i) }
				}
				srcs := lazySources(k, n, kf)
				plan := mergePlan{OrderBy: []orderKey{{Index: 0, Desc: desc}}, Offset: offset, Limit: limit, Visible: 1}
				got := mergeAll(t, plan, srcs...)
				require.Len(t, got, limit)
				total := 0
				for s, src := range srcs {
					assert.LessOrEqual(t, src.nexts, offset+limit+1, "source %d", s)
					total += src.nexts
				}
				assert.LessOrEqual(t, total, offset+limit+k)
				t.Logf("Next calls per source: %d %d %d %d (total %d for %d rows)", srcs[0].nexts, srcs[1].nexts, srcs[2].nexts, srcs[3].nexts, total, 4*n)
				if name == "interleaved" {
					want := int64(offset)
					for _, row := range got {
						if desc { // keys 0, -1, -2, … descending
							assert.Equal(t, -want, row[0])
						} else {
							assert.Equal(t, want, row[0])
						}
						want++
					}
				}
			})
		}
	}
}

// TestMergeStreamingGroupsReadLittle: GROUP BY merged streaming with a
// LIMIT stops reading after the groups it returns.
func TestMergeStreamingGroupsReadLittle(t *testing.T) {
	const k, n = 4, 100_000
	srcs := make([]*mergeSrc, k)
	for s := range srcs {
		srcs[s] = &mergeSrc{
			cols: []string{"g", "cnt"}, n: n, failAt: -1,
			gen: func(i int, dest []driver.Value) {
				dest[0] = int64(i) // one row per group per shard
				dest[1] = int64(s + 1)
			},
		}
	}
	plan := mergePlan{
		OrderBy: []orderKey{{Index: 0}}, GroupBy: []int{0},
		Aggregates: []aggregate{{Kind: aggCount, Index: 1}},
		Offset:     5, Limit: 3,
	}
	got := mergeAll(t, plan, srcs...)
	assert.Equal(t, mwant([]any{5, 10}, []any{6, 10}, []any{7, 10}), mplain(got))
	for s, src := range srcs {
		assert.LessOrEqual(t, src.nexts, 10, "source %d", s)
	}
}

// TestMergeAllocationsDoNotGrowWithRows: draining an ORDER BY merge costs
// a fixed number of allocations, whatever the number of rows: the merge
// holds one row per source, not the result.
func TestMergeAllocationsDoNotGrowWithRows(t *testing.T) {
	allocs := func(n int) float64 {
		srcs := materialized(4, n)
		plan := mergePlan{OrderBy: []orderKey{{Index: 0}, {Index: 1, Desc: true}}, Limit: noLimit}
		dest := make([]driver.Value, 2)
		return testing.AllocsPerRun(5, func() {
			m, err := merge(plan, resetSources(srcs))
			if err != nil {
				t.Fatal(err)
			}
			for m.Next(dest) == nil {
			}
			_ = m.Close()
		})
	}
	small, large := allocs(100), allocs(20_000)
	t.Logf("allocations per merge: %.0f for 4×100 rows, %.0f for 4×20000 rows", small, large)
	assert.Equal(t, small, large)
	assert.Less(t, large, 20.0)
}

// materialized builds k sources of n rows (sorted int64 keys, a []byte
// column) with every value boxed up front, so that reading them does not
// allocate and benchmarks measure the merge alone.
func materialized(k, n int) []*mergeSrc {
	srcs := make([]*mergeSrc, k)
	for s := range srcs {
		rows := make([][]driver.Value, n)
		for i := range rows {
			rows[i] = []driver.Value{int64(i*k + s), []byte(fmt.Sprintf("%06d.%02d", (i*k+s)%1000, i%100))}
		}
		srcs[s] = newMergeSrc([]string{"id", "amount"}, rows...)
	}
	return srcs
}

// resetSources rewinds sources for another merge.
func resetSources(srcs []*mergeSrc) []rowSource {
	for _, s := range srcs {
		s.pos, s.nexts, s.closes = 0, 0, 0
	}
	return mergeSources(srcs)
}
