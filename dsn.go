package rwshard

import (
	"maps"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// paramPrefix marks the DSN parameters rwshard consumes; every other
// parameter goes to go-sql-driver/mysql for each host.
const paramPrefix = "rwshard."

// ParseDSN parses a multi-host DSN:
//
//	[user[:password]@]net(addr)[,net(addr)…]/dbname[?param=value&…]
//
// The first host is the primary, the others are replicas. Parameters with
// the "rwshard." prefix configure rwshard (docs/routing.md has the table); the
// others are go-sql-driver/mysql parameters applied to every host. Errors
// are *ConfigError naming the key and value; the password never appears.
func ParseDSN(dsn string) (*Config, error) {
	slash := strings.LastIndexByte(dsn, '/')
	if slash < 0 {
		return nil, configErr("dsn", "", "missing the slash before the database name (user:password@tcp(host:port),…/dbname)")
	}
	head, tail := dsn[:slash], dsn[slash:]
	at := strings.LastIndexByte(head, '@')
	userinfo, hostList := head[:at+1], head[at+1:]

	c := NewConfig()
	nodes, hostErr := parseHosts(hostList)
	c.Nodes = nodes
	addr := "127.0.0.1:3306" // only to let go-sql-driver check its parameters
	if len(nodes) > 0 {
		addr = nodes[0].Addr
	}

	// Split rwshard.* parameters from the backend's, keeping the latter
	// verbatim for go-sql-driver to parse.
	dbPart, query, _ := strings.Cut(tail, "?")
	var pass []string
	own := map[string]string{}
	if query != "" {
		for kv := range strings.SplitSeq(query, "&") {
			k, v, _ := strings.Cut(kv, "=")
			if !strings.HasPrefix(k, paramPrefix) {
				pass = append(pass, kv)
				continue
			}
			val, err := url.QueryUnescape(v)
			if err != nil {
				return nil, configErr(k, v, "invalid escaping")
			}
			if _, dup := own[k]; dup {
				return nil, configErr(k, val, "given twice")
			}
			own[k] = val
		}
	}
	backendDSN := userinfo + "tcp(" + addr + ")" + dbPart
	if len(pass) > 0 {
		backendDSN += "?" + strings.Join(pass, "&")
	}
	mc, err := mysql.ParseDSN(backendDSN)
	if err != nil {
		return nil, backendParamError(pass, err)
	}
	if err := unprefixedParam(mc.Params); err != nil {
		return nil, err
	}
	mc.Net, mc.Addr = "", ""
	c.Backend = mc

	// Apply rwshard parameters in a fixed order: names before weights.
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range own {
			if !yield(k) {
				return
			}
		}
	})
	slices.SortStableFunc(keys, func(a, b string) int {
		if a == paramPrefix+"names" {
			return -1
		}
		if b == paramPrefix+"names" {
			return 1
		}
		return 0
	})
	for _, k := range keys {
		if err := c.setParam(k, own[k]); err != nil {
			return nil, err
		}
	}
	if hostErr != nil && !(hostList == "" && c.Sharding.RulesFile != "") {
		return nil, hostErr
	}
	if err := c.normalize(); err != nil {
		return nil, err
	}
	return c, nil
}

// backendParamError names the go-sql-driver parameter a DSN error comes
// from, when one parameter alone reproduces it.
func backendParamError(pass []string, err error) error {
	for _, kv := range pass {
		if _, perr := mysql.ParseDSN("tcp(127.0.0.1:3306)/?" + kv); perr != nil {
			k, v, _ := strings.Cut(kv, "=")
			return &ConfigError{Key: k, Value: v, Err: perr}
		}
	}
	return &ConfigError{Key: "dsn", Err: err}
}

