package shard

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// The ShardingSphere-JDBC 5.x dialect of ParseYAML. The package
// documentation lists what is supported, what is accepted without
// effect and why, and what is refused.

// ssIgnoredDataSourceKeys are data source keys accepted without effect,
// with the reason (see the package documentation).
var ssIgnoredDataSourceKeys = map[string]string{
	"dataSourceClassName": "the Java pool class; rwshard pools with database/sql",
	"driverClassName":     "the Java JDBC driver class; rwshard connects with go-sql-driver/mysql",
	"type":                "the Java pool class (older spelling of dataSourceClassName)",
	"poolName":            "a Java pool's name",
	"maximumPoolSize":     "pool sizing is the driver Config's (rwshard.maxOpenConns, …)",
	"minimumIdle":         "pool sizing is the driver Config's (rwshard.maxIdleConns)",
	"maxLifetime":         "pool sizing is the driver Config's (rwshard.connMaxLifetime)",
	"idleTimeout":         "pool sizing is the driver Config's (rwshard.connMaxIdleTime)",
	"connectionTimeout":   "the wait for a pooled connection; database/sql waits for the caller's context",
	"keepaliveTime":       "pool upkeep; rwshard's health probes check every node",
	"validationTimeout":   "pool upkeep; rwshard's health probes check every node",
	"connectionTestQuery": "pool upkeep; rwshard's health probes check every node",
}

// ssSupportedRules lists the rule tags the dialect takes.
const ssSupportedRules = "!SHARDING, !READWRITE_SPLITTING, !BROADCAST, !SINGLE, !TRANSACTION (LOCAL)"

// ssReader holds the state of one ShardingSphere file.
type ssReader struct {
	*yamlReader
	c *Config

	raw     []*ssDataSource // top-level dataSources in file order
	rawByNm map[string]*ssDataSource

	groups  []*ssGroup // read/write splitting groups in file order
	lbs     map[string]*ssLoadBalancer
	noNodes []string // tables without actualDataNodes, in file order
}

type ssDataSource struct {
	name string
	dsn  string
	path string
	kn   *yaml.Node
	// jdbcUrl's path and key node, for the origin of ".primary".
	urlPath string
	urlKN   *yaml.Node
	used    bool // member of a read/write splitting group
}

type ssGroup struct {
	name   string
	path   string
	kn     *yaml.Node
	write  string
	wPath  string
	wKN    *yaml.Node
	reads  []string
	rPath  string
	rNodes []*yaml.Node
	rKN    *yaml.Node
	lb     string
	lbPath string
	lbKN   *yaml.Node
}

type ssLoadBalancer struct {
	name   string
	path   string
	kn     *yaml.Node
	typ    string
	wPairs []yamlPair // WEIGHT: read data source name → weight
}

// shardingSphere decodes the ShardingSphere dialect.
func (r *yamlReader) shardingSphere(root *yaml.Node) (*Config, error) {
	s := &ssReader{yamlReader: r, c: &Config{}, rawByNm: map[string]*ssDataSource{}, lbs: map[string]*ssLoadBalancer{}}
	pairs, err := r.mapping(root, "")
	if err != nil {
		return nil, err
	}
	var rules *yamlPair
	for _, p := range pairs {
		switch p.key {
		case "dataSources":
			err = s.dataSources(p)
		case "rules":
			rules = &p
		case "props":
			err = s.topProps(p)
		case "mode":
			err = s.mode(p)
		case "databaseName", "schemaName":
			// The name of ShardingSphere's logical database, which Java
			// code sees in metadata; the Go service's SQL names tables
			// only, so it has no use in rwshard.
			_, err = r.str(p.v, p.path)
		default:
			err = r.unknownKey(p, "dataSources", "rules", "props", "mode", "databaseName", "schemaName")
		}
		if err != nil {
			return nil, err
		}
	}
	if len(s.raw) == 0 {
		return nil, r.errf(root, "dataSources", "no data source defined")
	}
	if rules != nil {
		if err := s.rules(*rules); err != nil {
			return nil, err
		}
	}
	if err := s.assemble(); err != nil {
		return nil, err
	}
	return s.c, nil
}

