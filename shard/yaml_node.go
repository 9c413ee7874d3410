package shard

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rwshard/rwshard"
)

// yamlReader walks a yaml.v3 node tree strictly: every mapping key must
// be one the reader asks for, keys do not repeat, and every error is a
// *rwshard.ConfigError with the key path and the line.
type yamlReader struct {
	file string
	// keys: Config key path → where the file said it (see configSource).
	keys map[string]keyOrigin
	// budget bounds the nodes visited, aliases followed included, so that
	// a small file of nested aliases cannot make the walk explode.
	budget int
}

// yamlNodeBudget is far more nodes (262,144) than a real rules file has.
const yamlNodeBudget = 1 << 18

var errYAMLTooLarge = errors.New("too many YAML nodes (aliases nested too deep?)")

func newYAMLReader(file string) *yamlReader {
	return &yamlReader{file: file, keys: map[string]keyOrigin{}, budget: yamlNodeBudget}
}

func (r *yamlReader) errf(n *yaml.Node, key, format string, args ...any) *rwshard.ConfigError {
	e := &rwshard.ConfigError{File: r.file, Key: key, Err: fmt.Errorf(format, args...)}
	if n != nil {
		e.Line = n.Line
	}
	return e
}

// record notes that the Config key path cfgKey came from the file's key
// fileKey at line n.Line.
func (r *yamlReader) record(cfgKey, fileKey string, n *yaml.Node) {
	if n != nil {
		r.keys[cfgKey] = keyOrigin{key: fileKey, line: n.Line}
	}
}

// resolve follows an alias and spends budget; it rejects a tag that is
// not one of YAML's own (!!str, !!map, …) unless tagOK.
func (r *yamlReader) resolve(n *yaml.Node, key string, tagOK bool) (*yaml.Node, error) {
	for depth := 0; n != nil && n.Kind == yaml.AliasNode; depth++ {
		if n.Alias == nil || depth > 100 {
			return nil, r.errf(n, key, "unresolvable alias")
		}
		n = n.Alias
	}
	r.budget--
	if r.budget < 0 {
		return nil, r.errf(n, key, "%v", errYAMLTooLarge)
	}
	if n == nil {
		return nil, nil
	}
	if !tagOK && customTag(n) {
		return nil, r.errf(n, key, "unexpected tag %s", n.Tag)
	}
	return n, nil
}

// customTag reports a tag the file wrote that is not one of YAML's own.
func customTag(n *yaml.Node) bool {
	return n.Tag != "" && !strings.HasPrefix(n.Tag, "!!")
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a scalar"
	case yaml.DocumentNode:
		return "a document"
	}
	return "an unknown node"
}

// yamlPair is one entry of a mapping.
type yamlPair struct {
	key  string     // the key's text
	path string     // the key path of the entry
	kn   *yaml.Node // the key node (its line is the entry's)
	v    *yaml.Node // the value, aliases not resolved
}

// mapping returns the entries of a mapping in file order; a null value
// is an empty mapping. A key given twice is an error; merge keys (<<)
// are expanded, the mapping's own keys winning.
func (r *yamlReader) mapping(n *yaml.Node, key string) ([]yamlPair, error) {
	return r.mappingTagged(n, key, false)
}

func (r *yamlReader) mappingTagged(n *yaml.Node, key string, tagOK bool) ([]yamlPair, error) {
	n, err := r.resolve(n, key, tagOK)
	if err != nil || isNull(n) {
		return nil, err
	}
	if n.Kind != yaml.MappingNode {
		return nil, r.errf(n, key, "expected a mapping, found %s", kindName(n))
	}
	var pairs, merged []yamlPair
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, err := r.resolve(n.Content[i], key, false)
		if err != nil {
			return nil, err
		}
		if kn.Kind == yaml.ScalarNode && kn.ShortTag() == "!!merge" {
			m, err := r.merged(n.Content[i+1], key)
			if err != nil {
				return nil, err
			}
			merged = append(merged, m...)
			continue
		}
		if kn.Kind != yaml.ScalarNode || isNull(kn) {
			return nil, r.errf(kn, key, "a key must be a plain name, found %s", kindName(kn))
		}
		k := kn.Value
		if first, dup := seen[k]; dup {
			return nil, r.errf(kn, joinKey(key, k), "key repeated (first at line %d)", first.Line)
		}
		seen[k] = kn
		pairs = append(pairs, yamlPair{key: k, path: joinKey(key, k), kn: kn, v: n.Content[i+1]})
	}
	for _, p := range merged {
		if _, dup := seen[p.key]; !dup {
			seen[p.key] = p.kn
			p.path = joinKey(key, p.key)
			pairs = append(pairs, p)
		}
	}
	return pairs, nil
}

