package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExplain(t *testing.T) {
	l := rwLab.Get(t)
	dsn := labDSN(l, slowProbes)
	for _, tc := range []struct {
		args          []string
		kind, reason  string
		targets, hint string
	}{
		{[]string{"SELECT name FROM users WHERE id = ?", "42"}, "read", "replica", "replica1, replica2", ""},
		{[]string{"UPDATE users SET name = 'x' WHERE id = ?", "42"}, "write", "write", "primary", ""},
		{[]string{"SELECT id FROM users WHERE id = 1 FOR UPDATE"}, "locking-read", "locking-read", "primary", ""},
		{[]string{"/* rwshard:primary */ SELECT 1"}, "read", "hint-primary", "primary", "hint: comment: primary"},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			r := cli(t, append([]string{"explain", dsn}, tc.args...)...)
			require.Equal(t, exitOK, r.code, r)
			assert.Contains(t, r.stdout, "kind: "+tc.kind+"\n")
			assert.Contains(t, r.stdout, "reason: "+tc.reason+"\n")
			assert.Contains(t, r.stdout, "targets: "+tc.targets+"\n")
			assert.Contains(t, r.stdout, "sql: "+strings.ReplaceAll(tc.args[0], "'x'", "'?'"), "literals redacted")
			if tc.hint != "" {
				assert.Contains(t, r.stdout, tc.hint)
			}
			assert.Empty(t, r.stderr)
		})
	}
}

func TestExplainBadConfig(t *testing.T) {
	r := cli(t, "explain", "app:pw@tcp(127.0.0.1:1)/app?rwshard.balance=nope", "SELECT 1")
	assert.Equal(t, exitProblem, r.code, r)
	assert.Contains(t, r.stderr, `rwshard.balance="nope"`)
	assert.NotContains(t, r.stderr, ":pw@")
}

func TestExplainNoNodeAnswers(t *testing.T) {
	// Closed ports: the first probes fail at once. The plan says so
	// (reads fall back to the primary) and the ping failure is a warning.
	r := cli(t, "explain", "app:pw@tcp(127.0.0.1:1),tcp(127.0.0.1:2)/app?rwshard.connectTimeout=500ms", "SELECT 1")
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "reason: no-healthy-replica\ntargets: primary\n")
	assert.Contains(t, r.stderr, "warning: the primary does not answer")
	assert.NotContains(t, r.stdout+r.stderr, ":pw@")
}
