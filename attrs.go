package rwshard

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
)

// Connection attributes: every backend connection rwshard opens tells
// the server, in performance_schema.session_connect_attrs, which rwshard
// version opened it, for which program, under which sharding rules, so
// that `rwshard fleet` can list who runs what. go-sql-driver sends them
// (mysql.Config.ConnectionAttributes, "name:value,name:value", no
// escaping: a value cannot hold a comma) after its own (_client_name,
// _os, _pid, …). Attributes the caller set in the DSN's
// connectionAttributes are kept, and one of the names below set there
// wins: a build that cannot stamp its version, or a test, names it
// itself. Values never carry credentials: a version, a program name, a
// hash of the rules' shape.
const (
	AttrVersion = "rwshard_version"
	AttrProgram = "rwshard_program"
	AttrRules   = "rwshard_rules"

	// rulesNone is AttrRules of a connector without sharding rules.
	rulesNone = "none"
	// maxProgram bounds a program name: the server keeps
	// performance_schema_session_connect_attrs_size bytes of a
	// connection's attributes (512 by default) and drops the rest.
	maxProgram = 64
	// modulePath is the driver module's path in build information.
	modulePath = "github.com/rwshard/rwshard"
)

// moduleVersion is the driver module's version as the program's build
// information records it: the version the program's go.mod requires (or
// its replacement's), the pseudo-version go build stamps for a build of
// this module itself, or "(devel)" for a build from a work tree or a
// local replacement; "unknown" without build information. Build
// information is the one source that cannot go stale: a version constant
// in the source would have to be edited at every release, and a fork or
// an unreleased commit would carry the last release's number.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	var m *debug.Module
	if bi.Main.Path == modulePath {
		m = &bi.Main
	}
	for _, d := range bi.Deps {
		if m == nil && d.Path == modulePath {
			m = d
		}
	}
	switch {
	case m == nil:
		return "unknown"
	case m.Replace != nil && m.Replace.Version != "":
		return m.Replace.Version
	case m.Replace != nil || m.Version == "":
		return "(devel)"
	}
	return m.Version
}

// programName is Config.Program, else the base name of the executable as
// it was started (what ps and the service's unit show).
func programName(cfg *Config) string {
	if cfg.Program != "" {
		return cfg.Program
	}
	name := ""
	if len(os.Args) > 0 {
		name = filepath.Base(os.Args[0])
	}
	if name == "" || name == "." || name == string(filepath.Separator) {
		return "unknown"
	}
	name = strings.Map(func(r rune) rune {
		if r == ',' || r < ' ' {
			return '_'
		}
		return r
	}, name)
	if len(name) > maxProgram {
		name = name[:maxProgram]
	}
	return name
}

// checkProgram validates Config.Program.
func checkProgram(p string) error {
	switch {
	case len(p) > maxProgram:
		return configErr(paramPrefix+"program", p, "longer than %d bytes", maxProgram)
	case strings.ContainsAny(p, ","):
		return configErr(paramPrefix+"program", p, "must not contain a comma (connection attributes are comma-separated)")
	case strings.IndexFunc(p, func(r rune) bool { return r < ' ' }) >= 0:
		return configErr(paramPrefix+"program", p, "must not contain control characters")
	}
	return nil
}

// connAttrs is the connection attributes of a node's connections: the
// caller's (Backend.ConnectionAttributes), then rwshard's, each unless the
// caller's already name it.
func connAttrs(cfg *Config, version string) string {
	user := cfg.Backend.ConnectionAttributes
	out := user
	for _, kv := range [][2]string{{AttrVersion, version}, {AttrProgram, programName(cfg)}, {AttrRules, rulesNone}} {
		if hasConnAttr(user, kv[0]) {
			continue
		}
		if out != "" {
			out += ","
		}
		out += kv[0] + ":" + kv[1]
	}
	return out
}

// hasConnAttr reports whether attrs, in go-sql-driver's
// connectionAttributes form ("name:value,…"), sets name.
func hasConnAttr(attrs, name string) bool {
	for kv := range strings.SplitSeq(attrs, ",") {
		if k, _, ok := strings.Cut(kv, ":"); ok && k == name {
			return true
		}
	}
	return false
}
