package router_test

import (
	"fmt"

	"github.com/rwshard/rwshard/router"
)

// The names a plan's Reason, the stats and the metrics use.
func ExampleReasons() {
	for _, r := range router.Reasons() {
		fmt.Println(r)
	}
	// Output:
	// unknown
	// write
	// locking-read
	// session-read
	// in-transaction
	// session-pinned
	// hint-primary
	// hint-node
	// replica
	// read-your-writes
	// no-healthy-replica
	// max-lag
	// starting
	// stored-function
	// primary-away
	// temporary-table
}
