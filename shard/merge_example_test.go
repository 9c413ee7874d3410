package shard_test

import (
	"database/sql/driver"
	"fmt"
	"io"

	"github.com/rwshard/rwshard/shard"
)

// rows is a Source over rows in memory, standing in for a shard's
// driver.Rows.
type rows struct {
	cols []string
	data [][]driver.Value
}

func (r *rows) Columns() []string { return r.cols }
func (r *rows) Close() error      { return nil }
func (r *rows) Next(dest []driver.Value) error {
	if len(r.data) == 0 {
		return io.EOF
	}
	copy(dest, r.data[0])
	r.data = r.data[1:]
	return nil
}

// The query
//
//	SELECT region, AVG(amount) FROM t_order GROUP BY region ORDER BY region LIMIT 2
//
// runs on two shards rewritten as
//
//	SELECT region, AVG(amount), SUM(amount), COUNT(amount) FROM t_order_N
//	GROUP BY region ORDER BY region LIMIT 0, 2
//
// and Merge combines the results: the average comes from the sums and
// counts, exactly, as MySQL would compute it over one table.
func ExampleMerge() {
	cols := []string{"region", "avg", "sum", "cnt"}
	shard0 := &rows{cols, [][]driver.Value{
		{[]byte("eu"), []byte("10.000000"), []byte("10.00"), int64(1)},
		{[]byte("us"), []byte("20.500000"), []byte("41.00"), int64(2)},
	}}
	shard1 := &rows{cols, [][]driver.Value{
		{[]byte("eu"), []byte("0.100000"), []byte("0.20"), int64(2)},
		{[]byte("jp"), []byte("7.000000"), []byte("7.00"), int64(1)},
	}}
	plan := shard.MergePlan{
		OrderBy:    []shard.OrderKey{{Index: 0}},
		GroupBy:    []int{0},
		Aggregates: []shard.Aggregate{{Kind: shard.AggAvg, Index: 1, SumIndex: 2, CountIndex: 3}},
		Limit:      2,
		Visible:    2,
	}
	merged, err := shard.Merge(plan, []shard.Source{shard0, shard1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer merged.Close()
	fmt.Println(merged.Columns())
	dest := make([]driver.Value, len(merged.Columns()))
	for merged.Next(dest) == nil {
		fmt.Printf("%s %s\n", dest[0], dest[1])
	}
	// Output:
	// [region avg]
	// eu 3.400000
	// jp 7.000000
}