// merged returns the entries a merge key brings in: a mapping, or a list
// of mappings, the earlier ones winning.
func (r *yamlReader) merged(v *yaml.Node, key string) ([]yamlPair, error) {
	v, err := r.resolve(v, key, false)
	if err != nil {
		return nil, err
	}
	var sources []*yaml.Node
	switch v.Kind {
	case yaml.MappingNode:
		sources = []*yaml.Node{v}
	case yaml.SequenceNode:
		sources = v.Content
	default:
		return nil, r.errf(v, key, "a merge key (<<) takes a mapping or a list of mappings")
	}
	var out []yamlPair
	seen := map[string]bool{}
	for _, s := range sources {
		pairs, err := r.mapping(s, key)
		if err != nil {
			return nil, err
		}
		for _, p := range pairs {
			if !seen[p.key] {
				seen[p.key] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}

func joinKey(parent, k string) string {
	if parent == "" {
		return k
	}
	return parent + "." + k
}

func indexKey(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// unknownKey is the error for a key the reader does not accept here.
func (r *yamlReader) unknownKey(p yamlPair, valid ...string) *rwshard.ConfigError {
	return r.errf(p.kn, p.path, "unknown key; valid keys here: %s", strings.Join(valid, ", "))
}

// sequence returns the items of a list; a null value is an empty list.
func (r *yamlReader) sequence(n *yaml.Node, key string) ([]*yaml.Node, error) {
	n, err := r.resolve(n, key, false)
	if err != nil || isNull(n) {
		return nil, err
	}
	if n.Kind != yaml.SequenceNode {
		return nil, r.errf(n, key, "expected a list, found %s", kindName(n))
	}
	return n.Content, nil
}

// str returns a scalar's text; null is "". Numbers and booleans are
// taken as written.
func (r *yamlReader) str(n *yaml.Node, key string) (string, error) {
	n, err := r.resolve(n, key, false)
	if err != nil || isNull(n) {
		return "", err
	}
	if n.Kind != yaml.ScalarNode {
		return "", r.errf(n, key, "expected a single value, found %s", kindName(n))
	}
	return n.Value, nil
}

// strs returns a list of scalars, or, when commas, one comma-separated
// string ("a,b, c"), blanks around items trimmed.
func (r *yamlReader) strs(n *yaml.Node, key string, commas bool) ([]string, error) {
	rn, err := r.resolve(n, key, false)
	if err != nil || isNull(rn) {
		return nil, err
	}
	if commas && rn.Kind == yaml.ScalarNode {
		var out []string
		for _, s := range strings.Split(rn.Value, ",") {
			out = append(out, strings.TrimSpace(s))
		}
		return out, nil
	}
	items, err := r.sequence(rn, key)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		s, err := r.str(it, indexKey(key, i))
		if err != nil {
			return nil, err
		}
		out = append(out, strings.TrimSpace(s))
	}
	return out, nil
}

func (r *yamlReader) boolean(n *yaml.Node, key string) (bool, error) {
	s, err := r.str(n, key)
	if err != nil {
		return false, err
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, r.errf(n, key, "%q: want true or false", s)
}

func (r *yamlReader) integer(n *yaml.Node, key string) (int, error) {
	s, err := r.str(n, key)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, r.errf(n, key, "%q: not an integer", s)
	}
	return v, nil
}

func (r *yamlReader) number(n *yaml.Node, key string) (float64, error) {
	s, err := r.str(n, key)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, r.errf(n, key, "%q: not a finite number", s)
	}
	return v, nil
}

// props reads a mapping of names to single values (algorithm and key
// generator properties, load balancer weights).
func (r *yamlReader) props(n *yaml.Node, key string) (map[string]string, error) {
	pairs, err := r.mapping(n, key)
	if err != nil || len(pairs) == 0 {
		return nil, err
	}
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		v, err := r.str(p.v, p.path)
		if err != nil {
			return nil, err
		}
		m[p.key] = v
	}
	return m, nil
}
