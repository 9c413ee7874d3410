package shard

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard/balance"
)

// Config.Build's validation and resolution, step by step.

// builder holds the state of one Build.
type builder struct {
	c      *Config
	custom map[string]Algorithm
	algs   map[string]Algorithm // by name: built and custom
	r      *Rules
	// strategy configurations in effect per logical table, for the
	// binding checks.
	dbCfg, tblCfg map[string]*StrategyConfig
	// strategyKeys: per logical table, the keys of its database and
	// table strategies (the table's own, or the default), for the
	// proof's errors.
	strategyKeys map[string][2]string
}

func (b *builder) build() error {
	c := b.c
	b.r = &Rules{
		DataSources:          map[string]*DataSource{},
		Tables:               map[string]*TableRule{},
		KeyGenerators:        map[string]KeyGenerator{},
		MaxBroadcastShards:   c.MaxBroadcastShards,
		RefuseBroadcastReads: c.RefuseBroadcastReads,
		AllowBroadcastWrites: c.AllowBroadcastWrites,
	}
	b.dbCfg, b.tblCfg = map[string]*StrategyConfig{}, map[string]*StrategyConfig{}
	b.strategyKeys = map[string][2]string{}
	steps := []func() error{
		b.dataSources, b.defaultDataSource, b.algorithms, b.keyGenerators,
		b.defaultStrategies, b.broadcast, b.tables, b.binding,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	if c.MaxBroadcastShards < 0 {
		return c.errAt("maxBroadcastShards", "%d: must be >= 0 (0: no bound)", c.MaxBroadcastShards)
	}
	return nil
}

// checkConfigName accepts a data source, table or algorithm name: not empty,
// no blanks, and none of the characters that data node expressions and
// lists use.
func checkConfigName(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	if i := strings.IndexAny(name, " \t\r\n.,$'\"`{}"); i >= 0 {
		return fmt.Errorf("name %q: contains %q", name, name[i])
	}
	return nil
}

func (b *builder) dataSources() error {
	c := b.c
	if len(c.DataSources) == 0 {
		return c.errAt("dataSources", "no data source defined")
	}
	for _, name := range sortedNames(c.DataSources) {
		d := c.DataSources[name]
		key := "dataSources." + name
		if err := checkConfigName(name); err != nil {
			return c.wrapAt(key, err)
		}
		if strings.TrimSpace(d.Primary) == "" {
			return c.errAt(key+".primary", "no primary DSN")
		}
		if err := checkDSN(d.Primary); err != nil {
			return c.wrapAt(key+".primary", err)
		}
		for i, r := range d.Replicas {
			if strings.TrimSpace(r) == "" {
				return c.errAt(key+".replicas["+strconv.Itoa(i)+"]", "empty DSN")
			}
			if err := checkDSN(r); err != nil {
				return c.wrapAt(key+".replicas["+strconv.Itoa(i)+"]", err)
			}
		}
		bal := d.Balance
		if bal == "" && len(d.Weights) > 0 {
			bal = "weighted"
		}
		if bal != "" && !slices.Contains(balance.Names(), bal) {
			return c.errAt(key+".balance", "unknown policy %q; valid: %s", bal, strings.Join(balance.Names(), ", "))
		}
		if bal == "weighted" && len(d.Weights) == 0 {
			return c.errAt(key+".balance", "weighted needs weights, one per replica")
		}
		if len(d.Weights) > 0 {
			if bal != "weighted" {
				return c.errAt(key+".weights", "weights need balance weighted, not %s", bal)
			}
			if len(d.Weights) != len(d.Replicas) {
				return c.errAt(key+".weights", "%d weights for %d replicas: want one per replica", len(d.Weights), len(d.Replicas))
			}
			sum := 0.0
			for i, w := range d.Weights {
				if !(w >= 0) || math.IsInf(w, 1) || w > 1e12 {
					return c.errAt(key+".weights["+strconv.Itoa(i)+"]", "%v: weights must be finite numbers >= 0", w)
				}
				sum += w
			}
			if sum == 0 {
				return c.errAt(key+".weights", "all weights are 0: no replica would serve reads")
			}
		}
		b.r.DataSources[name] = &DataSource{
			Name:     name,
			Primary:  d.Primary,
			Replicas: cloneOrNil(d.Replicas),
			Balance:  bal,
			Weights:  cloneOrNil(d.Weights),
		}
	}
	return nil
}

// checkDSN parses a go-sql-driver/mysql DSN; its error never quotes the
// password.
func checkDSN(dsn string) error {
	if _, err := mysql.ParseDSN(dsn); err != nil {
		return fmt.Errorf("not a go-sql-driver/mysql DSN: %v", err)
	}
	return nil
}

func (b *builder) defaultDataSource() error {
	c := b.c
	if c.DefaultDataSource == "" {
		return nil
	}
	if _, ok := c.DataSources[c.DefaultDataSource]; !ok {
		return c.errAt("defaultDataSource", "%q is not defined; dataSources: %s",
			c.DefaultDataSource, strings.Join(sortedNames(c.DataSources), ", "))
	}
	b.r.DefaultDataSource = c.DefaultDataSource
	return nil
}

func (b *builder) algorithms() error {
	c := b.c
	for _, name := range sortedNames(b.custom) {
		if err := checkConfigName(name); err != nil {
			return c.wrapAt("custom algorithm", err)
		}
		if b.custom[name] == nil {
			return c.errAt("custom algorithm "+name, "nil Algorithm")
		}
		b.algs[name] = b.custom[name]
	}
	for _, name := range sortedNames(c.Algorithms) {
		a := c.Algorithms[name]
		key := "algorithms." + name
		typ, err := entryType(c, key, name, a.Type, "algorithm")
		if err != nil {
			return err
		}
		_, isCustom := b.custom[name]
		if typ == TypeClassBased {
			if !isCustom {
				return c.errAt(key+".type", "%s names a Java class; pass a Go Algorithm named %q to Build", TypeClassBased, name)
			}
			continue // the custom algorithm stands in for it
		}
		if isCustom {
			return c.errAt(key, "defined here and as a custom algorithm")
		}
		if err := checkProps(c, key, typ, a.Props, algorithmProps); err != nil {
			return err
		}
		alg, err := NewAlgorithm(a.Type, a.Props)
		if err != nil {
			return c.wrapAt(propErrorKey(key, err), err)
		}
		b.algs[name] = alg
	}
	return nil
}

// entryType checks the name of the algorithm or key generator (kind) at
// key and returns its type in upper case.
func entryType(c *Config, key, name, typ, kind string) (string, error) {
	if err := checkConfigName(name); err != nil {
		return "", c.wrapAt(key, err)
	}
	typ = strings.ToUpper(strings.TrimSpace(typ))
	if typ == "" {
		return "", c.errAt(key+".type", "no %s type", kind)
	}
	return typ, nil
}

// algorithmProps lists the properties each built-in algorithm type
// knows (see NewAlgorithm). NewAlgorithm ignores unknown properties, as
// ShardingSphere does; a configuration must not: a misspelled property
// would silently fall back to a default.
var algorithmProps = map[string][]string{
	TypeMod:           {"sharding-count", "start-offset", "stop-offset", "zero-padding"},
	TypeHashMod:       {"sharding-count", "value-type"},
	TypeSSHashMod:     {"sharding-count", "value-type"},
	TypeJavaHashMod:   {"sharding-count", "value-type"},
	TypeBoundaryRange: {"sharding-ranges"},
	TypeVolumeRange:   {"range-lower", "range-upper", "sharding-volume"},
	TypeInterval: {"datetime-pattern", "datetime-lower", "datetime-upper", "sharding-suffix-pattern",
		"datetime-interval-amount", "datetime-interval-unit"},
	TypeInline: {"algorithm-expression", "allow-range-query-with-inline-sharding"},
}

// keyGeneratorProps lists the properties each key generator type knows
// (see NewKeyGenerator).
var keyGeneratorProps = map[string][]string{
	TypeSnowflake: {"worker-id", "max-tolerate-time-difference-milliseconds", "max-vibration-offset"},
}

// checkProps rejects a property that a known type does not know. Types
// that are not in known are left to the constructor, which rejects them.
func checkProps(c *Config, key, typ string, props map[string]string, known map[string][]string) error {
	names, ok := known[typ]
	if !ok {
		return nil
	}
	for _, p := range sortedNames(props) {
		if !slices.Contains(names, p) {
			return c.errAt(key+".props."+p, "unknown property of %s; known: %s", typ, strings.Join(names, ", "))
		}
	}
	return nil
}

// propErrorKey narrows key to the property or type an error from
// NewAlgorithm or NewKeyGenerator is about.
func propErrorKey(key string, err error) string {
	var pe *PropError
	if errors.As(err, &pe) {
		if pe.Prop != "" {
			return key + ".props." + pe.Prop
		}
		return key + ".type"
	}
	return key
}

func (b *builder) keyGenerators() error {
	c := b.c
	for _, name := range sortedNames(c.KeyGenerators) {
		g := c.KeyGenerators[name]
		key := "keyGenerators." + name
		typ, err := entryType(c, key, name, g.Type, "key generator")
		if err != nil {
			return err
		}
		if err := checkProps(c, key, typ, g.Props, keyGeneratorProps); err != nil {
			return err
		}
		kg, err := NewKeyGenerator(g.Type, g.Props, nil) // nil: time.Now
		if err != nil {
			return c.wrapAt(propErrorKey(key, err), err)
		}
		b.r.KeyGenerators[name] = kg
	}
	return nil
}

func (b *builder) defaultStrategies() error {
	for _, s := range []struct {
		key string
		cfg *StrategyConfig
	}{
		{"defaultDatabaseStrategy", b.c.DefaultDatabaseStrategy},
		{"defaultTableStrategy", b.c.DefaultTableStrategy},
	} {
		if _, err := b.strategy(s.key, s.cfg); err != nil {
			return err
		}
	}
	return nil
}

// strategy resolves a strategy configuration; nil and None give nil.
func (b *builder) strategy(key string, s *StrategyConfig) (*Strategy, error) {
	c := b.c
	if s == nil {
		return nil, nil
	}
	if s.None {
		if s.Column != "" || s.Algorithm != "" {
			return nil, c.errAt(key+".none", "none excludes column and algorithm")
		}
		return nil, nil
	}
	col := strings.ToLower(strings.TrimSpace(s.Column))
	if col == "" {
		return nil, c.errAt(key+".column", "no sharding column")
	}
	if s.Algorithm == "" {
		return nil, c.errAt(key+".algorithm", "no algorithm")
	}
	alg, ok := b.algs[s.Algorithm]
	if !ok {
		return nil, c.errAt(key+".algorithm", "%q is not defined; algorithms: %s", s.Algorithm, b.algorithmNames())
	}
	return &Strategy{Column: col, Algorithm: alg, AlgorithmName: s.Algorithm}, nil
}

func (b *builder) algorithmNames() string {
	if len(b.c.Algorithms) == 0 && len(b.custom) == 0 {
		return "(none)"
	}
	names := sortedNames(b.c.Algorithms)
	for n := range b.custom {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func (b *builder) tables() error {
	c := b.c
	seen := map[string]string{} // lower-case → name as written
	for _, name := range sortedNames(c.Tables) {
		t := c.Tables[name]
		key := "tables." + name
		if err := checkConfigName(name); err != nil {
			return c.wrapAt(key, err)
		}
		logical := strings.ToLower(name)
		if other, dup := seen[logical]; dup {
			return c.errAt(key, "same table as tables.%s: logical table names are case-insensitive", other)
		}
		seen[logical] = name

		nodes, err := b.dataNodes(key+".dataNodes", t.DataNodes)
		if err != nil {
			return err
		}
		rule := &TableRule{Logical: logical, DataNodes: nodes, AllowBroadcastWrites: t.AllowBroadcastWrites}

		dbCfg, dbKey := t.DatabaseStrategy, key+".databaseStrategy"
		if dbCfg == nil {
			dbCfg, dbKey = c.DefaultDatabaseStrategy, "defaultDatabaseStrategy"
		}
		if rule.DatabaseStrategy, err = b.strategy(dbKey, dbCfg); err != nil {
			return err
		}
		tblCfg, tblKey := t.TableStrategy, key+".tableStrategy"
		if tblCfg == nil {
			tblCfg, tblKey = c.DefaultTableStrategy, "defaultTableStrategy"
		}
		if rule.TableStrategy, err = b.strategy(tblKey, tblCfg); err != nil {
			return err
		}
		if err := b.unambiguous(key, rule); err != nil {
			return err
		}
		if kg := t.KeyGenerator; kg != nil {
			rule.KeyColumn = strings.ToLower(strings.TrimSpace(kg.Column))
			if rule.KeyColumn == "" {
				return c.errAt(key+".keyGenerator.column", "no key column")
			}
			if kg.Generator == "" {
				return c.errAt(key+".keyGenerator.generator", "no key generator")
			}
			if _, ok := c.KeyGenerators[kg.Generator]; !ok {
				names := "(none)"
				if len(c.KeyGenerators) > 0 {
					names = strings.Join(sortedNames(c.KeyGenerators), ", ")
				}
				return c.errAt(key+".keyGenerator.generator", "%q is not defined; keyGenerators: %s", kg.Generator, names)
			}
			rule.KeyGenerator = kg.Generator
		}
		b.r.Tables[logical] = rule
		b.strategyKeys[logical] = [2]string{dbKey, tblKey}
		if rule.DatabaseStrategy != nil {
			b.dbCfg[logical] = dbCfg
		}
		if rule.TableStrategy != nil {
			b.tblCfg[logical] = tblCfg
		}
	}
	return nil
}

func (b *builder) dataNodes(key, expr string) ([]DataNode, error) {
	c := b.c
	if strings.TrimSpace(expr) == "" {
		return nil, c.errAt(key, "no data nodes")
	}
	nodes, err := ExpandDataNodes(expr)
	if err != nil {
		return nil, c.wrapAt(key, err)
	}
	if len(nodes) == 0 {
		return nil, c.errAt(key, "no data nodes")
	}
	seen := make(map[DataNode]bool, len(nodes))
	for _, n := range nodes {
		if n.DataSource == "" {
			return nil, c.errAt(key, "data node %s has no data source: want data_source.table", n.Table)
		}
		if _, ok := c.DataSources[n.DataSource]; !ok {
			return nil, c.errAt(key, "data node %s: data source %q is not defined; dataSources: %s",
				n, n.DataSource, strings.Join(sortedNames(c.DataSources), ", "))
		}
		if n.Table == "" {
			return nil, c.errAt(key, "data node %s: no table name", n)
		}
		if seen[n] {
			return nil, c.errAt(key, "data node %s appears twice", n)
		}
		seen[n] = true
	}
	return nodes, nil
}

// unambiguous checks that every row of the table has exactly one home:
// without a database strategy the data source must follow from the
// table, without a table strategy the table from the data source.
func (b *builder) unambiguous(key string, t *TableRule) error {
	c := b.c
	if len(t.DataNodes) == 1 {
		return nil
	}
	var order []string
	tablesIn := map[string][]string{}
	for _, n := range t.DataNodes {
		if _, ok := tablesIn[n.DataSource]; !ok {
			order = append(order, n.DataSource)
		}
		tablesIn[n.DataSource] = append(tablesIn[n.DataSource], n.Table)
	}
	const hint = "; set a strategy (or a default one), or make it a broadcast table"
	if t.DatabaseStrategy == nil && t.TableStrategy == nil {
		return c.errAt(key, "%d data nodes and no sharding strategy: a row would have no single home (ambiguous)%s",
			len(t.DataNodes), hint)
	}
	if t.DatabaseStrategy == nil && len(order) > 1 {
		where := map[string]string{}
		for _, n := range t.DataNodes {
			if ds, dup := where[n.Table]; dup {
				return c.errAt(key, "no database strategy, and table %s is in data sources %s and %s (ambiguous)%s",
					n.Table, ds, n.DataSource, hint)
			}
			where[n.Table] = n.DataSource
		}
	}
	if t.TableStrategy == nil {
		for _, ds := range order {
			if tbls := tablesIn[ds]; len(tbls) > 1 {
				return c.errAt(key, "no table strategy, and data source %s holds %d of its tables (%s) (ambiguous)%s",
					ds, len(tbls), strings.Join(tbls, ", "), hint)
			}
		}
	}
	return nil
}

func (b *builder) broadcast() error {
	c := b.c
	seen := map[string]bool{}
	for i, name := range c.BroadcastTables {
		key := "broadcastTables[" + strconv.Itoa(i) + "]"
		if err := checkConfigName(name); err != nil {
			return c.wrapAt(key, err)
		}
		l := strings.ToLower(name)
		if seen[l] {
			return c.errAt(key, "%s is listed twice", name)
		}
		seen[l] = true
		for t := range c.Tables {
			if strings.EqualFold(t, name) {
				return c.errAt(key, "%s is also a sharded table (tables.%s): a table is either sharded or broadcast", name, t)
			}
		}
		b.r.Broadcast = append(b.r.Broadcast, l)
	}
	return nil
}

func (b *builder) binding() error {
	c := b.c
	inGroup := map[string]string{} // table → key of its group
	for i, group := range c.BindingTables {
		key := "bindingTables[" + strconv.Itoa(i) + "]"
		if len(group) < 2 {
			return c.errAt(key, "a binding group needs at least two tables, got %d", len(group))
		}
		var names []string
		for j, name := range group {
			tkey := key + "[" + strconv.Itoa(j) + "]"
			l := strings.ToLower(strings.TrimSpace(name))
			if _, ok := b.r.Tables[l]; !ok {
				if slices.Contains(b.r.Broadcast, l) {
					return c.errAt(tkey, "%s is a broadcast table; binding tables must be sharded", name)
				}
				return c.errAt(tkey, "%q is not a sharded table; tables: %s", name, strings.Join(b.tableNames(), ", "))
			}
			if other, dup := inGroup[l]; dup {
				return c.errAt(tkey, "%s is already in %s: a table belongs to one binding group", name, other)
			}
			inGroup[l] = key
			names = append(names, l)
		}
		for j := 1; j < len(names); j++ {
			if err := b.bindable(key+"["+strconv.Itoa(j)+"]", names[0], names[j]); err != nil {
				return err
			}
		}
		b.r.BindingGroups = append(b.r.BindingGroups, names)
	}
	return nil
}

func (b *builder) tableNames() []string {
	names := make([]string, 0, len(b.r.Tables))
	for n := range b.r.Tables {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// bindable checks that table t shards like table first of its group.
func (b *builder) bindable(key, first, t string) error {
	c := b.c
	a, o := b.r.Tables[first], b.r.Tables[t]
	if len(a.DataNodes) != len(o.DataNodes) {
		return c.errAt(key, "%s has %d data nodes, %s has %d: binding tables need the same data node layout",
			t, len(o.DataNodes), first, len(a.DataNodes))
	}
	for i := range a.DataNodes {
		if a.DataNodes[i].DataSource != o.DataNodes[i].DataSource {
			return c.errAt(key, "data node %d of %s is %s, of %s is %s: binding tables need their data nodes in the same data sources, in the same order",
				i, t, o.DataNodes[i], first, a.DataNodes[i])
		}
	}
	for _, lv := range []struct {
		level    string
		sa, so   *Strategy
		ca, co   *StrategyConfig
		prefixes func(*TableRule) string
	}{
		{"database", a.DatabaseStrategy, o.DatabaseStrategy, b.dbCfg[first], b.dbCfg[t], dataSourcePrefix},
		{"table", a.TableStrategy, o.TableStrategy, b.tblCfg[first], b.tblCfg[t], tablePrefix},
	} {
		switch {
		case lv.sa == nil && lv.so == nil:
			continue
		case lv.sa == nil || lv.so == nil:
			return c.errAt(key, "%s shards on the %s level and %s does not: binding tables must shard alike",
				pickName(lv.sa != nil, first, t), lv.level, pickName(lv.sa != nil, t, first))
		}
		sha := b.shape(lv.ca.Algorithm, lv.sa.Column, lv.prefixes(a))
		sho := b.shape(lv.co.Algorithm, lv.so.Column, lv.prefixes(o))
		if sha != sho && lv.ca.Algorithm == lv.co.Algorithm {
			return c.errAt(key, "%s strategy algorithm %q does not fit %s as it fits %s (an INLINE expression must name each table's own nodes): binding tables must shard alike",
				lv.level, lv.co.Algorithm, t, first)
		}
		if sha != sho {
			return c.errAt(key, "%s strategy of %s uses algorithm %q, of %s %q, and they are not equivalent: binding tables must shard alike",
				lv.level, t, lv.co.Algorithm, first, lv.ca.Algorithm)
		}
	}
	if a.TableStrategy == nil {
		return nil
	}
	// The router pairs the i-th table of each member in a data source,
	// while the algorithms pick by name: t_order_1 must face
	// t_order_item_1, or a join reads the wrong pair.
	pa, po := tablePrefix(a), tablePrefix(o)
	for i := range a.DataNodes {
		sa := strings.TrimPrefix(a.DataNodes[i].Table, pa)
		so := strings.TrimPrefix(o.DataNodes[i].Table, po)
		if !sameTableSuffix(sa, so) {
			return c.errAt(key, "data node %d of %s is %s, of %s is %s: binding tables need tables with the same suffixes, in the same order",
				i, t, o.DataNodes[i], first, a.DataNodes[i])
		}
	}
	return nil
}

// sameTableSuffix compares the suffixes of two binding tables' tables:
// equal, or numbers of equal value (t_order_01 and t_order_item_1, which
// MOD and the other numbered algorithms take alike).
func sameTableSuffix(a, b string) bool {
	if a == b {
		return true
	}
	x, okA := trailingNumber(a)
	y, okB := trailingNumber(b)
	return okA && okB && x == y && proofDigits(a) && proofDigits(b)
}

func pickName(cond bool, a, b string) string {
	if cond {
		return a
	}
	return b
}

// shape describes an algorithm for the binding comparison: the name of a
// custom algorithm; else the type and the properties, an INLINE
// expression with the data-node prefix and the sharding column replaced
// by placeholders.
func (b *builder) shape(name, column, prefix string) string {
	a, ok := b.c.Algorithms[name]
	if !ok || strings.EqualFold(strings.TrimSpace(a.Type), TypeClassBased) {
		return "custom\x00" + name
	}
	typ := strings.ToUpper(strings.TrimSpace(a.Type))
	if typ == TypeJavaHashMod {
		typ = TypeSSHashMod
	}
	var sb strings.Builder
	sb.WriteString(typ)
	for _, k := range sortedNames(a.Props) {
		v := strings.TrimSpace(a.Props[k])
		if typ == TypeInline && k == "algorithm-expression" {
			if prefix != "" {
				v = strings.ReplaceAll(v, prefix, "\x00P")
			}
			v = replaceIdent(v, column, "\x00C")
		}
		sb.WriteString("\x00" + k + "=" + v)
	}
	return sb.String()
}

// replaceIdent replaces the occurrences of word in s that are not part of
// a longer identifier, without regard to case.
func replaceIdent(s, word, with string) string {
	if word == "" {
		return s
	}
	ident := func(c byte) bool {
		return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	var out strings.Builder
	for i := 0; i < len(s); {
		if i+len(word) <= len(s) && strings.EqualFold(s[i:i+len(word)], word) &&
			(i == 0 || !ident(s[i-1])) && (i+len(word) == len(s) || !ident(s[i+len(word)])) {
			out.WriteString(with)
			i += len(word)
			continue
		}
		out.WriteByte(s[i])
		i++
	}
	return out.String()
}

// dataSourcePrefix and tablePrefix are the longest common prefixes of a
// table's data source and table names: what ShardingSphere strips from an
// INLINE expression before comparing binding tables' algorithms.
func dataSourcePrefix(t *TableRule) string {
	names := make([]string, len(t.DataNodes))
	for i, n := range t.DataNodes {
		names[i] = n.DataSource
	}
	return namePrefix(names)
}

func tablePrefix(t *TableRule) string {
	names := make([]string, len(t.DataNodes))
	for i, n := range t.DataNodes {
		names[i] = n.Table
	}
	return namePrefix(names)
}

func namePrefix(names []string) string {
	if len(names) == 0 {
		return ""
	}
	p := names[0]
	for _, n := range names[1:] {
		i := 0
		for i < len(p) && i < len(n) && p[i] == n[i] {
			i++
		}
		p = p[:i]
	}
	// t_order_10 and t_order_11 share "t_order_1", but the prefix an
	// expression spells is "t_order_".
	return strings.TrimRight(p, "0123456789")
}

// cloneOrNil copies a slice; empty is nil.
func cloneOrNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// sortedNames returns the keys of m in order.
func sortedNames[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
