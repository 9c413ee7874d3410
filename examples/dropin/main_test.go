package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// The example on a primary and two replicas, one of them delayed by 2 s,
// as an application user with GRANT ALL ON app.* only: every read back
// saw its write, and the healthy replica served reads.
func TestRun(t *testing.T) {
	l := labtest.Fresh(t, lab.RW())
	ctx := labtest.Ctx(t, 2*time.Minute)
	require.NoError(t, l.Lag(ctx, l.Replicas()[0], 2*time.Second))
	var out strings.Builder
	res, err := run(ctx, &out, labtest.PlainDSN(l, "parseTime=true"), 20)
	require.NoError(t, err, out.String())
	t.Log(out.String())
	assert.Equal(t, 4*20, res.Reads)
	assert.Greater(t, res.ReplicaReads, res.Reads/2, "the replicas served most reads")
	assert.Contains(t, out.String(), "every read saw the write")
}
