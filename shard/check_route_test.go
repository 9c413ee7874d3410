package shard

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What the proof promises: rules that Build accepts route every key of
// the right type. Each accepted rules file of the tests is routed here,
// key by key, over its algorithms' domains, in-process.

// acceptedRules are the rules files of the tests and the examples that
// Build accepts, by name.
func acceptedRules(t *testing.T) map[string]*Config {
	t.Helper()
	out := map[string]*Config{}
	for _, f := range []string{"native.yaml", "shardingsphere-5.2.yaml", "shardingsphere-5.4.yaml"} {
		c, err := LoadRules("testdata/rules/" + f)
		require.NoError(t, err, f)
		out[f] = c
	}
	const dsn = "app:pw@tcp(127.0.0.1:3306)/app"
	// The example's template and the lab tests' rules, with their DSNs
	// filled in; absent when the module is tested outside its repository.
	if b, err := os.ReadFile("../examples/sharding/rules.yaml.tmpl"); err == nil {
		src := regexp.MustCompile(`@DS_\d+_PRIMARY@`).ReplaceAllString(string(b), dsn)
		src = regexp.MustCompile(`@DS_\d+_REPLICAS@`).ReplaceAllString(src, `"`+dsn+`"`)
		c, err := ParseYAML([]byte(src))
		require.NoError(t, err, "examples/sharding/rules.yaml.tmpl")
		out["examples/sharding"] = c
	}
	if b, err := os.ReadFile("../internal/lab/labtest/rules.go"); err == nil {
		m := regexp.MustCompile("(?s)const shardRules = `(.*?)`").FindSubmatch(b)
		require.NotNil(t, m, "the lab tests' rules moved: update this test")
		c, err := ParseYAML([]byte(strings.ReplaceAll(string(m[1]), "%s", dsn)))
		require.NoError(t, err, "internal/lab/labtest")
		out["internal/lab/labtest"] = c
	}
	for _, pc := range proofCases {
		if pc.err != "" {
			continue
		}
		src := pc.yaml
		if !strings.Contains(src, "dataSources:") {
			src = proofSources + src
		}
		c, err := ParseYAML([]byte(src))
		require.NoError(t, err, pc.name)
		out["proof: "+pc.name] = c
	}
	return out
}

func TestProvedRulesRoute(t *testing.T) {
	for name, cfg := range acceptedRules(t) {
		t.Run(name, func(t *testing.T) {
			rules, err := cfg.Build(nil)
			require.NoError(t, err)
			r := NewRouter(rules)
			rng := rand.New(rand.NewPCG(1, uint64(len(name))))
			for _, tname := range sortedNames(rules.Tables) {
				assert.NoError(t, routeDomain(r, rules.Tables[tname], rng))
			}
		})
	}
}

// The keys above do reach the failures: the rules the proof refuses
// fail to route some of them.
func TestRefusedRulesFailToRoute(t *testing.T) {
	for _, pc := range proofCases {
		if pc.err == "" {
			continue
		}
		t.Run(pc.name, func(t *testing.T) {
			src := pc.yaml
			if !strings.Contains(src, "dataSources:") {
				src = proofSources + src
			}
			cfg, err := ParseYAML([]byte(src))
			require.NoError(t, err)
			rules, chk, err := cfg.Check(nil)
			if err != nil {
				t.Skip("refused before the proof:", err)
			}
			require.NotEmpty(t, chk.Problems)
			r := NewRouter(rules)
			rng := rand.New(rand.NewPCG(1, 2))
			var failed error
			for _, tname := range sortedNames(rules.Tables) {
				if err := routeDomain(r, rules.Tables[tname], rng); err != nil {
					failed = err
				}
			}
			require.Error(t, failed, "the proof refused rules that route every key tried")
			t.Log(failed)
		})
	}
}

