package shard

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/route"
	"github.com/rwshard/rwshard/internal/shardhook"
)

// The sharded connector: the rules, and one ordinary rwshard.Connector
// (primary + replicas, with health, balancing and consistency) per data
// source. A blank import of this package registers it with the driver,
// which opens it for a Config whose Sharding has RulesFile or Rules.

var _ shardhook.Connector = (*connector)(nil)

func init() {
	shardhook.Register(open)
}

// open is the driver's way in (internal/shardhook).
func open(cfg any) (shardhook.Connector, error) {
	base, ok := cfg.(*rwshard.Config)
	if !ok {
		return nil, fmt.Errorf("shard: a sharded connector needs an *rwshard.Config, not %T", cfg)
	}
	rules, err := loadRules(base)
	if err != nil {
		return nil, err
	}
	c := &connector{base: base.Clone(), classifier: route.NewClassifier(base.ClassifierCacheSize), stop: make(chan struct{})}
	c.base.Sharding.RulesFile, c.base.Sharding.Rules = "", nil
	st, err := c.build(rules, nil)
	if err != nil {
		return nil, err
	}
	c.state.Store(st)
	c.startXARecovery()
	return c, nil
}

// loadRules reads cfg.Sharding.RulesFile, or returns cfg.Sharding.Rules.
func loadRules(cfg *rwshard.Config) (*Rules, error) {
	if cfg.Sharding.Rules != nil {
		rules, ok := cfg.Sharding.Rules.(*Rules)
		if !ok {
			return nil, &rwshard.ConfigError{Key: "Config.Sharding.Rules", Err: fmt.Errorf("want *shard.Rules, got %T", cfg.Sharding.Rules)}
		}
		return rules, nil
	}
	sc, err := LoadRules(cfg.Sharding.RulesFile)
	if err != nil {
		return nil, err
	}
	if sc.RouteLog {
		cfg.RouteLog = true
	}
	return sc.Build(nil)
}

// connector is a sharded connector's moving part; the driver wraps it in
// an rwshard.Connector.
type connector struct {
	base       *rwshard.Config // the settings every data source gets
	classifier *route.Classifier
	state      atomic.Pointer[state]

	mu      sync.Mutex // reloads and Close
	closed  bool
	stop    chan struct{}  // closed by Close
	retired sync.WaitGroup // goroutines closing the data sources a reload retired, and XA recovery

	xa xaDecisions // decision rows of finished XA transactions, to delete
}

// state is one version of the rules with its data sources.
type state struct {
	rules   *Rules
	router  *Router
	columns columnCache                   // of sharded tables, for INSERT without a column list
	sources map[string]*rwshard.Connector // by data source name
	keys    map[string]string             // data source → what it was built from, to reuse it on reload

	inflight atomic.Int64  // statements and transactions running on this state
	retired  atomic.Bool   // replaced by a reload
	drained  chan struct{} // closed when retired and inflight reaches 0
	once     sync.Once
}

// build opens a connector per data source of rules, reusing those of prev
// whose data source is unchanged.
func (c *connector) build(rules *Rules, prev *state) (*state, error) {
	if err := rules.proved(); err != nil {
		return nil, err
	}
	if err := checkPoolNodes(c.base.Pools, rules); err != nil {
		return nil, err
	}
	st := &state{rules: rules, router: NewRouter(rules),
		sources: map[string]*rwshard.Connector{}, keys: map[string]string{}, drained: make(chan struct{})}
	digest := rules.Digest()
	for name, ds := range rules.DataSources {
		key := fmt.Sprint(ds.Primary, ds.Replicas, ds.Balance, ds.Weights)
		st.keys[name] = key
		if prev != nil && prev.keys[name] == key {
			st.sources[name] = prev.sources[name]
			continue
		}
		cfg, err := dataSourceConfig(c.base, ds)
		if err == nil {
			// A data source a reload keeps keeps its connections, and
			// their rwshard_rules: the digest of the rules it opened with.
			cfg.Backend.ConnectionAttributes = withRules(cfg.Backend.ConnectionAttributes, digest)
			st.sources[name], err = rwshard.NewConnector(cfg)
		}
		if err != nil {
			st.closeNew(prev)
			var ce *rwshard.ConfigError
			if errors.As(err, &ce) { // one prefix: the key names the data source
				return nil, &rwshard.ConfigError{Key: "dataSources." + name + ": " + ce.Key, Value: ce.Value, Err: ce.Err}
			}
			return nil, fmt.Errorf("rwshard: shard: data source %s: %w", name, err)
		}
	}
	return st, nil
}

