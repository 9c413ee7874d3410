package shard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rwshard/rwshard"
)

// ParseYAML decodes a rules file into a Config; Build then validates and
// resolves it. Two dialects are accepted and told apart automatically:
//
//   - rwshard's own, the Config fields in lowerCamelCase (see the package
//     documentation and testdata/rules/native.yaml);
//   - ShardingSphere-JDBC 5.x (dataSources with jdbcUrl, rules with
//     !SHARDING, !READWRITE_SPLITTING, !BROADCAST, !SINGLE, …), for the
//     features rwshard supports.
//
// The file is ShardingSphere's when its top level has rules, mode, props,
// databaseName or schemaName, or a data source has a jdbcUrl or url; else
// it is rwshard's.
//
// Decoding is strict in both dialects: a key that is not known, a key
// given twice, a value of the wrong kind, and every ShardingSphere
// feature rwshard does not implement is an error naming the key path and
// the line, never silently ignored. The few ShardingSphere keys that are
// accepted and have no effect are listed with their reasons in the
// package documentation. Errors are *rwshard.ConfigError; after ParseYAML,
// Build's errors name the file's keys and lines too.
func ParseYAML(data []byte) (*Config, error) {
	return parseYAML(data, "")
}

// LoadRules reads and parses a rules file (see ParseYAML). Errors name
// the file.
func LoadRules(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("rwshard: shard: %w", err)
	}
	return parseYAML(data, path)
}

func parseYAML(data []byte, file string) (*Config, error) {
	root, derr := decodeYAMLDocument(data)
	if derr != nil {
		derr.File = file
		return nil, derr
	}
	r := newYAMLReader(file)
	var c *Config
	var err error
	if isShardingSphere(root) {
		c, err = r.shardingSphere(root)
	} else {
		c, err = r.native(root)
	}
	if err != nil {
		return nil, err
	}
	c.src = &configSource{file: file, keys: r.keys}
	return c, nil
}

// yamlLine finds the line in a yaml.v3 syntax error.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// decodeYAMLDocument returns the top-level mapping of the one YAML
// document in data.
func decodeYAMLDocument(data []byte) (*yaml.Node, *rwshard.ConfigError) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &rwshard.ConfigError{Err: errors.New("empty rules file")}
		}
		return nil, yamlSyntaxError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, yamlSyntaxError(err)
		}
		return nil, &rwshard.ConfigError{Line: extra.Line, Err: errors.New("a second YAML document; a rules file holds one")}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &rwshard.ConfigError{Err: errors.New("empty rules file")}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &rwshard.ConfigError{Line: root.Line, Err: fmt.Errorf("the top level must be a mapping, found %s", kindName(root))}
	}
	return root, nil
}

// yamlSyntaxError moves the line of a yaml.v3 error into the rwshard.ConfigError.
func yamlSyntaxError(err error) *rwshard.ConfigError {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &rwshard.ConfigError{Line: line, Err: errors.New("yaml: " + msg[len(m[0]):])}
	}
	return &rwshard.ConfigError{Err: err}
}