// unprefixedParam rejects an rwshard parameter written without its
// prefix (probeInterval=2s for rwshard.probeInterval=2s). go-sql-driver
// takes every parameter it does not know for a session variable (vars) and
// sets it on each connection it opens: the mistake would otherwise
// surface only later, as every connection failing with "Unknown system
// variable".
func unprefixedParam(vars map[string]string) error {
	if len(vars) == 0 {
		return nil
	}
	known := knownParams()
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		for _, name := range known {
			if strings.EqualFold(k, name) {
				return configErr(k, vars[k], "an rwshard parameter: write %s%s (unprefixed, go-sql-driver would set it on the server as a session variable)", paramPrefix, name)
			}
		}
	}
	return nil
}

// parseHosts parses "tcp(a:3306),tcp(b:3306),unix(/path)".
func parseHosts(list string) ([]Node, error) {
	if list == "" {
		return nil, configErr("hosts", "", "no host: give at least the primary, e.g. tcp(10.0.0.1:3306)")
	}
	var nodes []Node
	for rest := list; rest != ""; {
		open := strings.IndexByte(rest, '(')
		closing := strings.IndexByte(rest, ')')
		if open <= 0 || closing < open {
			return nil, configErr("hosts", rest, "expected net(address), e.g. tcp(10.0.0.1:3306)")
		}
		n := Node{Net: rest[:open], Addr: rest[open+1 : closing]}
		if n.Addr == "" {
			return nil, configErr("hosts", rest[:closing+1], "empty address")
		}
		if strings.HasPrefix(n.Net, "tcp") && strings.Contains(n.Addr, ",") {
			// tcp(h1,h2) would pass as one bracketed address, [h1,h2]:3306.
			return nil, configErr("hosts", rest[:closing+1], "one address per host: write tcp(h1:3306),tcp(h2:3306)")
		}
		if n.Net == "tcp" || n.Net == "tcp6" {
			if _, _, err := net.SplitHostPort(n.Addr); err != nil {
				n.Addr = net.JoinHostPort(n.Addr, "3306")
			}
			if _, _, err := net.SplitHostPort(n.Addr); err != nil {
				return nil, configErr("hosts", rest[:closing+1], "bad address: %v", err)
			}
		}
		nodes = append(nodes, n)
		rest = rest[closing+1:]
		if rest == "" {
			break
		}
		if rest[0] != ',' || len(rest) == 1 {
			return nil, configErr("hosts", rest, "hosts are separated by commas")
		}
		rest = rest[1:]
	}
	return nodes, nil
}

// setParam applies one rwshard.* parameter.
func (c *Config) setParam(key, val string) error {
	switch strings.TrimPrefix(key, paramPrefix) {
	case "names":
		names := strings.Split(val, ",")
		if len(names) != len(c.Nodes) {
			return configErr(key, val, "%d names for %d hosts", len(names), len(c.Nodes))
		}
		for i, name := range names {
			if name == "" {
				return configErr(key, val, "empty name for host %d", i+1)
			}
			c.Nodes[i].Name = name
		}
	case "balance":
		c.Balance = val
	case "weights":
		ws := strings.Split(val, ",")
		if len(ws) != len(c.Nodes) {
			return configErr(key, val, "%d weights for %d hosts (one per host, the primary first)", len(ws), len(c.Nodes))
		}
		c.Weights = make(map[string]float64, len(ws))
		for i, s := range ws {
			w, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
				return configErr(key, val, "weight %q of host %d is not a number >= 0", s, i+1)
			}
			name := c.Nodes[i].Name
			if name == "" {
				name = defaultName(i)
			}
			c.Weights[name] = w
		}
	case "pools":
		c.Pools = map[string][]string{}
		for item := range strings.SplitSeq(val, ",") {
			pool, nodes, ok := strings.Cut(item, ":")
			if !ok || pool == "" || nodes == "" {
				return configErr(key, val, "pool %q: want name:node|node,…", item)
			}
			if c.Pools[pool] != nil {
				return configErr(key, val, "pool %q named twice", pool)
			}
			c.Pools[pool] = strings.Split(nodes, "|")
		}
	case "poolTables":
		c.PoolRules = slices.DeleteFunc(c.PoolRules, func(r PoolRule) bool { return r.Match == "" })
		for item := range strings.SplitSeq(val, ",") {
			pool, tables, ok := strings.Cut(item, ":")
			if !ok || pool == "" || tables == "" {
				return configErr(key, val, "rule %q: want pool:table|table,…", item)
			}
			c.PoolRules = append(c.PoolRules, PoolRule{Pool: pool, Tables: strings.Split(tables, "|")})
		}
	case "galeraWriters":
		c.Galera.Writers = nil
		for name := range strings.SplitSeq(val, ",") {
			if name == "" {
				return configErr(key, val, "empty node name")
			}
			c.Galera.Writers = append(c.Galera.Writers, name)
		}
	case "replicaFunctions":
		c.ReplicaFunctions = nil
		for f := range strings.SplitSeq(val, ",") {
			if f = strings.TrimSpace(f); f == "" {
				return configErr(key, val, "empty function name")
			}
			c.ReplicaFunctions = append(c.ReplicaFunctions, f)
		}
	default:
		p, ok := paramByName[strings.TrimPrefix(key, paramPrefix)]
		if !ok {
			return configErr(key, val, "unknown rwshard parameter; known: %s", strings.Join(knownParams(), ", "))
		}
		return p.set(c, key, val)
	}
	return nil
}

