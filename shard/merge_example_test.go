package shard

import (
	"database/sql/driver"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The query
//
//	SELECT region, AVG(amount) FROM t_order GROUP BY region ORDER BY region LIMIT 2
//
// runs on two shards rewritten as
//
//	SELECT region, AVG(amount), SUM(amount), COUNT(amount) FROM t_order_N
//	GROUP BY region ORDER BY region LIMIT 0, 2
//
// and merge combines the results: the average comes from the sums and
// counts, exactly, as MySQL would compute it over one table.
func TestMergeWorkedExample(t *testing.T) {
	cols := []string{"region", "avg", "sum", "cnt"}
	shard0 := newMergeSrc(cols,
		[]driver.Value{[]byte("eu"), []byte("10.000000"), []byte("10.00"), int64(1)},
		[]driver.Value{[]byte("us"), []byte("20.500000"), []byte("41.00"), int64(2)},
	)
	shard1 := newMergeSrc(cols,
		[]driver.Value{[]byte("eu"), []byte("0.100000"), []byte("0.20"), int64(2)},
		[]driver.Value{[]byte("jp"), []byte("7.000000"), []byte("7.00"), int64(1)},
	)
	plan := mergePlan{
		OrderBy:    []orderKey{{Index: 0}},
		GroupBy:    []int{0},
		Aggregates: []aggregate{{Kind: aggAvg, Index: 1, SumIndex: 2, CountIndex: 3}},
		Limit:      2,
		Visible:    2,
	}
	merged, err := merge(plan, mergeSources([]*mergeSrc{shard0, shard1}))
	require.NoError(t, err)
	assert.Equal(t, []string{"region", "avg"}, merged.Columns())
	got, err := mergeDrain(t, merged)
	require.NoError(t, err)
	assert.Equal(t, [][]driver.Value{
		{[]byte("eu"), []byte("3.400000")},
		{[]byte("jp"), []byte("7.000000")},
	}, got)
}
