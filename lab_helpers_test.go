package rwshard_test

import (
	"testing"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// rwLab is the primary + 2 replicas lab shared by this package's
// integration tests; tests that break it start their own.
var rwLab = labtest.NewShared(lab.RW())

func TestMain(m *testing.M) { labtest.Main(m, rwLab) }

// The lab helpers, by the short names these tests use.
var (
	labDSN        = labtest.DSN
	openLab       = labtest.Open
	direct        = labtest.Direct
	ranOn         = labtest.RanOn
	setup         = labtest.Setup
	statusCounter = labtest.StatusCounter
)
