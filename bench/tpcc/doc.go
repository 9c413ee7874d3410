// Package tpcc is rwshard's TPC-C benchmark (go-tpc's workload) and a
// sysbench-style read-only mix, each comparing rwshard with
// go-sql-driver/mysql straight to the primary in one run. The benchmarks
// are tests built with -tags tpcc (make bench-tpcc); see README.md. It is a module of its
// own so that go-tpc and its dependencies never reach the driver module's
// users, nor the main benchmark suite.
package tpcc