func (s *ssReader) dataSources(p yamlPair) error {
	entries, err := s.mapping(p.v, p.path)
	if err != nil {
		return err
	}
	for _, e := range entries {
		fields, err := s.mapping(e.v, e.path)
		if err != nil {
			return err
		}
		src := &jdbcSource{name: e.key}
		for _, f := range fields {
			switch f.key {
			case "jdbcUrl", "url":
				if src.urlKey != "" {
					return s.errf(f.kn, f.path, "jdbcUrl and url both given")
				}
				src.urlKey, src.urlNode = f.path, f.kn
				src.url, err = s.str(f.v, f.path)
			case "username", "password":
				var v string
				v, err = s.str(f.v, f.path)
				jp := &jdbcParam{name: f.key, value: v, key: f.path, node: f.kn}
				if f.key == "username" {
					src.user = jp
				} else {
					src.pass = jp
				}
			case "dataSourceProperties":
				err = s.dataSourceProperties(src, f)
			default:
				if _, ok := ssIgnoredDataSourceKeys[f.key]; ok {
					_, err = s.str(f.v, f.path)
					break
				}
				valid := append([]string{"jdbcUrl", "url", "username", "password", "dataSourceProperties"},
					sortedNames(ssIgnoredDataSourceKeys)...)
				err = s.unknownKey(f, valid...)
			}
			if err != nil {
				return err
			}
		}
		if src.urlKey == "" {
			return s.errf(e.kn, e.path, "no jdbcUrl: rwshard connects with go-sql-driver/mysql, not through a Java pool (dataSourceClassName, driverClassName); add jdbcUrl: jdbc:mysql://host:3306/db with username and password")
		}
		dsn, err := s.jdbcDSN(src)
		if err != nil {
			return err
		}
		d := &ssDataSource{name: e.key, dsn: dsn, path: e.path, kn: e.kn, urlPath: src.urlKey, urlKN: src.urlNode}
		s.raw = append(s.raw, d)
		s.rawByNm[e.key] = d
	}
	return nil
}

// dataSourceProperties appends a data source's dataSourceProperties to
// its connection properties.
func (s *ssReader) dataSourceProperties(src *jdbcSource, p yamlPair) error {
	props, err := s.mapping(p.v, p.path)
	if err != nil {
		return err
	}
	for _, pp := range props {
		v, err := s.str(pp.v, pp.path)
		if err != nil {
			return err
		}
		src.props = append(src.props, jdbcParam{name: pp.key, value: v, key: pp.path, node: pp.kn})
	}
	return nil
}

