package main

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

func versionCommand() *command {
	return &command{
		name: "version",
		args: "[flags]",
		summary: `Prints rwshard's module version, the VCS revision and commit time it
was built from when known, and the Go version that built it, as
"rwshard v1.2.3 1a2b3c4d5e6f 2025-01-02T03:04:05Z go1.26.8" or, for a
build from a work tree without them, "rwshard (devel) go1.26.8".`,
		interspersed: true,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) int {
			asJSON := fs.Bool("json", false, `print {"version","revision","time","go"} (and "modified" for a build from a modified tree)`)
			return func(_ context.Context, e *env, args []string) int {
				if len(args) > 0 {
					return e.usageError("takes no arguments, got %d", len(args))
				}
				bi, _ := debug.ReadBuildInfo()
				v := versionOf(bi)
				if *asJSON {
					return writeJSON(e, v)
				}
				fmt.Fprintln(e.stdout, v.String())
				return exitOK
			}
		},
	}
}

// buildVersion is what the binary knows of its own build.
type buildVersion struct {
	Version  string `json:"version"`            // the module version, "(devel)" when none
	Revision string `json:"revision,omitempty"` // vcs.revision
	Time     string `json:"time,omitempty"`     // vcs.time, RFC 3339
	Modified bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	Go       string `json:"go"`
}

// versionOf reads bi (nil when the binary has no build information).
func versionOf(bi *debug.BuildInfo) buildVersion {
	v := buildVersion{Version: "(devel)", Go: runtime.Version()}
	if bi == nil {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the version line: the revision shortened to 12 characters,
// "+modified" after it for a modified tree.
func (v buildVersion) String() string {
	parts := []string{"rwshard", v.Version}
	if v.Revision != "" {
		rev := v.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if v.Modified {
			rev += "+modified"
		}
		parts = append(parts, rev)
	}
	if v.Time != "" {
		parts = append(parts, v.Time)
	}
	return strings.Join(append(parts, v.Go), " ")
}
