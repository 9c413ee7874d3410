package rwshard

import (
	"errors"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/rwshard/rwshard/internal/route"
)

// PoolRule sends the reads it matches to a replica pool (Config.Pools),
// as hint.Pool would, so that report and export queries keep off the
// replicas serving online reads without every call site carrying a hint.
// A rule matches a read when every condition it sets holds; it must set
// at least one. Rules are tried in order and the first that matches
// chooses the pool.
type PoolRule struct {
	// Pool is the name of the pool the matching reads run on.
	Pool string
	// Tables: the read reads one of these tables (a name after FROM or
	// JOIN of one of its SELECTs; see route.Tables). "name" is a table of
	// that name in any schema; "schema.name" a table of that schema, or an
	// unqualified one when the DSN's database is that schema. Either part
	// may be a glob as path.Match takes it ("audit.*", "report_*").
	// Compared without case.
	Tables []string
	// Match is a regular expression (Go's RE2 syntax; (?i) for no case)
	// that the statement's text, comments included, must match.
	Match string
}

// poolRule is a PoolRule validated and compiled by checkPoolRules.
type poolRule struct {
	pool   string
	tables []tablePattern
	re     *regexp.Regexp
	desc   string // for Explain and the route log: "1: tables report_daily"
}

// tablePattern is one entry of PoolRule.Tables, lower case; schema ""
// for any schema.
type tablePattern struct{ schema, name string }

// checkPoolRules validates PoolRules against Pools and compiles them into
// c.rules. The key of an error is the DSN parameter for a rule the DSN
// can express (no Match), else the Config field.
func (c *Config) checkPoolRules() error {
	c.rules = nil
	for i, r := range c.PoolRules {
		key := "rwshard.poolTables"
		if r.Match != "" {
			key = "Config.PoolRules[" + strconv.Itoa(i) + "]"
		}
		if c.Pools[r.Pool] == nil {
			return configErr(key, r.Pool, "rule %d: no pool %q; pools: %s", i+1, r.Pool, strings.Join(slices.Sorted(maps.Keys(c.Pools)), ", "))
		}
		if len(r.Tables) == 0 && r.Match == "" {
			return configErr(key, r.Pool, "rule %d: give tables, a match, or both", i+1)
		}
		pr := poolRule{pool: r.Pool}
		var desc []string
		for _, t := range r.Tables {
			tp, err := parseTablePattern(t)
			if err != nil {
				return configErr(key, r.Pool+":"+t, "rule %d: %v", i+1, err)
			}
			pr.tables = append(pr.tables, tp)
		}
		if len(r.Tables) > 0 {
			desc = append(desc, "tables "+strings.Join(r.Tables, "|"))
		}
		if r.Match != "" {
			re, err := regexp.Compile(r.Match)
			if err != nil {
				return &ConfigError{Key: key + ".Match", Value: r.Match, Err: err}
			}
			pr.re = re
			desc = append(desc, "match "+strconv.Quote(r.Match))
		}
		pr.desc = strconv.Itoa(i+1) + ": " + strings.Join(desc, ", ")
		c.rules = append(c.rules, pr)
	}
	return nil
}

// parseTablePattern reads "name" or "schema.name", each part plain or a
// glob.
func parseTablePattern(s string) (tablePattern, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	schema, name, qualified := strings.Cut(s, ".")
	if !qualified {
		schema, name = "", s
	}
	if name == "" || qualified && schema == "" {
		return tablePattern{}, errEmptyTable
	}
	for _, part := range []string{schema, name} {
		if strings.ContainsAny(part, ".`") {
			return tablePattern{}, errBadTable
		}
		if _, err := path.Match(part, ""); err != nil {
			return tablePattern{}, errBadTable
		}
	}
	return tablePattern{schema: schema, name: name}, nil
}

var (
	errEmptyTable = errors.New("empty table name")
	errBadTable   = errors.New("not a table: want name or schema.name, a part may be a glob (*, ?, [a-z]), no quotes")
)

// poolTagger is the tag function of the cluster's classifier
// (route.NewTaggingClassifier): the 1-based index of the first pool rule
// that matches a read, 0 for none. It runs once per statement text; nil
// without rules, so that a connector without rules pays nothing.
func (c *Config) poolTagger() func(string, route.Class) int {
	if len(c.rules) == 0 {
		return nil
	}
	rules := c.rules
	db := strings.ToLower(c.Backend.DBName)
	return func(sql string, cls route.Class) int {
		if cls.Kind != route.Read {
			return 0 // only a read may run on a replica
		}
		var tables []string
		scanned := false
		for i := range rules {
			r := &rules[i]
			if len(r.tables) > 0 {
				if !scanned {
					tables, scanned = route.Tables(sql), true
				}
				if !r.readsTable(tables, db) {
					continue
				}
			}
			if r.re != nil && !r.re.MatchString(sql) {
				continue
			}
			return i + 1
		}
		return 0
	}
}

// readsTable reports whether one of tables (as route.Tables gives them)
// matches one of r's patterns; db is the connection's default schema.
func (r *poolRule) readsTable(tables []string, db string) bool {
	for _, t := range tables {
		schema, name, qualified := strings.Cut(t, ".")
		if !qualified {
			schema, name = db, t
		}
		for _, p := range r.tables {
			if p.schema != "" && !glob(p.schema, schema) {
				continue
			}
			if glob(p.name, name) {
				return true
			}
		}
	}
	return false
}

func glob(pattern, s string) bool {
	ok, _ := path.Match(pattern, s) // patterns are checked at Open
	return ok
}

// poolRule returns the rule that chose the pool of a read classified as
// cls, if any: the read is bound for a replica and names no pool itself.
func (cl *cluster) poolRule(cls route.Class) int {
	if cls.Tag <= 0 || cls.Tag > len(cl.cfg.rules) {
		return 0
	}
	return cls.Tag
}