// closeNew closes the data sources of st that prev does not share.
func (st *state) closeNew(prev *state) error {
	var errs []error
	for name, dc := range st.sources {
		if prev == nil || prev.sources[name] != dc {
			errs = append(errs, dc.Close())
		}
	}
	return errors.Join(errs...)
}

// dataSourceConfig is the configuration of one data source's connector:
// the base settings, the primary's DSN for user, password, database and
// go-sql-driver parameters, and the nodes named <ds>-primary,
// <ds>-replica1, ….
func dataSourceConfig(base *rwshard.Config, ds *DataSource) (*rwshard.Config, error) {
	pc, err := mysql.ParseDSN(ds.Primary)
	if err != nil {
		return nil, &rwshard.ConfigError{Key: "dataSources." + ds.Name + ".primary", Err: err}
	}
	cfg := base.Clone()
	cfg.Sharding.RulesFile, cfg.Sharding.Rules = "", nil
	cfg.DataSource = ds.Name // its own part of every session (rwshard.Session)
	cfg.Backend = pc.Clone()
	cfg.Backend.Net, cfg.Backend.Addr = "", ""
	cfg.Nodes = []rwshard.Node{{Name: ds.Name + "-primary", Net: pc.Net, Addr: pc.Addr}}
	cfg.Weights = nil
	if ds.Balance != "" {
		cfg.Balance = ds.Balance
	}
	for i, r := range ds.Replicas {
		rc, err := mysql.ParseDSN(r)
		if err != nil {
			return nil, &rwshard.ConfigError{Key: fmt.Sprintf("dataSources.%s.replicas[%d]", ds.Name, i), Err: err}
		}
		cfg.Nodes = append(cfg.Nodes, rwshard.Node{Name: fmt.Sprintf("%s-replica%d", ds.Name, i+1), Net: rc.Net, Addr: rc.Addr})
	}
	if len(ds.Weights) > 0 {
		cfg.Balance = "weighted"
		cfg.Weights = map[string]float64{cfg.Nodes[0].Name: 0}
		for i, w := range ds.Weights {
			cfg.Weights[cfg.Nodes[i+1].Name] = w
		}
	}
	if cfg.Pools, err = dataSourcePools(base.Pools, ds.Name, cfg.Nodes); err != nil {
		return nil, err
	}
	return cfg, nil
}

// poolMember reports whether pool member m (Config.Pools) names node of
// data source ds: by its full name (ds_0-replica2) or, for every data
// source, by the name within it (replica2).
func poolMember(m, ds, node string) bool { return node == m || node == ds+"-"+m }

// dataSourcePools is the part of the replica pools in data source ds:
// pool → its nodes there. Pools apply in every data source with the
// same meaning, so each needs at least one node in each: a multi-shard
// report would otherwise read some shards from the replicas it must keep
// off, or fail there.
func dataSourcePools(pools map[string][]string, ds string, nodes []rwshard.Node) (map[string][]string, error) {
	if len(pools) == 0 {
		return nil, nil
	}
	out := make(map[string][]string, len(pools))
	for _, pool := range slices.Sorted(maps.Keys(pools)) {
		for _, n := range nodes {
			for _, m := range pools[pool] {
				if poolMember(m, ds, n.Name) {
					out[pool] = append(out[pool], n.Name)
					break
				}
			}
		}
		if len(out[pool]) == 0 {
			names := make([]string, len(nodes))
			for i, n := range nodes {
				names[i] = n.Name
			}
			return nil, &rwshard.ConfigError{Key: "rwshard.pools", Value: pool + ":" + strings.Join(pools[pool], "|"),
				Err: fmt.Errorf("pool %s has no node in data source %s (nodes: %s); name replicaN for that replica of every data source, or %s-replicaN",
					pool, ds, strings.Join(names, ", "), ds)}
		}
	}
	return out, nil
}