// param is a scalar rwshard.* parameter: a Config field of type
// time.Duration, int, float64, bool or string (optionally one of a set).
type param struct {
	name  string
	field func(*Config) any // pointer to the field
	one   []string          // allowed values of a string field; nil: any
	help  string            // what a valid value looks like
}

// params lists the scalar parameters, sorted by name: the canonical order
// of FormatDSN.
var params = []param{
	{name: "causalTimeout", field: func(c *Config) any { return &c.CausalTimeout }},
	{name: "causalWait", field: func(c *Config) any { return (*string)(&c.CausalWait) }, one: []string{"fast", "wait"}},
	{name: "classifierCacheSize", field: func(c *Config) any { return &c.ClassifierCacheSize }},
	{name: "connMaxIdleTime", field: func(c *Config) any { return &c.ConnMaxIdleTime }},
	{name: "connMaxLifetime", field: func(c *Config) any { return &c.ConnMaxLifetime }},
	{name: "connWait", field: func(c *Config) any { return &c.ConnWait }},
	{name: "connectTimeout", field: func(c *Config) any { return &c.ConnectTimeout }},
	{name: "consistency", field: func(c *Config) any { return (*string)(&c.Consistency) }, one: []string{"eventual", "session", "causal", "universal"}},
	{name: "driverLog", field: func(c *Config) any { return (*string)(&c.DriverLog) }, one: []string{"stderr", "slog", "off"}},
	{name: "failAfter", field: func(c *Config) any { return &c.FailAfter }},
	{name: "fallback", field: func(c *Config) any { return (*string)(&c.Fallback) }, one: []string{"primary", "error"}},
	{name: "fleetSize", field: func(c *Config) any { return &c.FleetSize }},
	{name: "health", field: func(c *Config) any { return &c.Health }},
	{name: "galeraDonor", field: func(c *Config) any { return &c.Galera.Donor }},
	{name: "galeraMaxRecvQueue", field: func(c *Config) any { return &c.Galera.MaxRecvQueue }},
	{name: "galeraMaxWriters", field: func(c *Config) any { return &c.Galera.MaxWriters }},
	{name: "galeraNoFailback", field: func(c *Config) any { return &c.Galera.NoFailback }},
	{name: "heartbeatTable", field: func(c *Config) any { return &c.HeartbeatTable }, help: "a table name such as percona.heartbeat"},
	{name: "heartbeatWrite", field: func(c *Config) any { return &c.HeartbeatWrite }},
	{name: "holdLimit", field: func(c *Config) any { return &c.HoldLimit }},
	{name: "holdWarn", field: func(c *Config) any { return &c.HoldWarn }},
	{name: "logArgs", field: func(c *Config) any { return &c.LogArgs }},
	{name: "maxIdleConns", field: func(c *Config) any { return &c.MaxIdleConns }},
	{name: "maxOpenConns", field: func(c *Config) any { return &c.MaxOpenConns }},
	{name: "maxReplicaLag", field: func(c *Config) any { return &c.MaxReplicaLag }},
	{name: "poolFallback", field: func(c *Config) any { return &c.PoolFallback }, help: "error, primary, default or a pool name"},
	{name: "probeInterval", field: func(c *Config) any { return &c.ProbeInterval }},
	{name: "probeTimeout", field: func(c *Config) any { return &c.ProbeTimeout }},
	{name: "program", field: func(c *Config) any { return &c.Program }, help: "a program name for connection attributes"},
	{name: "readOnlyTx", field: func(c *Config) any { return (*string)(&c.ReadOnlyTx) }, one: []string{"primary", "replica"}},
	{name: "replayLimit", field: func(c *Config) any { return &c.ReplayLimit }},
	{name: "resetSession", field: func(c *Config) any { return &c.ResetSession }},
	{name: "retryBudget", field: func(c *Config) any { return &c.RetryBudget }},
	{name: "routeLog", field: func(c *Config) any { return &c.RouteLog }},
	{name: "rulesFile", field: func(c *Config) any { return &c.Sharding.RulesFile }, help: "the path of a sharding rules file"},
	{name: "sessionWindow", field: func(c *Config) any { return &c.SessionWindow }},
	{name: "shardConcurrency", field: func(c *Config) any { return &c.Sharding.Concurrency }},
	{name: "stmtCacheSize", field: func(c *Config) any { return &c.StmtCacheSize }},
	{name: "topology", field: func(c *Config) any { return (*string)(&c.Topology) }, one: []string{"replication", "galera"}},
	{name: "txReplay", field: func(c *Config) any { return &c.TxReplay }},
	{name: "txIdleTimeout", field: func(c *Config) any { return &c.TxIdleTimeout }},
	{name: "txWarnAge", field: func(c *Config) any { return &c.TxWarnAge }},
	{name: "writePause", field: func(c *Config) any { return &c.WritePause }},
	{name: "xa", field: func(c *Config) any { return &c.Sharding.XA }},
	{name: "xaRecoverInterval", field: func(c *Config) any { return &c.Sharding.XARecoverInterval }},
}

