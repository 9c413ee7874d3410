package monitor_test

import (
	"context"
	"fmt"
	"time"

	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/internal/monitor"
)

func ExampleParseGTID() {
	// MariaDB: @@gtid_slave_pos of a replica, two replication domains.
	applied, err := monitor.ParseGTID("0-1-42, 1-2-7")
	if err != nil {
		panic(err)
	}
	// The primary's @@last_gtid after a write of the session.
	written, _ := monitor.ParseGTID("0-1-40")
	fmt.Println(applied.Contains(written))

	// A later write, after a switchover: another server id, same domain.
	written, _ = monitor.ParseGTID("0-3-43")
	fmt.Println(applied.Contains(written))

	_, err = monitor.ParseGTID("0-1")
	fmt.Println(err)
	// Output:
	// true
	// false
	// health: bad MariaDB GTID "0-1" in "0-1"
}

func ExampleGTIDSet_Contains() {
	// MySQL: @@gtid_executed, with a gap at 6.
	executed, _ := monitor.ParseGTID("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7-9")
	for _, s := range []string{
		"3e11fa47-71ca-11e1-9e33-c80aa9429562:3",
		"3e11fa47-71ca-11e1-9e33-c80aa9429562:6",
		"3e11fa47-71ca-11e1-9e33-c80aa9429562:7-9",
		"",
	} {
		g, _ := monitor.ParseGTID(s)
		fmt.Printf("%q %v\n", s, executed.Contains(g))
	}
	text, isMySQL := executed.MySQL()
	fmt.Println(text, isMySQL)
	// Output:
	// "3e11fa47-71ca-11e1-9e33-c80aa9429562:3" true
	// "3e11fa47-71ca-11e1-9e33-c80aa9429562:6" false
	// "3e11fa47-71ca-11e1-9e33-c80aa9429562:7-9" true
	// "" true
	// 3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7-9 true
}

func ExampleBudget() {
	// One retry per four requests, and at least one per second; a new
	// budget holds its whole allowance, 10 + 100×0.25 retries.
	b := monitor.NewBudget(0.25, 1)
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	spend := func(at time.Time) int {
		n := 0
		for b.Retry(at) {
			n++
		}
		return n
	}
	fmt.Println("a new budget:", spend(now))
	for range 8 {
		b.Request()
	}
	fmt.Println("after 8 requests:", spend(now))
	fmt.Println("a second later:", b.Retry(now.Add(time.Second)))
	retries, refused := b.Counts()
	fmt.Println(retries, "made,", refused, "refused")
	// Output:
	// a new budget: 35
	// after 8 requests: 2
	// a second later: true
	// 38 made, 2 refused
}

// A Monitor over the nodes of a cluster. The ProbeFunc does the I/O (the
// root package's runs SELECT @@read_only, the GTID position and SHOW
// REPLICA STATUS on one connection); here it reads a fixed table.
func ExampleMonitor() {
	readings := []monitor.Reading{
		{}, // writable, no replica status: the primary
		{ReadOnly: true, Replica: true, IORunning: true, SQLRunning: true},
		{ReadOnly: true, Replica: true, IORunning: true, SQLRunning: false},
	}
	probe := func(ctx context.Context, i int) (monitor.Reading, error) { return readings[i], nil }
	var events []health.Event // written by the delivery goroutine until Close
	m := monitor.New([]string{"db1", "db2", "db3"}, 0, probe, monitor.Options{
		Interval: time.Hour, // the probes of Start are enough here
		MaxLag:   5 * time.Second,
		Observer: health.ObserverFunc(func(e health.Event) { events = append(events, e) }),
	})
	m.Start()
	<-m.Ready() // every node probed once
	i, ok := m.Primary()
	fmt.Println("primary:", m.Node(i).Name, ok)
	for _, n := range []int{1, 2} {
		fmt.Println(m.Node(n).Name, "up:", m.Node(n).Up(), "fenced:", m.Node(n).Fenced())
	}
	m.Close() // stops the probes, delivers the queued events
	for _, e := range events {
		fmt.Println("event:", e)
	}
	// Output:
	// primary: db1 true
	// db2 up: true fenced: false
	// db3 up: true fenced: true
	// event: fenced db3: replication stopped
}