// isShardingSphere tells the dialects apart (see ParseYAML).
func isShardingSphere(root *yaml.Node) bool {
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "rules", "mode", "props", "databaseName", "schemaName":
			return true
		case "dataSources":
			ds := root.Content[i+1]
			if ds.Kind != yaml.MappingNode {
				continue
			}
			for j := 1; j < len(ds.Content); j += 2 {
				if d := ds.Content[j]; d.Kind == yaml.MappingNode {
					for k := 0; k < len(d.Content); k += 2 {
						if v := d.Content[k].Value; v == "jdbcUrl" || v == "url" {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

// native decodes rwshard's own dialect.
func (r *yamlReader) native(root *yaml.Node) (*Config, error) {
	c := &Config{}
	err := r.nativeFields(root, "", func(p yamlPair) (err error) {
		switch p.key {
		case "dataSources":
			c.DataSources, err = r.nativeDataSources(p)
		case "defaultDataSource":
			c.DefaultDataSource, err = r.str(p.v, p.path)
		case "tables":
			c.Tables, err = r.nativeTables(p)
		case "defaultDatabaseStrategy":
			c.DefaultDatabaseStrategy, err = r.nativeStrategy(p)
		case "defaultTableStrategy":
			c.DefaultTableStrategy, err = r.nativeStrategy(p)
		case "bindingTables":
			c.BindingTables, err = r.bindingGroups(p, p.path)
		case "broadcastTables":
			c.BroadcastTables, err = r.strs(p.v, p.path, false)
			r.recordItems(p)
		case "algorithms":
			c.Algorithms, err = r.algorithms(p, p.path)
		case "keyGenerators":
			c.KeyGenerators, err = r.algorithms(p, p.path)
		case "maxBroadcastShards":
			c.MaxBroadcastShards, err = r.integer(p.v, p.path)
		case "refuseBroadcastReads":
			c.RefuseBroadcastReads, err = r.boolean(p.v, p.path)
		case "allowBroadcastWrites":
			c.AllowBroadcastWrites, err = r.boolean(p.v, p.path)
		case "routeLog":
			c.RouteLog, err = r.boolean(p.v, p.path)
		default:
			err = r.unknownKey(p, "dataSources", "defaultDataSource", "tables", "defaultDatabaseStrategy",
				"defaultTableStrategy", "bindingTables", "broadcastTables", "algorithms", "keyGenerators",
				"maxBroadcastShards", "refuseBroadcastReads", "allowBroadcastWrites", "routeLog")
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// nativeFields reads the mapping n at key path key: in file order, it
// records each entry's origin under its own key path (the native
// dialect's keys are the Config's) and calls read for it, stopping at
// the first error.
func (r *yamlReader) nativeFields(n *yaml.Node, key string, read func(f yamlPair) error) error {
	fields, err := r.mapping(n, key)
	if err != nil {
		return err
	}
	for _, f := range fields {
		r.record(f.path, f.path, f.kn)
		if err := read(f); err != nil {
			return err
		}
	}
	return nil
}

// recordItems records the origin of each item of a list under the
// list's key path with an index.
func (r *yamlReader) recordItems(p yamlPair) {
	for i, it := range r.listItems(p.v, p.path) {
		r.record(indexKey(p.path, i), indexKey(p.path, i), it)
	}
}

// listItems returns the items of n when it is a list, else nil. It
// reports no error: it serves to record the origins of a value that has
// been read already.
func (r *yamlReader) listItems(n *yaml.Node, key string) []*yaml.Node {
	if n, err := r.resolve(n, key, false); err == nil && n != nil && n.Kind == yaml.SequenceNode {
		return n.Content
	}
	return nil
}

func (r *yamlReader) nativeDataSources(p yamlPair) (map[string]DataSourceConfig, error) {
	out := map[string]DataSourceConfig{}
	err := r.nativeFields(p.v, p.path, func(e yamlPair) error {
		var d DataSourceConfig
		err := r.nativeFields(e.v, e.path, func(f yamlPair) (err error) {
			switch f.key {
			case "primary":
				d.Primary, err = r.str(f.v, f.path)
			case "replicas":
				d.Replicas, err = r.strs(f.v, f.path, false)
				r.recordItems(f)
			case "balance":
				d.Balance, err = r.str(f.v, f.path)
			case "weights":
				d.Weights, err = r.numbers(f)
			default:
				err = r.unknownKey(f, "primary", "replicas", "balance", "weights")
			}
			return err
		})
		out[e.key] = d
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (r *yamlReader) numbers(p yamlPair) ([]float64, error) {
	items, err := r.sequence(p.v, p.path)
	if err != nil {
		return nil, err
	}
	out := make([]float64, 0, len(items))
	for i, it := range items {
		key := indexKey(p.path, i)
		r.record(key, key, it)
		w, err := r.number(it, key)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

func (r *yamlReader) nativeTables(p yamlPair) (map[string]TableConfig, error) {
	out := map[string]TableConfig{}
	err := r.nativeFields(p.v, p.path, func(e yamlPair) error {
		var t TableConfig
		err := r.nativeFields(e.v, e.path, func(f yamlPair) (err error) {
			switch f.key {
			case "dataNodes":
				t.DataNodes, err = r.str(f.v, f.path)
			case "databaseStrategy":
				t.DatabaseStrategy, err = r.nativeStrategy(f)
			case "tableStrategy":
				t.TableStrategy, err = r.nativeStrategy(f)
			case "keyGenerator":
				t.KeyGenerator, err = r.nativeKeyGenerator(f)
			case "allowBroadcastWrites":
				t.AllowBroadcastWrites, err = r.boolean(f.v, f.path)
			default:
				err = r.unknownKey(f, "dataNodes", "databaseStrategy", "tableStrategy", "keyGenerator", "allowBroadcastWrites")
			}
			return err
		})
		out[e.key] = t
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// nativeStrategy reads {column, algorithm} or {none: true}; null is no
// strategy (the default applies).
func (r *yamlReader) nativeStrategy(p yamlPair) (*StrategyConfig, error) {
	n, err := r.resolve(p.v, p.path, false)
	if err != nil || isNull(n) {
		return nil, err
	}
	s := &StrategyConfig{}
	err = r.nativeFields(n, p.path, func(f yamlPair) (err error) {
		switch f.key {
		case "column":
			s.Column, err = r.str(f.v, f.path)
		case "algorithm":
			s.Algorithm, err = r.str(f.v, f.path)
		case "none":
			s.None, err = r.boolean(f.v, f.path)
		default:
			err = r.unknownKey(f, "column", "algorithm", "none")
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// nativeKeyGenerator reads {column, generator}; null is no key
// generator.
func (r *yamlReader) nativeKeyGenerator(p yamlPair) (*KeyGeneratorRef, error) {
	n, err := r.resolve(p.v, p.path, false)
	if err != nil || isNull(n) {
		return nil, err
	}
	k := &KeyGeneratorRef{}
	err = r.nativeFields(n, p.path, func(f yamlPair) (err error) {
		switch f.key {
		case "column":
			k.Column, err = r.str(f.v, f.path)
		case "generator":
			k.Generator, err = r.str(f.v, f.path)
		default:
			err = r.unknownKey(f, "column", "generator")
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}

// algorithms reads a mapping of names to {type, props} (algorithms or
// key generators, both dialects), recording the origins under the
// Config key path cfgKey.
func (r *yamlReader) algorithms(p yamlPair, cfgKey string) (map[string]AlgorithmConfig, error) {
	entries, err := r.mapping(p.v, p.path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]AlgorithmConfig, len(entries))
	for _, e := range entries {
		key := cfgKey + "." + e.key
		r.record(key, e.path, e.kn)
		a, err := r.algorithm(e, key)
		if err != nil {
			return nil, err
		}
		out[e.key] = a
	}
	return out, nil
}

// algorithm reads {type, props}, recording the origins under the Config
// key path cfgKey.
func (r *yamlReader) algorithm(e yamlPair, cfgKey string) (AlgorithmConfig, error) {
	var a AlgorithmConfig
	fields, err := r.mapping(e.v, e.path)
	if err != nil {
		return a, err
	}
	for _, f := range fields {
		switch f.key {
		case "type":
			r.record(cfgKey+".type", f.path, f.kn)
			a.Type, err = r.str(f.v, f.path)
		case "props":
			r.record(cfgKey+".props", f.path, f.kn)
			a.Props, err = r.props(f.v, f.path)
			if pairs, perr := r.mapping(f.v, f.path); perr == nil {
				for _, pp := range pairs {
					r.record(cfgKey+".props."+pp.key, pp.path, pp.kn)
				}
			}
		default:
			err = r.unknownKey(f, "type", "props")
		}
		if err != nil {
			return a, err
		}
	}
	return a, nil
}

// bindingGroups reads a list of binding groups, each a list of table
// names or one comma-separated string ("t_order, t_order_item"); in
// ShardingSphere 5.3+ the string may start with a group name and a colon
// ("orders:t_order,t_order_item"), which is dropped. It records the
// origins under the Config key path cfgKey.
func (r *yamlReader) bindingGroups(p yamlPair, cfgKey string) ([][]string, error) {
	r.record(cfgKey, p.path, p.kn)
	items, err := r.sequence(p.v, p.path)
	if err != nil {
		return nil, err
	}
	var out [][]string
	for i, it := range items {
		key := indexKey(p.path, i)
		r.record(indexKey(cfgKey, i), key, it)
		n, err := r.resolve(it, key, false)
		if err != nil {
			return nil, err
		}
		if n.Kind == yaml.ScalarNode && !isNull(n) {
			s := n.Value
			if i := strings.IndexByte(s, ':'); i >= 0 {
				s = s[i+1:]
			}
			var group []string
			for _, t := range strings.Split(s, ",") {
				group = append(group, strings.TrimSpace(t))
			}
			out = append(out, group)
			continue
		}
		group, err := r.strs(n, key, false)
		if err != nil {
			return nil, err
		}
		for j, tn := range n.Content {
			r.record(indexKey(indexKey(cfgKey, i), j), indexKey(key, j), tn)
		}
		out = append(out, group)
	}
	return out, nil
}