var paramByName = func() map[string]*param {
	m := make(map[string]*param, len(params))
	for i := range params {
		m[params[i].name] = &params[i]
	}
	return m
}()

func knownParams() []string {
	names := []string{"balance", "galeraWriters", "names", "pools", "poolTables", "replicaFunctions", "weights"}
	for _, p := range params {
		names = append(names, p.name)
	}
	slices.Sort(names)
	return names
}

// set parses val into the field.
func (p *param) set(c *Config, key, val string) error {
	switch f := p.field(c).(type) {
	case *time.Duration:
		d, err := time.ParseDuration(val)
		if err != nil || d < 0 {
			return configErr(key, val, "not a duration >= 0 such as 3s or 500ms")
		}
		*f = d
	case *int:
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			return configErr(key, val, "not an integer >= 0")
		}
		*f = n
	case *float64:
		x, err := strconv.ParseFloat(val, 64)
		if err != nil || !(x >= 0) || math.IsInf(x, 0) {
			return configErr(key, val, "not a number >= 0")
		}
		*f = x
	case *bool:
		b, err := strconv.ParseBool(val)
		if err != nil {
			return configErr(key, val, "not true or false")
		}
		*f = b
	case *string:
		if p.one != nil && !slices.Contains(p.one, val) {
			return configErr(key, val, "must be one of %s", strings.Join(p.one, ", "))
		}
		if val == "" {
			return configErr(key, val, "empty; want %s", p.help)
		}
		*f = val
	}
	return nil
}

