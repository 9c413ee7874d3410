package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard/internal/lab"
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

func TestExplainJSON(t *testing.T) {
	l := rwLab.Get(t)
	dsn := labDSN(l, slowProbes)
	const secret = "Literal-Secret-77"
	for _, tc := range []struct {
		args         []string
		kind, reason string
		targets      []string
		sql          string
	}{
		{[]string{"SELECT name FROM users WHERE id = ? AND email = '" + secret + "'", "42"}, "read", "replica",
			[]string{"replica1", "replica2"}, "SELECT name FROM users WHERE id = ? AND email = '?'"},
		{[]string{"UPDATE users SET name = \"" + secret + "\" WHERE id = ?", "-7"}, "write", "write",
			[]string{"primary"}, "UPDATE users SET name = \"?\" WHERE id = ?"},
		{[]string{"/* rwshard:primary */ SELECT ?", "-1.5"}, "read", "hint-primary",
			[]string{"primary"}, "/* rwshard:primary */ SELECT ?"},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			// -json after the SQL and its (negative) ARGs.
			r := cli(t, append(append([]string{"explain", dsn}, tc.args...), "-json")...)
			require.Equal(t, exitOK, r.code, r)
			assert.Empty(t, r.stderr)
			assert.NotContains(t, r.stdout, secret, "literals redacted")
			assert.NotContains(t, r.stdout, lab.AppPassword)
			var p map[string]any
			dec := json.NewDecoder(strings.NewReader(r.stdout))
			require.NoError(t, dec.Decode(&p), r.stdout)
			assert.False(t, dec.More(), "one document")
			assert.Equal(t, tc.kind, p["kind"])
			assert.Equal(t, tc.reason, p["reason"])
			assert.Equal(t, tc.sql, p["sql"])
			var targets []string
			for _, x := range p["targets"].([]any) {
				targets = append(targets, x.(string))
			}
			assert.ElementsMatch(t, tc.targets, targets)
			assert.Equal(t, 1.0, p["statements"])
			assert.NotNil(t, p["effects"])
		})
	}
	r := cli(t, "explain", "--json", dsn, "/* rwshard:primary */ SELECT 1")
	require.Equal(t, exitOK, r.code, r)
	var p planJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &p))
	assert.Equal(t, "comment: primary", p.Hint)

	// A pool chosen by a rule, and the rule, in the JSON plan.
	r = cli(t, "explain", "-json", dsn+"&rwshard.pools=reporting:replica2&rwshard.poolTables=reporting:report_*",
		"SELECT * FROM report_daily WHERE day = ?", "7")
	require.Equal(t, exitOK, r.code, r)
	p = planJSON{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &p))
	assert.Equal(t, "reporting", p.Pool)
	assert.Equal(t, "1: tables report_*", p.PoolRule)
	assert.Equal(t, []string{"replica2"}, p.Targets)
}

// Flags go anywhere, numbers are ARGs, and "--" ends the flags.
func TestExplainFlagsAnywhere(t *testing.T) {
	l := rwLab.Get(t)
	dsn := labDSN(l, slowProbes)
	r := cli(t, "explain", dsn, "SELECT ? + ?", "-5", "-timeout", "30s", "-2.5")
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "kind: read\n")
	r = cli(t, "explain", dsn, "-json", "--", "SELECT ?", "-json")
	require.Equal(t, exitOK, r.code, r)
	assert.True(t, strings.HasPrefix(r.stdout, "{"), "-json before -- applies: %s", r.stdout)
	r = cli(t, "explain", dsn, "SELECT ?", "--", "-x")
	require.Equal(t, exitOK, r.code, r)
	assert.Contains(t, r.stdout, "sql: SELECT ?\n")
}