// topProps takes the top-level props rwshard has a use for or can do
// without (see the package documentation).
func (s *ssReader) topProps(p yamlPair) error {
	pairs, err := s.mapping(p.v, p.path)
	if err != nil {
		return err
	}
	const valid = "sql-show, sql-simple, kernel-executor-size, max-connections-size-per-query, " +
		"check-table-metadata-enabled, sql-federation-enabled (false), sql-federation-type (NONE)"
	for _, f := range pairs {
		switch f.key {
		case "sql-show":
			s.c.RouteLog, err = s.boolean(f.v, f.path)
		case "sql-simple", "check-table-metadata-enabled":
			_, err = s.boolean(f.v, f.path)
		case "kernel-executor-size", "max-connections-size-per-query":
			_, err = s.integer(f.v, f.path)
		case "sql-federation-enabled":
			var on bool
			if on, err = s.boolean(f.v, f.path); err == nil && on {
				err = s.errf(f.kn, f.path, "SQL federation (cross-shard joins computed in the client) is not supported: rwshard refuses such statements")
			}
		case "sql-federation-type":
			var t string
			if t, err = s.str(f.v, f.path); err == nil && !strings.EqualFold(t, "NONE") {
				err = s.errf(f.kn, f.path, "SQL federation (cross-shard joins computed in the client) is not supported: rwshard refuses such statements")
			}
		default:
			err = s.errf(f.kn, f.path, "property not supported by rwshard; supported: %s", valid)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// mode accepts Standalone (and 5.1's Memory): the rules come from this
// file, as in rwshard. Cluster mode keeps them in a registry center.
func (s *ssReader) mode(p yamlPair) error {
	pairs, err := s.mapping(p.v, p.path)
	if err != nil {
		return err
	}
	for _, f := range pairs {
		switch f.key {
		case "type":
			var t string
			if t, err = s.str(f.v, f.path); err != nil {
				return err
			}
			switch strings.ToUpper(t) {
			case "STANDALONE", "MEMORY":
			case "CLUSTER":
				return s.errf(f.kn, f.path, "Cluster mode (rules kept in a registry center) is not supported: rwshard reads its rules from this file only")
			default:
				return s.errf(f.kn, f.path, "mode %q: want Standalone", t)
			}
		case "repository":
			// Where a Standalone ShardingSphere persists metadata; rwshard
			// persists nothing and reads this file only.
			repo, err := s.mapping(f.v, f.path)
			if err != nil {
				return err
			}
			for _, rp := range repo {
				switch rp.key {
				case "type":
					_, err = s.str(rp.v, rp.path)
				case "props":
					_, err = s.props(rp.v, rp.path)
				default:
					err = s.unknownKey(rp, "type", "props")
				}
				if err != nil {
					return err
				}
			}
		case "overwrite":
			if _, err := s.boolean(f.v, f.path); err != nil {
				return err
			}
		default:
			return s.unknownKey(f, "type", "repository", "overwrite")
		}
	}
	return nil
}

func (s *ssReader) rules(p yamlPair) error {
	items, err := s.sequence(p.v, p.path)
	if err != nil {
		return err
	}
	seen := map[string]int{}
	for i, it := range items {
		n, err := s.resolve(it, indexKey(p.path, i), true)
		if err != nil {
			return err
		}
		tag := n.Tag
		if !customTag(n) {
			return s.errf(n, indexKey(p.path, i), "a rule needs a tag; supported: %s", ssSupportedRules)
		}
		if first, dup := seen[tag]; dup {
			return s.errf(n, indexKey(p.path, i), "rule %s given twice (first at line %d)", tag, first)
		}
		seen[tag] = n.Line
		path := p.path + "." + tag
		rule := yamlPair{key: tag, path: path, kn: n, v: n}
		switch tag {
		case "!SHARDING":
			err = s.sharding(rule)
		case "!READWRITE_SPLITTING":
			err = s.readwrite(rule)
		case "!BROADCAST":
			err = s.broadcastRule(rule)
		case "!SINGLE":
			err = s.single(rule)
		case "!TRANSACTION":
			err = s.transaction(rule)
		default:
			err = s.errf(n, path, "rule %s is not supported by rwshard; supported: %s", tag, ssSupportedRules)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ruleMapping is mapping for a tagged rule node.
func (s *ssReader) ruleMapping(rule yamlPair) ([]yamlPair, error) {
	return s.mappingTagged(rule.v, rule.path, true)
}

func (s *ssReader) sharding(rule yamlPair) error {
	pairs, err := s.ruleMapping(rule)
	if err != nil {
		return err
	}
	by := map[string]yamlPair{}
	for _, p := range pairs {
		switch p.key {
		case "tables", "bindingTables", "broadcastTables", "defaultDatabaseStrategy", "defaultTableStrategy",
			"defaultKeyGenerateStrategy", "defaultShardingColumn", "shardingAlgorithms", "keyGenerators":
			by[p.key] = p
		case "autoTables":
			return s.errf(p.kn, p.path, "auto tables are not supported: declare them under tables with actualDataNodes and strategies")
		case "auditors", "defaultAuditStrategy":
			return s.errf(p.kn, p.path, "sharding audits are not supported")
		case "scaling", "scalingName":
			return s.errf(p.kn, p.path, "scaling (data migration) is not supported")
		case "shardingCache":
			return s.errf(p.kn, p.path, "the sharding route cache is not supported (rwshard caches statement classification itself)")
		default:
			return s.unknownKey(p, "tables", "bindingTables", "broadcastTables", "defaultDatabaseStrategy",
				"defaultTableStrategy", "defaultKeyGenerateStrategy", "defaultShardingColumn",
				"shardingAlgorithms", "keyGenerators")
		}
	}
	c := s.c
	var defCol *ssColumn
	if p, ok := by["defaultShardingColumn"]; ok {
		v, err := s.str(p.v, p.path)
		if err != nil {
			return err
		}
		defCol = &ssColumn{name: v, path: p.path, kn: p.kn}
	}
	if p, ok := by["defaultDatabaseStrategy"]; ok {
		if c.DefaultDatabaseStrategy, err = s.strategy(p, "defaultDatabaseStrategy", defCol); err != nil {
			return err
		}
	}
	if p, ok := by["defaultTableStrategy"]; ok {
		if c.DefaultTableStrategy, err = s.strategy(p, "defaultTableStrategy", defCol); err != nil {
			return err
		}
	}
	var defKey *KeyGeneratorRef
	var defKeyPair yamlPair
	if p, ok := by["defaultKeyGenerateStrategy"]; ok {
		defKeyPair = p
		if defKey, err = s.keyStrategy(p, ""); err != nil {
			return err
		}
	}
	if p, ok := by["tables"]; ok {
		entries, err := s.mapping(p.v, p.path)
		if err != nil {
			return err
		}
		c.Tables = make(map[string]TableConfig, len(entries))
		for _, e := range entries {
			t, err := s.table(e, defCol)
			if err != nil {
				return err
			}
			if t.KeyGenerator == nil && defKey != nil {
				k := *defKey
				t.KeyGenerator = &k
				cfgKey := "tables." + e.key + ".keyGenerator"
				s.record(cfgKey, defKeyPair.path, defKeyPair.kn)
				s.record(cfgKey+".column", defKeyPair.path+".column", defKeyPair.kn)
				s.record(cfgKey+".generator", defKeyPair.path+".keyGeneratorName", defKeyPair.kn)
			}
			c.Tables[e.key] = t
		}
	}
	if p, ok := by["bindingTables"]; ok {
		if c.BindingTables, err = s.bindingGroups(p, "bindingTables"); err != nil {
			return err
		}
	}
	if p, ok := by["broadcastTables"]; ok {
		if err := s.broadcastList(p); err != nil {
			return err
		}
	}
	if p, ok := by["shardingAlgorithms"]; ok {
		if c.Algorithms, err = s.algorithms(p, "algorithms"); err != nil {
			return err
		}
		for name, a := range c.Algorithms {
			if strings.EqualFold(strings.TrimSpace(a.Type), TypeHashMod) {
				// ShardingSphere's HASH_MOD is Java hashCode() mod n;
				// rwshard's HASH_MOD is xxhash64. Keep rows where
				// ShardingSphere put them.
				a.Type = TypeSSHashMod
				c.Algorithms[name] = a
			}
		}
	}
	if p, ok := by["keyGenerators"]; ok {
		if c.KeyGenerators, err = s.algorithms(p, "keyGenerators"); err != nil {
			return err
		}
	}
	return nil
}

// ssColumn is defaultShardingColumn and where it was given.
type ssColumn struct {
	name string
	path string
	kn   *yaml.Node
}

func (s *ssReader) table(e yamlPair, defCol *ssColumn) (TableConfig, error) {
	var t TableConfig
	cfgKey := "tables." + e.key
	s.record(cfgKey, e.path, e.kn)
	fields, err := s.mapping(e.v, e.path)
	if err != nil {
		return t, err
	}
	hasNodes := false
	for _, f := range fields {
		switch f.key {
		case "actualDataNodes":
			hasNodes = true
			s.record(cfgKey+".dataNodes", f.path, f.kn)
			t.DataNodes, err = s.str(f.v, f.path)
		case "databaseStrategy":
			t.DatabaseStrategy, err = s.strategy(f, cfgKey+".databaseStrategy", defCol)
		case "tableStrategy":
			t.TableStrategy, err = s.strategy(f, cfgKey+".tableStrategy", defCol)
		case "keyGenerateStrategy":
			t.KeyGenerator, err = s.keyStrategy(f, cfgKey+".keyGenerator")
		case "auditStrategy":
			err = s.errf(f.kn, f.path, "sharding audits are not supported")
		case "logicTable", "actualDataSources", "shardingStrategy":
			err = s.errf(f.kn, f.path, "auto table keys are not supported: use actualDataNodes with databaseStrategy/tableStrategy")
		default:
			err = s.unknownKey(f, "actualDataNodes", "databaseStrategy", "tableStrategy", "keyGenerateStrategy")
		}
		if err != nil {
			return t, err
		}
	}
	if !hasNodes {
		// ShardingSphere: the logical table in every data source.
		s.noNodes = append(s.noNodes, e.key)
		s.record(cfgKey+".dataNodes", e.path, e.kn)
	}
	return t, nil
}

// strategy reads {standard: {shardingColumn, shardingAlgorithmName}} or
// {none: }; complex and hint strategies are refused.
func (s *ssReader) strategy(p yamlPair, cfgKey string, defCol *ssColumn) (*StrategyConfig, error) {
	s.record(cfgKey, p.path, p.kn)
	pairs, err := s.mapping(p.v, p.path)
	if err != nil {
		return nil, err
	}
	if len(pairs) != 1 {
		return nil, s.errf(p.kn, p.path, "want exactly one of standard or none, found %d keys", len(pairs))
	}
	f := pairs[0]
	switch f.key {
	case "none":
		if fields, err := s.mapping(f.v, f.path); err != nil {
			return nil, err
		} else if len(fields) > 0 {
			return nil, s.errf(fields[0].kn, fields[0].path, "none takes no keys")
		}
		s.record(cfgKey+".none", f.path, f.kn)
		return &StrategyConfig{None: true}, nil
	case "standard":
		fields, err := s.mapping(f.v, f.path)
		if err != nil {
			return nil, err
		}
		st := &StrategyConfig{}
		s.record(cfgKey+".column", f.path+".shardingColumn", f.kn)
		s.record(cfgKey+".algorithm", f.path+".shardingAlgorithmName", f.kn)
		hasCol := false
		for _, g := range fields {
			switch g.key {
			case "shardingColumn":
				hasCol = true
				s.record(cfgKey+".column", g.path, g.kn)
				st.Column, err = s.str(g.v, g.path)
			case "shardingAlgorithmName":
				s.record(cfgKey+".algorithm", g.path, g.kn)
				st.Algorithm, err = s.str(g.v, g.path)
			default:
				err = s.unknownKey(g, "shardingColumn", "shardingAlgorithmName")
			}
			if err != nil {
				return nil, err
			}
		}
		if !hasCol && defCol != nil {
			st.Column = defCol.name
			s.record(cfgKey+".column", defCol.path, defCol.kn)
		}
		return st, nil
	case "complex":
		return nil, s.errf(f.kn, f.path, "complex strategies (several sharding columns) are not supported: rwshard shards each level on one column (standard)")
	case "hint":
		return nil, s.errf(f.kn, f.path, "hint strategies are not supported: rwshard routes by the shard key in the statement")
	}
	return nil, s.unknownKey(f, "standard", "none")
}

// keyStrategy reads {column, keyGeneratorName}; cfgKey "" for the
// default one (recorded per table later).
func (s *ssReader) keyStrategy(p yamlPair, cfgKey string) (*KeyGeneratorRef, error) {
	rec := func(suffix string, f yamlPair) {
		if cfgKey != "" {
			s.record(cfgKey+suffix, f.path, f.kn)
		}
	}
	rec("", p)
	fields, err := s.mapping(p.v, p.path)
	if err != nil {
		return nil, err
	}
	k := &KeyGeneratorRef{}
	for _, f := range fields {
		switch f.key {
		case "column":
			rec(".column", f)
			k.Column, err = s.str(f.v, f.path)
		case "keyGeneratorName":
			rec(".generator", f)
			k.Generator, err = s.str(f.v, f.path)
		default:
			err = s.unknownKey(f, "column", "keyGeneratorName")
		}
		if err != nil {
			return nil, err
		}
	}
	return k, nil
}

func (s *ssReader) broadcastList(p yamlPair) error {
	names, err := s.strs(p.v, p.path, false)
	if err != nil {
		return err
	}
	for i, it := range s.listItems(p.v, p.path) {
		s.record(indexKey("broadcastTables", len(s.c.BroadcastTables)+i), indexKey(p.path, i), it)
	}
	s.c.BroadcastTables = append(s.c.BroadcastTables, names...)
	return nil
}

// broadcastRule is 5.4's !BROADCAST {tables: [...]}.
func (s *ssReader) broadcastRule(rule yamlPair) error {
	pairs, err := s.ruleMapping(rule)
	if err != nil {
		return err
	}
	for _, p := range pairs {
		if p.key != "tables" {
			return s.unknownKey(p, "tables")
		}
		if err := s.broadcastList(p); err != nil {
			return err
		}
	}
	return nil
}

// single is 5.4's !SINGLE: defaultDataSource holds the tables that are
// neither sharded nor broadcast. rwshard puts every such table there, so
// tables may only name that data source or wildcards.
func (s *ssReader) single(rule yamlPair) error {
	pairs, err := s.ruleMapping(rule)
	if err != nil {
		return err
	}
	var tables *yamlPair
	for _, p := range pairs {
		switch p.key {
		case "defaultDataSource":
			s.record("defaultDataSource", p.path, p.kn)
			if s.c.DefaultDataSource, err = s.str(p.v, p.path); err != nil {
				return err
			}
		case "tables":
			tables = &p
		default:
			return s.unknownKey(p, "defaultDataSource", "tables")
		}
	}
	if tables == nil {
		return nil
	}
	items, err := s.sequence(tables.v, tables.path)
	if err != nil {
		return err
	}
	for i, it := range items {
		key := indexKey(tables.path, i)
		v, err := s.str(it, key)
		if err != nil {
			return err
		}
		ds, _, _ := strings.Cut(v, ".")
		if ds != "*" && (s.c.DefaultDataSource == "" || ds != s.c.DefaultDataSource) {
			return s.errf(it, key, "%q: rwshard keeps every unsharded table in defaultDataSource; list only %s.* (or *.*) here",
				v, pickName(s.c.DefaultDataSource != "", s.c.DefaultDataSource, "<defaultDataSource>"))
		}
	}
	return nil
}

// transaction accepts !TRANSACTION with defaultType LOCAL: one local
// transaction per data source is what rwshard does.
func (s *ssReader) transaction(rule yamlPair) error {
	pairs, err := s.ruleMapping(rule)
	if err != nil {
		return err
	}
	for _, p := range pairs {
		switch p.key {
		case "defaultType":
			t, err := s.str(p.v, p.path)
			if err != nil {
				return err
			}
			if !strings.EqualFold(t, "LOCAL") {
				return s.errf(p.kn, p.path, "%q: only LOCAL transactions are supported", t)
			}
		case "providerType":
			// Names the XA transaction manager; unused with LOCAL.
			if _, err := s.str(p.v, p.path); err != nil {
				return err
			}
		case "props":
			if m, err := s.props(p.v, p.path); err != nil {
				return err
			} else if len(m) > 0 {
				return s.errf(p.kn, p.path, "transaction manager properties are not supported")
			}
		default:
			return s.unknownKey(p, "defaultType", "providerType", "props")
		}
	}
	return nil
}