// format returns the field as a DSN value, and whether it differs from
// def's.
func (p *param) format(c, def *Config) (string, bool) {
	v, d := p.field(c), p.field(def)
	switch f := v.(type) {
	case *time.Duration:
		return f.String(), *f != *d.(*time.Duration)
	case *int:
		return strconv.Itoa(*f), *f != *d.(*int)
	case *float64:
		return strconv.FormatFloat(*f, 'g', -1, 64), *f != *d.(*float64)
	case *bool:
		return strconv.FormatBool(*f), *f != *d.(*bool)
	case *string:
		return *f, *f != "" && *f != *d.(*string)
	}
	return "", false
}

// FormatDSN serializes c as a DSN that ParseDSN turns back into an equal
// Config: hosts in order, go-sql-driver parameters as go-sql-driver writes
// them, then rwshard parameters that differ from the defaults, sorted.
// What a DSN cannot express (Policy, per-node pool overrides, handles
// given to OpenDB) is left out. The DSN contains the password.
func (c *Config) FormatDSN() string {
	var b strings.Builder
	mc := c.Backend
	if mc == nil {
		mc = mysql.NewConfig()
	}
	mc = mc.Clone()
	// Let go-sql-driver write user, password, database and its parameters
	// around a placeholder host, then put the host list in its place.
	const placeholder = "tcp(127.0.0.1:3306)/"
	mc.Net, mc.Addr = "tcp", "127.0.0.1:3306"
	s := mc.FormatDSN()
	cut := strings.LastIndex(s, placeholder)
	b.WriteString(s[:cut])
	tail := s[cut+len(placeholder)-1:]
	for i, n := range c.Nodes {
		if i > 0 {
			b.WriteByte(',')
		}
		nt := n.Net
		if nt == "" {
			nt = "tcp"
		}
		b.WriteString(nt + "(" + n.Addr + ")")
	}
	b.WriteString(tail)
	sep := byte('?')
	if strings.IndexByte(tail, '?') >= 0 {
		sep = '&'
	}
	for _, p := range c.rwParams() {
		b.WriteByte(sep)
		sep = '&'
		b.WriteString(paramPrefix + p[0] + "=" + url.QueryEscape(p[1]))
	}
	return b.String()
}

// rwParams returns the rwshard parameters that differ from the defaults,
// sorted by key.
func (c *Config) rwParams() [][2]string {
	def := NewConfig()
	var out [][2]string
	add := func(k, v string) { out = append(out, [2]string{k, v}) }
	if c.Balance != "" && c.Balance != defaultBalance && !(c.Balance == "weighted" && len(c.Weights) > 0) {
		add("balance", c.Balance)
	}
	names, custom := make([]string, len(c.Nodes)), false
	for i, n := range c.Nodes {
		names[i] = n.Name
		custom = custom || (n.Name != "" && n.Name != defaultName(i))
	}
	if custom {
		add("names", strings.Join(names, ","))
	}
	if len(c.Galera.Writers) > 0 {
		add("galeraWriters", strings.Join(c.Galera.Writers, ","))
	}
	if len(c.ReplicaFunctions) > 0 {
		add("replicaFunctions", strings.Join(c.ReplicaFunctions, ","))
	}
	if len(c.Pools) > 0 {
		var items []string
		for _, pool := range slices.Sorted(maps.Keys(c.Pools)) {
			items = append(items, pool+":"+strings.Join(c.Pools[pool], "|"))
		}
		add("pools", strings.Join(items, ","))
	}
	var rules []string
	for _, r := range c.PoolRules {
		if r.Match == "" { // rules with a regular expression are Config-only
			rules = append(rules, r.Pool+":"+strings.Join(r.Tables, "|"))
		}
	}
	if len(rules) > 0 {
		add("poolTables", strings.Join(rules, ","))
	}
	if len(c.Weights) > 0 {
		ws := make([]string, len(c.Nodes))
		for i, n := range c.Nodes {
			ws[i] = strconv.FormatFloat(c.Weights[n.Name], 'g', -1, 64)
		}
		add("weights", strings.Join(ws, ","))
	}
	for i := range params {
		if v, differs := params[i].format(c, def); differs {
			add(params[i].name, v)
		}
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return out
}
