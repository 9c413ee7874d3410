//go:build scratch

package tpcc_test

import (
	"testing"
	"time"
)

func TestScratchIdle(t *testing.T) {
	l := rwLab.Get(t)
	for i := 0; i < 2; i++ {
		for _, side := range []string{direct, viaRW} {
			db := openSide(t, l, side, "multiStatements=true", 8)
			c0 := cpuTime()
			time.Sleep(20 * time.Second)
			c1 := cpuTime()
			db.Close()
			t.Logf("%s idle 20s: client CPU %v", side, c1-c0)
		}
	}
}
