package health_test

import (
	"errors"
	"fmt"

	"github.com/rwshard/rwshard/health"
)

// An observer that prints what it is told; Config.Observer installs one
// on a connector.
func ExampleObserverFunc() {
	var o health.Observer = health.ObserverFunc(func(e health.Event) { fmt.Println(e) })
	o.Observe(health.Event{Kind: health.Fenced, Node: "replica2", Detail: "lag 4.2s", Count: 1})
	o.Observe(health.Event{Kind: health.NodeDown, Node: "replica1", Err: errors.New("connection refused"), Count: 3})
	// Output:
	// fenced replica2: lag 4.2s
	// node-down replica1: connection refused (×3)
}
