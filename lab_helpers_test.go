package rwshard_test

import (
	"testing"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// rwLab is the primary + 2 replicas lab shared by this package's
// integration tests; tests that break it start their own.
var rwLab = labtest.NewShared(lab.RW())

// galeraLab is the three-node Galera lab shared by the Galera tests; a
// test that kills or isolates a node brings it back before it ends.
var galeraLab = labtest.NewShared(lab.Galera())

func TestMain(m *testing.M) { labtest.Main(m, rwLab, galeraLab) }

// The lab helpers, by the short names these tests use.
var (
	labDSN        = labtest.DSN
	openLab       = labtest.Open
	direct        = labtest.Direct
	ranOn         = labtest.RanOn
	setup         = labtest.Setup
	statusCounter = labtest.StatusCounter
)