// routeDomain routes keys of every strategy of t: a query on each
// sharding column, and an INSERT with every sharding column, which must
// land on exactly one of t's data nodes. It returns the first failure.
func routeDomain(r *Router, tr *TableRule, rng *rand.Rand) error {
	var strategies []*Strategy
	for _, s := range []*Strategy{tr.DatabaseStrategy, tr.TableStrategy} {
		if s != nil {
			strategies = append(strategies, s)
		}
	}
	// Keys by column: those of every algorithm on it, kept when every
	// algorithm on it takes them (INTERVAL's steps, INLINE's keys >= 0).
	keys := map[string][]Value{}
	var cols []string
	for _, s := range strategies {
		if !slices.Contains(cols, s.Column) {
			cols = append(cols, s.Column)
		}
		keys[s.Column] = append(keys[s.Column], domainKeys(s.Algorithm, rng)...)
	}
	if len(cols) == 0 {
		return nil
	}
	for _, col := range cols {
		var in []Value
		for _, v := range keys[col] {
			if !slices.ContainsFunc(strategies, func(s *Strategy) bool { return s.Column == col && !inDomain(s.Algorithm, v) }) {
				in = append(in, v)
			}
		}
		keys[col] = in
		for _, v := range in {
			rt, err := r.Route("SELECT * FROM "+tr.Logical+" WHERE "+col+" = ?", routeArgs(v))
			if err != nil {
				return fmt.Errorf("table %s, %s = %s: %w", tr.Logical, col, describeValue(v), err)
			}
			if len(rt.Units) == 0 {
				return fmt.Errorf("table %s, %s = %s: no unit", tr.Logical, col, describeValue(v))
			}
		}
	}
	// INSERT: every sharding column; pairs at random when there are two.
	n := 0
	for _, col := range cols {
		n = max(n, len(keys[col]))
	}
	sql := "INSERT INTO " + tr.Logical + " (" + strings.Join(cols, ", ") + ") VALUES (" +
		strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	for i := 0; i < n; i++ {
		args := make([]any, len(cols))
		for j, col := range cols {
			ks := keys[col]
			if len(ks) == 0 {
				return nil
			}
			args[j] = ks[i%len(ks)]
			if j > 0 {
				args[j] = ks[rng.IntN(len(ks))]
			}
		}
		rt, err := r.Route(sql, routeArgs(args...))
		if err != nil {
			return fmt.Errorf("table %s, %v = %v: %w", tr.Logical, cols, args, err)
		}
		if len(rt.Units) != 1 {
			return fmt.Errorf("table %s, %v = %v: %d units", tr.Logical, cols, args, len(rt.Units))
		}
		u := rt.Units[0]
		if !slices.ContainsFunc(tr.DataNodes, func(dn DataNode) bool {
			return dn.DataSource == u.DataSource && regexp.MustCompile(`\b`+regexp.QuoteMeta(dn.Table)+`\b`).MatchString(u.SQL)
		}) {
			return fmt.Errorf("table %s, %v = %v: %s on %s is none of its data nodes", tr.Logical, cols, args, u.SQL, u.DataSource)
		}
	}
	return nil
}

// domainKeys returns keys of the right type for alg: its edges, a few
// classes of each kind, and random ones.
func domainKeys(alg Algorithm, rng *rand.Rand) []Value {
	var out []Value
	ints := func(lo, hi int64) {
		for x := lo; x <= hi; x++ {
			out = append(out, x)
		}
	}
	random := func(n int, nonNegative bool) {
		for range n {
			x := int64(rng.Uint64())
			if nonNegative {
				x = rng.Int64N(1 << 40)
			}
			out = append(out, x)
		}
	}
	switch a := alg.(type) {
	case *modAlgorithm:
		k := int64(min(a.count, 512))
		ints(-2*k-1, 2*k+1)
		out = append(out, int64(math.MinInt64), int64(math.MaxInt64), uint64(math.MaxUint64),
			"123456789012345678901234567890", "-98765432109876543210")
		random(200, false)
	case *hashModAlgorithm, *javaHashModAlgorithm:
		ints(-64, 64)
		out = append(out, int64(math.MinInt64), int64(math.MaxInt64), int64(math.MinInt32), int64(math.MaxInt32))
		random(500, false)
	case *rangeAlgorithm:
		for p := int64(0); p <= min(a.lastPartition(), 1024); p++ {
			s := a.partitionStart(p)
			out = append(out, s, s+1, s+2)
			if s > math.MinInt64 {
				out = append(out, s-1)
			}
		}
		out = append(out, int64(math.MaxInt64), uint64(math.MaxUint64), "-123456789012345678901234567890")
		random(100, false)
	case *intervalAlgorithm:
		for k := 0; k < len(a.suffixes) && k < 4096; k++ {
			s, e := a.starts[k], a.starts[k+1]
			out = append(out, s, s.Add(e.Sub(s)/2), e.Add(-time.Second))
		}
	case *inlineAlgorithm:
		_, _, period, ok := a.inlineNames()
		if ok {
			ints(0, min(int64(3*period+5), 4096))
		}
		random(200, true)
	}
	return out
}

// inDomain reports whether v is a key of the right type for alg: the
// proof's assumptions (INTERVAL's values within its steps, INLINE's keys
// >= 0).
func inDomain(alg Algorithm, v Value) bool {
	switch a := alg.(type) {
	case *intervalAlgorithm:
		t, _, err := a.timeOf(v)
		if err != nil {
			return false
		}
		k := a.step(t)
		return k >= 0 && k < len(a.suffixes)
	case *inlineAlgorithm:
		x, ok := int64Of(v)
		return ok && x >= 0
	case *javaHashModAlgorithm:
		if a.valueType == "int" {
			x, ok := int64Of(v)
			return ok && x >= math.MinInt32 && x <= math.MaxInt32
		}
		_, ok := int64Of(v)
		return ok || a.valueType == "string"
	case *hashModAlgorithm:
		if a.valueType == "long" {
			_, ok := int64Of(v)
			return ok
		}
	}
	return true
}