// checkPoolNodes refuses a pool member that names no node of any data
// source.
func checkPoolNodes(pools map[string][]string, rules *Rules) error {
	for _, pool := range slices.Sorted(maps.Keys(pools)) {
		for _, m := range pools[pool] {
			found := false
			for name, ds := range rules.DataSources {
				for i := range len(ds.Replicas) + 1 {
					node := name + "-primary"
					if i > 0 {
						node = fmt.Sprintf("%s-replica%d", name, i)
					}
					found = found || poolMember(m, name, node)
				}
			}
			if !found {
				return &rwshard.ConfigError{Key: "rwshard.pools", Value: pool + ":" + m,
					Err: fmt.Errorf("no node %q in any data source; a data source's nodes are <ds>-primary, <ds>-replica1, …, and replicaN names that replica of every data source", m)}
			}
		}
	}
	return nil
}

// DataSourceConfigs returns, for a sharded Config, the configuration of
// each data source's connector (as the sharded connector builds it), by
// name: for tools such as `rwshard check` that look at every node.
func DataSourceConfigs(cfg *rwshard.Config) (map[string]*rwshard.Config, error) {
	if cfg.Sharding.RulesFile == "" && cfg.Sharding.Rules == nil {
		return nil, &rwshard.ConfigError{Key: "rwshard.rulesFile", Err: errors.New("not a sharded configuration")}
	}
	base := cfg.Clone()
	rules, err := loadRules(base)
	if err != nil {
		return nil, err
	}
	base.Sharding.RulesFile, base.Sharding.Rules = "", nil
	out := make(map[string]*rwshard.Config, len(rules.DataSources))
	for name, ds := range rules.DataSources {
		if out[name], err = dataSourceConfig(base, ds); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// acquire pins the current state for one statement or transaction.
func (c *connector) acquire() *state {
	for {
		st := c.state.Load()
		st.inflight.Add(1)
		if c.state.Load() == st || !st.retired.Load() {
			return st
		}
		st.release() // swapped between the load and the add: take the new one
	}
}

// release ends one use of the state.
func (st *state) release() {
	if st.inflight.Add(-1) == 0 && st.retired.Load() {
		st.once.Do(func() { close(st.drained) })
	}
}

// Connect returns a sharded logical connection. It does no I/O.
func (c *connector) Connect(context.Context) (driver.Conn, error) {
	return &conn{c: c, subs: map[string]*sub{}}, nil
}

// Driver is not used: the driver wraps this connector in its own.
func (c *connector) Driver() driver.Driver { return nil }

// DataSources returns the connector of every data source, in name order.
func (c *connector) DataSources() []*rwshard.Connector {
	st := c.state.Load()
	names := make([]string, 0, len(st.sources))
	for name := range st.sources {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]*rwshard.Connector, len(names))
	for i, name := range names {
		out[i] = st.sources[name]
	}
	return out
}

// Reload validates new rules, opens the data sources they add or change,
// swaps them in atomically and closes, once the statements and
// transactions still running on the old rules have finished, the data
// sources no longer used. On error nothing changes.
func (c *connector) Reload(ctx context.Context, rules any) error {
	r, ok := rules.(*Rules)
	if !ok || r == nil {
		return &rwshard.ConfigError{Key: "rules", Err: fmt.Errorf("want *shard.Rules, got %T", rules)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return &rwshard.RouteError{Err: rwshard.ErrClosed}
	}
	old := c.state.Load()
	st, err := c.build(r, old)
	if err != nil {
		return err
	}
	c.state.Store(st)
	old.retired.Store(true)
	old.inflight.Add(1)
	old.release() // closes drained if nothing runs on it
	c.retired.Go(func() {
		select {
		case <-old.drained:
		case <-c.stop: // closing: statements still on the old rules fail
		}
		for name, dc := range old.sources {
			if st.sources[name] != dc {
				_ = dc.Close()
			}
		}
	})
	return nil
}

// ReloadFile reads a rules file (see rwshard.Config.Sharding.RulesFile) and
// reloads it.
func (c *connector) ReloadFile(ctx context.Context, path string) error {
	sc, err := LoadRules(path)
	if err != nil {
		return err
	}
	rules, err := sc.Build(nil)
	if err != nil {
		return err
	}
	return c.Reload(ctx, rules)
}

// Close closes every data source, those that a reload retired included,
// and waits for the goroutines that close them.
func (c *connector) Close() error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.stop)
	}
	c.mu.Unlock()
	c.retired.Wait()
	return c.state.Load().closeNew(nil)
}
