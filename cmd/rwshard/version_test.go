package main

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVersionOf(t *testing.T) {
	v := versionOf(nil)
	assert.Equal(t, buildVersion{Version: "(devel)", Go: runtime.Version()}, v)
	assert.Equal(t, "rwshard (devel) "+runtime.Version(), v.String())

	v = versionOf(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/rwshard/rwshard/cmd/rwshard"}})
	assert.Equal(t, "rwshard (devel) go1.26.8", v.String())

	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "-compiler", Value: "gc"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d"},
		{Key: "vcs.time", Value: "2025-01-02T03:04:05Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	v = versionOf(bi)
	assert.Equal(t, buildVersion{Version: "v1.2.3", Revision: "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d",
		Time: "2025-01-02T03:04:05Z", Modified: true, Go: "go1.26.8"}, v)
	assert.Equal(t, "rwshard v1.2.3 1a2b3c4d5e6f+modified 2025-01-02T03:04:05Z go1.26.8", v.String())
	bi.Settings[4].Value = "false"
	assert.Equal(t, "rwshard v1.2.3 1a2b3c4d5e6f 2025-01-02T03:04:05Z go1.26.8", versionOf(bi).String())
}

func TestVersionCommand(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	require.True(t, ok)
	want := versionOf(bi)

	r := cli(t, "version")
	require.Equal(t, exitOK, r.code, r)
	assert.Equal(t, want.String()+"\n", r.stdout)
	assert.True(t, strings.HasPrefix(r.stdout, "rwshard "), r.stdout)
	assert.True(t, strings.HasSuffix(r.stdout, " "+runtime.Version()+"\n"), r.stdout)
	assert.Empty(t, r.stderr)

	r = cli(t, "version", "-json")
	require.Equal(t, exitOK, r.code, r)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	assert.Equal(t, runtime.Version(), got["go"])
	assert.Equal(t, want.Version, got["version"])
	assert.NotEmpty(t, got["version"])
	for k := range got {
		assert.Contains(t, []string{"version", "revision", "time", "modified", "go"}, k)
	}

	r = cli(t, "help")
	assert.Regexp(t, `(?m)^  version\s`, r.stdout, "in the usage text")
}
