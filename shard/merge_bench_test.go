package shard

import (
	"database/sql/driver"
	"fmt"
	"testing"
)

// Benchmarks of the merge alone: sources hand out rows boxed beforehand,
// so every allocation reported is the merge's. ns/row is per row read from
// the sources.

const benchShards, benchRows = 4, 100_000

func benchMerge(b *testing.B, srcs []*mergeSrc, plan mergePlan) {
	b.Helper()
	b.ReportAllocs()
	dest := make([]driver.Value, len(srcs[0].cols))
	rowsOut := 0
	b.ResetTimer()
	for b.Loop() {
		m, err := merge(plan, resetSources(srcs))
		if err != nil {
			b.Fatal(err)
		}
		rowsOut = 0
		for m.Next(dest) == nil {
			rowsOut++
		}
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
	}
	read := 0
	for _, s := range srcs {
		read += s.pos
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(read), "ns/row")
	b.ReportMetric(float64(rowsOut), "rows-out")
}

// BenchmarkMergeOrderBy: k-way merge of 4×100k rows on an int64 key.
func BenchmarkMergeOrderBy(b *testing.B) {
	benchMerge(b, materialized(benchShards, benchRows), mergePlan{OrderBy: []orderKey{{Index: 0}}, Limit: noLimit})
}

// BenchmarkMergeOrderByDecimal: the same on DECIMAL text, descending.
func BenchmarkMergeOrderByDecimal(b *testing.B) {
	srcs := materialized(benchShards, benchRows)
	for s, src := range srcs { // sort each source by its amount, descending
		for i, row := range src.rows {
			row[1] = []byte(fmt.Sprintf("%d.%02d", (benchRows-i)*3+s, i%100))
		}
	}
	benchMerge(b, srcs, mergePlan{OrderBy: []orderKey{{Index: 1, Desc: true}}, Limit: noLimit, ColumnTypes: []string{"BIGINT", "DECIMAL"}})
}

// BenchmarkMergeOrderByLimit: ORDER BY … LIMIT 100, 10 over 4×100k rows:
// cost independent of the table size.
func BenchmarkMergeOrderByLimit(b *testing.B) {
	benchMerge(b, materialized(benchShards, benchRows), mergePlan{OrderBy: []orderKey{{Index: 0}}, Offset: 100, Limit: 10})
}

// BenchmarkMergeConcat: no ORDER BY, the sources one after the other.
func BenchmarkMergeConcat(b *testing.B) {
	benchMerge(b, materialized(benchShards, benchRows), mergePlan{Limit: noLimit})
}

// groupSources: 4 sources of 100k rows, sorted by group g (25k groups,
// each in every source), with a COUNT and a decimal SUM.
func groupSources() []*mergeSrc {
	srcs := make([]*mergeSrc, benchShards)
	for s := range srcs {
		rows := make([][]driver.Value, benchRows)
		for i := range rows {
			rows[i] = []driver.Value{int64(i / 4), int64(i%7 + 1), []byte(fmt.Sprintf("%d.%02d", i%1000, s))}
		}
		srcs[s] = newMergeSrc([]string{"g", "cnt", "sum"}, rows...)
	}
	return srcs
}

var benchGroupAggs = []aggregate{{Kind: aggCount, Index: 1}, {Kind: aggSum, Index: 2}}

// BenchmarkMergeGroupByStreaming: GROUP BY merged group by group.
func BenchmarkMergeGroupByStreaming(b *testing.B) {
	benchMerge(b, groupSources(), mergePlan{
		OrderBy: []orderKey{{Index: 0}}, GroupBy: []int{0}, Aggregates: benchGroupAggs, Limit: noLimit,
		ColumnTypes: []string{"BIGINT", "BIGINT", "DECIMAL"},
	})
}

// BenchmarkMergeGroupByInMemory: the same groups, ordered by COUNT: in
// memory.
func BenchmarkMergeGroupByInMemory(b *testing.B) {
	benchMerge(b, groupSources(), mergePlan{
		OrderBy: []orderKey{{Index: 1, Desc: true}}, GroupBy: []int{0}, Aggregates: benchGroupAggs, Limit: noLimit,
		ColumnTypes: []string{"BIGINT", "BIGINT", "DECIMAL"},
	})
}

// BenchmarkMergeDistinctOrdered: DISTINCT over ORDER BY on its column.
func BenchmarkMergeDistinctOrdered(b *testing.B) {
	benchMerge(b, groupSources(), mergePlan{OrderBy: []orderKey{{Index: 0}}, Distinct: true, Visible: 1, Limit: noLimit})
}
