package rwshard

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard/shard"
)

// Sharding: the rules, and one cluster (primary + replicas, with health,
// balancing and consistency) per data source. The state is swapped as a
// whole on reload; statements hold the state they started with.

// sharding is a sharded Connector's moving part.
type sharding struct {
	base  *Config // the settings every data source gets
	state atomic.Pointer[shardState]
	mu    sync.Mutex // serializes reloads
}

// shardState is one version of the rules with its clusters.
type shardState struct {
	rules    *shard.Rules
	router   *shard.Router
	clusters map[string]*cluster // by data source name
	dsns     map[string]string   // data source → its DSNs, to reuse unchanged clusters on reload

	inflight atomic.Int64  // statements and transactions running on this state
	retired  atomic.Bool   // replaced by a reload
	drained  chan struct{} // closed when retired and inflight reaches 0
	once     sync.Once
}

func newShardedConnector(cfg *Config) (*Connector, error) {
	rules, err := cfg.loadRules()
	if err != nil {
		return nil, err
	}
	sh := &sharding{base: cfg}
	st, err := sh.build(rules, nil)
	if err != nil {
		return nil, err
	}
	sh.state.Store(st)
	return &Connector{sh: sh}, nil
}

// loadRules reads Config.RulesFile, or returns Config.Rules.
func (c *Config) loadRules() (*shard.Rules, error) {
	if c.Rules != nil {
		return c.Rules, nil
	}
	sc, err := shard.LoadRules(c.RulesFile)
	if err != nil {
		return nil, err
	}
	if sc.RouteLog {
		c.RouteLog = true
	}
	return sc.Build(nil)
}

// build opens a cluster per data source of rules, reusing the clusters of
// prev whose data source is unchanged.
func (sh *sharding) build(rules *shard.Rules, prev *shardState) (*shardState, error) {
	st := &shardState{rules: rules, router: shard.NewRouter(rules),
		clusters: map[string]*cluster{}, dsns: map[string]string{}, drained: make(chan struct{})}
	for name, ds := range rules.DataSources {
		key := fmt.Sprint(ds.Primary, ds.Replicas, ds.Balance, ds.Weights)
		st.dsns[name] = key
		if prev != nil && prev.dsns[name] == key {
			st.clusters[name] = prev.clusters[name]
			continue
		}
		cfg, err := dataSourceConfig(sh.base, ds)
		if err == nil {
			st.clusters[name], err = newCluster(cfg)
		}
		if err != nil {
			st.closeNew(prev)
			return nil, fmt.Errorf("rwshard: data source %s: %w", name, err)
		}
	}
	return st, nil
}

// closeNew closes the clusters of st that prev does not share.
func (st *shardState) closeNew(prev *shardState) error {
	var first error
	for name, cl := range st.clusters {
		if prev != nil && prev.clusters[name] == cl {
			continue
		}
		if err := cl.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// dataSourceConfig is the cluster configuration of one data source: the
// base settings, the primary's DSN for user, password, database and
// go-sql-driver parameters, and the nodes named <ds>-primary,
// <ds>-replica1, ….
func dataSourceConfig(base *Config, ds *shard.DataSource) (*Config, error) {
	pc, err := mysql.ParseDSN(ds.Primary)
	if err != nil {
		return nil, &ConfigError{Key: "dataSources." + ds.Name + ".primary", Err: err}
	}
	cfg := base.Clone()
	cfg.RulesFile, cfg.Rules = "", nil
	cfg.Backend = pc.Clone()
	cfg.Backend.Net, cfg.Backend.Addr = "", ""
	cfg.Nodes = []Node{{Name: ds.Name + "-primary", Net: pc.Net, Addr: pc.Addr}}
	cfg.Weights = nil
	if ds.Balance != "" {
		cfg.Balance = ds.Balance
	}
	for i, r := range ds.Replicas {
		rc, err := mysql.ParseDSN(r)
		if err != nil {
			return nil, &ConfigError{Key: fmt.Sprintf("dataSources.%s.replicas[%d]", ds.Name, i), Err: err}
		}
		cfg.Nodes = append(cfg.Nodes, Node{Name: fmt.Sprintf("%s-replica%d", ds.Name, i+1), Net: rc.Net, Addr: rc.Addr})
	}
	if len(ds.Weights) > 0 {
		cfg.Balance = "weighted"
		cfg.Weights = map[string]float64{cfg.Nodes[0].Name: 0}
		for i, w := range ds.Weights {
			cfg.Weights[cfg.Nodes[i+1].Name] = w
		}
	}
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// acquire pins the current state for one statement or transaction.
func (sh *sharding) acquire() *shardState {
	for {
		st := sh.state.Load()
		st.inflight.Add(1)
		if sh.state.Load() == st || !st.retired.Load() {
			return st
		}
		st.release() // swapped between the load and the add: take the new one
	}
}

// release ends one use of the state.
func (st *shardState) release() {
	if st.inflight.Add(-1) == 0 && st.retired.Load() {
		st.once.Do(func() { close(st.drained) })
	}
}

// Reload validates new rules, opens the data sources they add or change,
// swaps them in atomically and closes, once the statements and
// transactions still running on the old rules have finished, the data
// sources no longer used. On error nothing changes.
func (c *Connector) Reload(ctx context.Context, rules *shard.Rules) error {
	if c.sh == nil {
		return &ConfigError{Key: "rules", Err: fmt.Errorf("the connector is not sharded")}
	}
	sh := c.sh
	sh.mu.Lock()
	defer sh.mu.Unlock()
	old := sh.state.Load()
	st, err := sh.build(rules, old)
	if err != nil {
		return err
	}
	sh.state.Store(st)
	old.retired.Store(true)
	old.inflight.Add(1)
	old.release() // closes drained if nothing runs on it
	go func() {
		<-old.drained
		for name, cl := range old.clusters {
			if st.clusters[name] != cl {
				_ = cl.close()
			}
		}
	}()
	return nil
}

// ReloadFile reads a rules file (see Config.RulesFile) and reloads it.
func (c *Connector) ReloadFile(ctx context.Context, path string) error {
	sc, err := shard.LoadRules(path)
	if err != nil {
		return err
	}
	rules, err := sc.Build(nil)
	if err != nil {
		return err
	}
	return c.Reload(ctx, rules)
}

// close closes every cluster of the current state.
func (sh *sharding) close() error {
	return sh.state.Load().closeNew(nil)
}

// DataSourceConfigs returns, for a sharded Config, the configuration of
// each data source's cluster (as the connector builds it), by name: for
// tools such as `rwshard check` that look at every node.
func (c *Config) DataSourceConfigs() (map[string]*Config, error) {
	if !c.sharded() {
		return nil, &ConfigError{Key: "rwshard.rulesFile", Err: fmt.Errorf("not a sharded configuration")}
	}
	base := c.Clone()
	if err := base.normalize(); err != nil {
		return nil, err
	}
	rules, err := base.loadRules()
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Config, len(rules.DataSources))
	for name, ds := range rules.DataSources {
		if out[name], err = dataSourceConfig(base, ds); err != nil {
			return nil, err
		}
	}
	return out, nil
}
