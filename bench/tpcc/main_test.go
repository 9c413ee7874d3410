package tpcc_test

import (
	"flag"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// rwLab is the primary + 2 replicas lab both benchmarks share: TPC-C is
// loaded once, the read-only mix's table once.
var rwLab = labtest.NewShared(lab.RW())

func TestMain(m *testing.M) { labtest.Main(m, rwLab) }

// The lab benchmarks (tpcc_test.go, readmix_test.go) take minutes and
// load the machine: they build only with -tags tpcc (make bench-tpcc), so
// `go test ./...` runs the unit tests alone.

// Parameters: flags (after -args, or as -test.run's neighbours when the
// test binary runs directly), each defaulting to an environment variable,
// so that a make target can pass them either way.
var (
	warehouses   = flag.Int("tpcc.warehouses", envInt("TPCC_WAREHOUSES", 2), "TPC-C warehouses")
	threads      = flag.Int("tpcc.threads", envInt("TPCC_THREADS", 8), "TPC-C client threads (go-tpc -T)")
	pairDuration = flag.Duration("tpcc.duration", envDuration("TPCC_DURATION", 15*time.Second), "TPC-C: each side's run in a pair")
	pairs        = flag.Int("tpcc.pairs", envInt("TPCC_PAIRS", 20), "TPC-C: interleaved pairs (direct and rwshard, order alternating; even: each side first equally often)")
	slice        = flag.Duration("tpcc.slice", envDuration("TPCC_SLICE", time.Second), "TPC-C: both sides of a pair open at once, alternating in slices this long until each has run -tpcc.duration (0, or not shorter than -tpcc.duration: whole runs, one side after the other)")
	warmup       = flag.Duration("tpcc.warmup", envDuration("TPCC_WARMUP", 10*time.Second), "TPC-C: an unmeasured run through each side before the pairs (0: none)")
	bufferPool   = flag.Int("tpcc.bufferpool", envInt("TPCC_BUFFER_POOL_MB", 512), "TPC-C: innodb_buffer_pool_size in MiB set on every node before loading (0: the lab's 64)")
	dsnParams    = flag.String("tpcc.params", envString("TPCC_PARAMS", "multiStatements=true"), "DSN parameters of both sides (go-tpc's CLI uses multiStatements=true)")
	rwParams     = flag.String("rwshard.params", envString("RWSHARD_PARAMS", ""), "extra DSN parameters of the rwshard side only, e.g. rwshard.consistency=session (default: rwshard's defaults)")

	readThreads   = flag.Int("read.threads", envInt("READ_THREADS", 16), "read-only mix: client goroutines")
	readDuration  = flag.Duration("read.duration", envDuration("READ_DURATION", 20*time.Second), "read-only mix: each side's run in a pair")
	readPairs     = flag.Int("read.pairs", envInt("READ_PAIRS", 3), "read-only mix: interleaved pairs")
	readWarmup    = flag.Duration("read.warmup", envDuration("READ_WARMUP", 5*time.Second), "read-only mix: an unmeasured run through each side before the pairs (0: none)")
	readPlacement = flag.String("read.placement", envString("READ_PLACEMENT", "shared,capped"), "read-only mix: the servers' CPU placements to run, in order: shared (every server on every core), capped (every server held to -read.cap CPUs by a cgroup, as if on a machine of its own; the target is judged here) and pinned (the primary and replica1 on one half of the CPUs, replica2 on the other)")
	readCap       = flag.Float64("read.cap", envFloat("READ_CAP", 0.5), "read-only mix, capped placement: the CPUs each server may use")
	readRows      = flag.Int("read.rows", envInt("READ_ROWS", 100000), "read-only mix: rows of sbtest1")

	cpuProfiles = flag.String("bench.cpuprofile", envString("BENCH_CPUPROFILE", ""), "write a CPU profile of every measured run into this directory (<test>-<n>-<side>.pprof)")
	cpuRate     = flag.Int("bench.cpuprofile.rate", envInt("BENCH_CPUPROFILE_RATE", 100), "-bench.cpuprofile's samples per second of CPU (runtime.SetCPUProfileRate; pprof's own is 100, too few to place a difference of 2 % between the sides; no more than the kernel's timer ticks a second are taken, 250 on a kernel built with HZ=250)")
)

func envString(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return v
	}
	return def
}

func envDuration(k string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(k)); err == nil {
		return v
	}
	return def
}

func envFloat(k string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(k), 64); err == nil {
		return v
	}
	return def
}
