package bench_test

import (
	"os"
	"testing"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// rwLab is the primary + 2 replicas lab of the benchmarks.
var rwLab = labtest.NewShared(lab.RW())

func TestMain(m *testing.M) {
	if dsn := os.Getenv(writerEnv); dsn != "" {
		runWriter(dsn) // BenchmarkUniversal's second process
		return
	}
	labtest.Main(m, rwLab)
}

var (
	labDSN = labtest.DSN
	setup  = labtest.Setup
)
