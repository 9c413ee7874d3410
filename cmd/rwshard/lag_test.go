package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

func TestLag(t *testing.T) {
	l := rwLab.Get(t)
	r := cli(t, "lag", labDSN(l, slowProbes), "-count", "1")
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "3 nodes: 3 up, 0 fenced")
	assert.Regexp(t, `(?m)^NODE\s+ROLE\s+UP\s+FENCED\s+LAG\s+IN_FLIGHT\s+QUERIES\s+ERRORS\s+REASON$`, r.stdout)
	assert.Regexp(t, `(?m)^primary\s+primary\s+yes\s+no\s+-\s+0\s+\d+\s+0\s+-$`, r.stdout)
	for _, n := range l.Replicas() {
		assert.Regexp(t, `(?m)^`+n.Name+`\s+replica\s+yes\s+no\s+\S+\s+0\s+\d+\s+0\s+-$`, r.stdout)
	}
	assert.NotContains(t, r.stdout, "\033[", "escape codes outside a terminal")

	r = cli(t, "lag", "-interval", "20ms", labDSN(l, slowProbes), "-count", "3")
	require.Equal(t, exitOK, r.code, r)
	assert.Equal(t, 3, strings.Count(r.stdout, "NODE  "), "want three tables")
}

func TestLagNodeDown(t *testing.T) {
	l := rwLab.Get(t)
	dsn := hostsDSN(lab.AppPassword, append(labAddrs(l), "127.0.0.1:1"), "rwshard.connectTimeout=500ms&"+slowProbes)
	r := cli(t, "lag", dsn, "-count", "1")
	assert.Equal(t, exitProblem, r.code, r)
	assert.Contains(t, r.stdout, "4 nodes: 3 up, 0 fenced")
	assert.Regexp(t, `(?m)^replica3\s+replica\s+no\s.*\s(never reached|down): .*connection refused$`, r.stdout)
}

// lagLine is one line of lag -json.
type lagLine struct {
	Time  string `json:"time"`
	Nodes []struct {
		Name       string   `json:"name"`
		Role       string   `json:"role"`
		Up         *bool    `json:"up"`
		Fenced     *bool    `json:"fenced"`
		LagSeconds *float64 `json:"lag_seconds"`
		InFlight   *int64   `json:"in_flight"`
		Queries    *uint64  `json:"queries"`
		Errors     *uint64  `json:"errors"`
		Reason     *string  `json:"reason"`
	} `json:"nodes"`
}

// decodeLag decodes lag -json's output, one object per line.
func decodeLag(t *testing.T, out string) []lagLine {
	t.Helper()
	var lines []lagLine
	for _, s := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var l lagLine
		require.NoError(t, json.Unmarshal([]byte(s), &l), "line %q", s)
		lines = append(lines, l)
	}
	return lines
}

func TestLagJSON(t *testing.T) {
	l := rwLab.Get(t)
	r := cli(t, "lag", "--json", "-interval", "20ms", labDSN(l, slowProbes), "-count", "3")
	require.Equal(t, exitOK, r.code, r)
	assert.NotContains(t, r.stdout, "\033[")
	lines := decodeLag(t, r.stdout)
	require.Len(t, lines, 3, "one line per refresh")
	for _, line := range lines {
		_, err := time.Parse(time.RFC3339, line.Time)
		require.NoError(t, err)
		require.Len(t, line.Nodes, 3)
		for i, n := range line.Nodes {
			assert.Equal(t, l.Nodes()[i].Name, n.Name)
			require.NotNil(t, n.Up, "up")
			require.NotNil(t, n.Fenced, "fenced")
			require.NotNil(t, n.Reason, "reason")
			require.NotNil(t, n.InFlight, "in_flight")
			require.NotNil(t, n.Queries, "queries")
			require.NotNil(t, n.Errors, "errors")
			assert.True(t, *n.Up, n.Name)
			assert.False(t, *n.Fenced, n.Name)
			assert.Empty(t, *n.Reason, n.Name)
			if i == 0 {
				assert.Equal(t, "primary", n.Role)
				assert.Nil(t, n.LagSeconds, "no lag for the primary")
			} else {
				assert.Equal(t, "replica", n.Role)
				require.NotNil(t, n.LagSeconds, "replica lag is measured")
				assert.GreaterOrEqual(t, *n.LagSeconds, 0.0)
			}
		}
	}
}

// A replica whose replication stopped is fenced, and lag says so, in the
// table and in JSON.
func TestLagReasonReplicationStopped(t *testing.T) {
	l := rwLab.Get(t)
	victim := l.Replicas()[0]
	require.NoError(t, l.StopReplication(labtest.Ctx(t, time.Minute), victim))
	t.Cleanup(func() {
		require.NoError(t, l.StartReplication(labtest.Ctx(t, time.Minute), victim))
		waitReplicating(t, victim)
	})
	other := l.Replicas()[1]

	r := cli(t, "lag", labDSN(l, slowProbes), "-count", "1")
	assert.Equal(t, exitProblem, r.code, r)
	assert.Contains(t, r.stdout, "3 nodes: 3 up, 1 fenced")
	assert.Regexp(t, `(?m)^`+victim.Name+`\s+replica\s+yes\s+yes\s+stopped\s+0\s+\d+\s+0\s+fenced: replication stopped$`, r.stdout)
	assert.Regexp(t, `(?m)^`+other.Name+`\s+replica\s+yes\s+no\s+\S+\s+0\s+\d+\s+0\s+-$`, r.stdout)

	r = cli(t, "lag", labDSN(l, slowProbes), "-count", "1", "-json")
	assert.Equal(t, exitProblem, r.code, r)
	lines := decodeLag(t, r.stdout)
	require.Len(t, lines, 1)
	byName := map[string]int{}
	for i, n := range lines[0].Nodes {
		byName[n.Name] = i
	}
	v := lines[0].Nodes[byName[victim.Name]]
	require.NotNil(t, v.Fenced)
	assert.True(t, *v.Fenced)
	require.NotNil(t, v.Reason)
	assert.Equal(t, "fenced: replication stopped", *v.Reason)
	require.NotNil(t, v.LagSeconds)
	assert.Equal(t, -1.0, *v.LagSeconds, "stopped replication")
	o := lines[0].Nodes[byName[other.Name]]
	require.NotNil(t, o.Reason)
	assert.Empty(t, *o.Reason)
	assert.False(t, *o.Fenced)
}
