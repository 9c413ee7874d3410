package metrics_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"net/http"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/metrics"
)

// A *sql.DB from sql.Open("rwshard", …): ConnectorOf finds the Connector
// behind it. The cluster label tells this cluster's series from those of
// other clusters registered in the same registry. (Compiled, not run: it
// needs servers.)
func ExampleNewCollector() {
	ctx := context.Background()
	db, err := sql.Open("rwshard",
		"app:pw@tcp(10.0.0.1:3306),tcp(10.0.0.2:3306),tcp(10.0.0.3:3306)/shop?parseTime=true")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	c, err := rwshard.ConnectorOf(ctx, db)
	if err != nil {
		log.Fatal(err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCollector(c, metrics.WithConstLabels(prometheus.Labels{"cluster": "orders"})))
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	log.Fatal(http.ListenAndServe(":9090", nil))
}

// Over OpenDB, with go-sqlmock handles standing in for a primary and a
// replica: one read and one write, then the route counts a scrape shows.
func ExampleNewCollector_openDB() {
	primary, primaryMock, _ := sqlmock.New(sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	defer primary.Close()
	replica, replicaMock, _ := sqlmock.New(sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	defer replica.Close()
	replicaMock.ExpectQuery("SELECT name FROM users WHERE id = ?").WithArgs(1).
		WillReturnRows(sqlmock.NewRows([]string{"name"}).AddRow("ada"))
	primaryMock.ExpectExec("UPDATE users SET name = ? WHERE id = ?").WithArgs("grace", 1).
		WillReturnResult(sqlmock.NewResult(0, 1))

	db, err := rwshard.OpenDB(primary, []*sql.DB{replica})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	var name string
	if err := db.QueryRow("SELECT name FROM users WHERE id = ?", 1).Scan(&name); err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec("UPDATE users SET name = ? WHERE id = ?", "grace", 1); err != nil {
		log.Fatal(err)
	}

	c, err := rwshard.ConnectorOf(context.Background(), db)
	if err != nil {
		log.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.NewCollector(c))
	fams, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "rwshard_routes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if v := m.GetCounter().GetValue(); v > 0 {
				fmt.Printf("%s{reason=%q} %v\n", f.GetName(), m.GetLabel()[0].GetValue(), v)
			}
		}
	}
	fmt.Println("series:", testutil.CollectAndCount(metrics.NewCollector(c), "rwshard_routes_total"))
	// Output:
	// rwshard_routes_total{reason="replica"} 1
	// rwshard_routes_total{reason="write"} 1
	// series: 16
}
