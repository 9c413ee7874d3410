package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard/internal/lab"
)

func TestLag(t *testing.T) {
	l := rwLab.Get(t)
	r := cli(t, "lag", labDSN(l, slowProbes), "-count", "1")
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "3 nodes: 3 up, 0 fenced")
	assert.Regexp(t, `(?m)^NODE\s+ROLE\s+UP\s+FENCED\s+LAG\s+IN_FLIGHT\s+QUERIES\s+ERRORS$`, r.stdout)
	assert.Regexp(t, `(?m)^primary\s+primary\s+yes\s+no\s+-\s+0\s+\d+\s+0$`, r.stdout)
	for _, n := range l.Replicas() {
		assert.Regexp(t, `(?m)^`+n.Name+`\s+replica\s+yes\s+no\s+\S+\s+0\s+\d+\s+0$`, r.stdout)
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
	assert.Regexp(t, `(?m)^replica3\s+replica\s+no\s`, r.stdout)
}
