package rwshard

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard/balance"
	"github.com/rwshard/rwshard/internal/monitor"
	"github.com/rwshard/rwshard/internal/route"
	"github.com/rwshard/rwshard/internal/shardhook"
)

var (
	_ driver.Driver        = (*Driver)(nil)
	_ driver.DriverContext = (*Driver)(nil)
	_ driver.Connector     = (*Connector)(nil)
	_ io.Closer            = (*Connector)(nil)
)

// DriverName is the name rwshard registers with database/sql.
const DriverName = "rwshard"

func init() {
	sql.Register(DriverName, &Driver{})
}

// Driver is rwshard's database/sql driver. sql.Open("rwshard", dsn) uses
// OpenConnector: one Connector, and one set of backend pools, per *sql.DB.
type Driver struct {
	c *Connector // the Connector whose Driver this is (see ConnectorOf); nil for the registered one
}

// OpenConnector parses dsn (see ParseDSN) and returns a Connector.
func (d *Driver) OpenConnector(dsn string) (driver.Connector, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	return NewConnector(cfg)
}

// Open is OpenConnector then Connect. database/sql never calls it (it uses
// OpenConnector); a direct caller gets a connection that owns its own
// Connector and closes it with the connection.
func (d *Driver) Open(dsn string) (driver.Conn, error) {
	c, err := d.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	dc, err := c.Connect(context.Background())
	if err != nil {
		c.(*Connector).Close()
		return nil, err
	}
	switch lc := dc.(type) {
	case *conn:
		lc.owner = c.(*Connector)
	case interface{ CloseWith(io.Closer) }: // a sharded connection
		lc.CloseWith(c.(*Connector))
	}
	return dc, nil
}

// Connector opens logical connections over one cluster. It owns an
// immutable copy of its Config. Close stops it and closes the backend pools
// it opened (not handles given to OpenDB); database/sql calls Close from
// DB.Close.
type Connector struct {
	cfg    *Config  // normalized, immutable
	cl     *cluster // read/write splitting over one group; nil when sharded
	sh     sharded  // sharded: the sharding module's connector
	closed atomic.Bool
	once   sync.Once
}

// sharded is what the sharding module's connector offers beyond a
// driver.Connector (see internal/shardhook): its data sources, each an
// ordinary Connector, for Stats; Explain; and reloading its rules.
type sharded interface {
	shardhook.Connector
	DataSources() []*Connector
	Explain(ctx context.Context, query string, args ...any) (Plan, error)
	Reload(ctx context.Context, rules any) error
	ReloadFile(ctx context.Context, path string) error
}

// errNoShardModule: a sharded Config in a program without the sharding
// module.
var errNoShardModule = errors.New(`sharding needs the sharding module: import _ "github.com/rwshard/rwshard/shard"`)

// newShardedConnector opens the sharding module's connector for cfg.
func newShardedConnector(cfg *Config) (*Connector, error) {
	key, val := "rwshard.rulesFile", cfg.Sharding.RulesFile
	if cfg.Sharding.Rules != nil {
		key, val = "Config.Sharding.Rules", ""
	}
	open := shardhook.Lookup()
	if open == nil {
		return nil, &ConfigError{Key: key, Value: val, Err: errNoShardModule}
	}
	sc, err := open(cfg)
	if err != nil {
		return nil, err
	}
	sh, ok := sc.(sharded)
	if !ok {
		sc.Close()
		return nil, &ConfigError{Key: key, Value: val, Err: errors.New("the sharding module does not match this driver's version")}
	}
	return &Connector{cfg: cfg, sh: sh}, nil
}

// NewConnector validates cfg, takes a private copy and opens one backend
// pool per node. It does not connect: the first statement does.
func NewConnector(cfg *Config) (*Connector, error) {
	if cfg == nil {
		return nil, configErr("config", "", "nil Config")
	}
	cfg = cfg.Clone()
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	if cfg.sharded() {
		return newShardedConnector(cfg)
	}
	cl, err := newCluster(cfg)
	if err != nil {
		return nil, err
	}
	return &Connector{cfg: cfg, cl: cl}, nil
}

// Config returns a copy of the connector's configuration, defaults
// filled in.
func (c *Connector) Config() *Config { return c.cfg.Clone() }

// newCluster opens the pools of one primary + replicas group and starts
// its health monitor. cfg is normalized and owned by the cluster.
func newCluster(cfg *Config) (*cluster, error) {
	policy, err := cfg.policy()
	if err != nil {
		return nil, err
	}
	cl := &cluster{
		cfg:        cfg,
		galera:     cfg.Topology == TopologyGalera,
		byName:     make(map[string]*node, len(cfg.Nodes)),
		policy:     policy,
		classifier: route.NewTaggingClassifier(cfg.ClassifierCacheSize, cfg.poolTagger()),
		tag:        cfg.poolTagger(),
		budget:     monitor.NewBudget(cfg.RetryBudget, 1),
		weighted:   cfg.Policy == nil && cfg.Balance == "weighted",
	}
	cl.txTracer, _ = cfg.Tracer.(TxTracer)
	cl.global.Store(&cl.own)
	cl.report, cl.ryw = cfg.Tracer != nil || cfg.RouteLog, cfg.Consistency != ConsistencyEventual
	cl.replay = len(cfg.dbs) == 0
	for _, f := range cfg.ReplicaFunctions {
		if f == "*" {
			cl.anyFunc = true
		}
		if cl.safeFuncs == nil {
			cl.safeFuncs = map[string]bool{}
		}
		cl.safeFuncs[strings.ToLower(f)] = true
	}
	names := cfg.readCandidates()
	version := moduleVersion()
	for i, nc := range cfg.Nodes {
		n := &node{name: nc.Name, index: i, galera: cfg.Topology == TopologyGalera}
		if len(cfg.dbs) > 0 {
			n.db = cfg.dbs[i]
		} else if n.conns, n.probeDB, err = openNode(cfg, nc, &n.stmts, &n.waitTimeout, version); err != nil {
			closeNodes(cl.nodes)
			return nil, err
		} else {
			n.maxOpen = pick(nc.MaxOpenConns, cfg.MaxOpenConns)
			n.limited = n.maxOpen > 0 || cfg.FleetSize > 0
			n.held.lifetime = pick(nc.ConnMaxLifetime, cfg.ConnMaxLifetime)
		}
		cl.nodes = append(cl.nodes, n)
		cl.byName[n.name] = n
	}
	cl.pools, cl.poolIdx = []string{""}, map[string]int{}
	for _, pool := range slices.Sorted(maps.Keys(cfg.Pools)) {
		cl.poolIdx[pool] = len(cl.pools)
		for _, name := range cfg.Pools[pool] {
			cl.byName[name].pool = len(cl.pools)
		}
		cl.pools = append(cl.pools, pool)
	}
	opts := monitor.Options{
		Down:      cl.interrupt,
		Interval:  cfg.ProbeInterval,
		Timeout:   cfg.ProbeTimeout,
		FailAfter: cfg.FailAfter,
		MaxLag:    cfg.MaxReplicaLag,
		Observer:  rampObserver{cl: cl, next: cfg.Observer},
	}
	if cfg.HeartbeatWrite {
		opts.Beat = cl.beat
	}
	if cfg.Topology == TopologyGalera {
		g := &monitor.GaleraOptions{Donor: cfg.Galera.Donor, NoFailback: cfg.Galera.NoFailback,
			MaxRecvQueue: int64(cfg.Galera.MaxRecvQueue), MaxWriters: cfg.Galera.MaxWriters}
		for _, name := range cfg.Galera.Writers {
			g.Priority = append(g.Priority, cl.byName[name].index)
		}
		opts.Galera = g
	}
	cl.mon = monitor.New(names, 0, cl.probe, opts)
	cl.holds = newHoldWatch(cfg.HoldWarn, cfg.HoldLimit, cl.mon.Emit)
	for i, n := range cl.nodes {
		n.h = cl.mon.Node(i)
	}
	size := len(cl.nodes)
	cl.cands.New = func() any {
		s := make([]balance.Candidate, 0, size)
		return &s
	}
	// One host: nothing to route around, no role or lag to learn. As with
	// go-sql-driver alone, no background connections (a user's dial
	// function sees only the contexts of the user's statements).
	cl.probing = cfg.Health && len(cl.nodes) > 1
	if cl.probing {
		cl.mon.Start()
	}
	return cl, nil
}

// close stops the monitor and closes the pools rwshard opened.
func (cl *cluster) close() error {
	cl.mon.Close()
	cl.holds.close()
	cl.leave() // no probe joins a scope after the monitor stopped
	return closeNodes(cl.nodes)
}

// openNode opens the backend pool of one node, and the health probes' own
// pool of one connection that allows multi-statement queries. Both connect
// lazily.
func openNode(cfg *Config, nc Node, stats *stmtStats, probed *atomic.Int64, version string) (conns *connPool, probeDB *sql.DB, err error) {
	mc := cfg.Backend.Clone()
	mc.Net, mc.Addr = nc.Net, nc.Addr
	mc.ConnectionAttributes = connAttrs(cfg, version)
	// rwshard handles read-only rejections itself (see Config.Backend).
	mc.RejectReadOnly = false
	switch cfg.DriverLog {
	case DriverLogSlog:
		mc.Logger = driverLogger{l: cfg.Logger, node: nc.Name}
	case DriverLogOff:
		mc.Logger = &mysql.NopLogger{}
	}
	// rwshard learns each connection's socket, to interrupt statements in
	// flight on a node taken out of rotation; a network registered with
	// mysql.RegisterDialContext is dialed by go-sql-driver as it is.
	if mc.DialFunc != nil || mc.Net == "tcp" || mc.Net == "tcp4" || mc.Net == "tcp6" || mc.Net == "unix" {
		mc.DialFunc = dialer(mc.DialFunc)
	}
	inner, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, nil, &ConfigError{Key: "dsn", Value: nc.Name, Err: err}
	}
	pc := mc.Clone()
	pc.MultiStatements = true
	probeInner, err := mysql.NewConnector(pc)
	if err != nil {
		return nil, nil, &ConfigError{Key: "dsn", Value: nc.Name, Err: err}
	}
	lifetime := pick(nc.ConnMaxLifetime, cfg.ConnMaxLifetime)
	conns = newConnPool(&nodeConnector{inner: inner, timeout: cfg.ConnectTimeout, cacheSize: cfg.StmtCacheSize, stats: stats, track: true, wait: sessionWait(mc, probed)},
		pick(nc.MaxOpenConns, cfg.MaxOpenConns), pick(nc.MaxIdleConns, cfg.MaxIdleConns), lifetime, cfg.ConnMaxIdleTime)
	conns.capped = idleCapLogger(cfg, nc.Name)
	reserve := 0 // the connector's own connections to the node, outside the pool
	if cfg.Health && len(cfg.Nodes) > 1 {
		reserve = 1
		if cfg.HeartbeatWrite {
			reserve = 2
		}
	}
	conns.budget = connBudget{node: nc.Name, fleet: cfg.FleetSize, reserve: reserve, wait: cfg.ConnWait, look: true}
	// One probe at a time per node (the monitor runs one loop per node), on a
	// connection it holds (heldProbe); the heartbeat writer's beside it.
	probeDB = sql.OpenDB(&nodeConnector{inner: probeInner, timeout: cfg.ConnectTimeout})
	probeDB.SetMaxOpenConns(2)
	probeDB.SetMaxIdleConns(2)
	probeDB.SetConnMaxLifetime(lifetime)
	return conns, probeDB, nil
}

// pick returns the override if set, else the default.
func pick[T comparable](override, def T) T {
	var zero T
	if override != zero {
		return override
	}
	return def
}

func closeNodes(nodes []*node) error {
	var errs []error
	for _, n := range nodes {
		if n.conns != nil {
			errs = append(errs, n.conns.close())
		}
		if n.probeDB != nil {
			n.held.release()
			errs = append(errs, n.probeDB.Close())
		}
	}
	return errors.Join(errs...)
}

// Connect returns a logical connection. It does no I/O and holds no
// backend connection until a statement needs one.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	if c.closed.Load() {
		return nil, &RouteError{Err: ErrClosed}
	}
	if c.sh != nil {
		return c.sh.Connect(ctx)
	}
	return newConn(c.cl), nil
}

// Driver returns rwshard's Driver, bound to c: ConnectorOf finds c
// through sql.DB.Driver without taking a connection.
func (c *Connector) Driver() driver.Driver { return &Driver{c: c} }

// Close closes the backend pools rwshard opened. Handles given to OpenDB
// stay open: their owner closes them.
func (c *Connector) Close() error {
	var err error
	c.once.Do(func() {
		c.closed.Store(true)
		if c.sh != nil {
			err = c.sh.Close()
			return
		}
		err = c.cl.close()
	})
	return err
}

// Ready waits until health has probed every node once (answered or
// failed), or ctx ends. NewConnector and sql.Open do no I/O: the first
// probes run in the background, and the first statements wait for them,
// at most ConnectTimeout. A service that wants to know its nodes are up
// before it takes traffic calls Ready at start-up. Without health
// (Config.Health false) it returns at once.
func (c *Connector) Ready(ctx context.Context) error {
	for _, cl := range c.clusters() {
		if !cl.probing {
			continue
		}
		select {
		case <-cl.mon.Ready():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Reload replaces the rules of a sharded connector (rules built in code,
// a *shard.Rules): validated first, then swapped atomically; statements
// and transactions in flight finish on the rules they started with. On
// error nothing changes. Refused after Close, and for a connector that is
// not sharded.
func (c *Connector) Reload(ctx context.Context, rules any) error {
	if err := c.reloadable(); err != nil {
		return err
	}
	return c.sh.Reload(ctx, rules)
}

// ReloadFile reads a rules file (see Config.Sharding.RulesFile) and reloads it.
func (c *Connector) ReloadFile(ctx context.Context, path string) error {
	if err := c.reloadable(); err != nil {
		return err
	}
	return c.sh.ReloadFile(ctx, path)
}

func (c *Connector) reloadable() error {
	if c.closed.Load() {
		return &RouteError{Err: ErrClosed}
	}
	if c.sh == nil {
		return &ConfigError{Key: "rules", Err: errors.New("the connector is not sharded")}
	}
	return nil
}

// OpenDB returns a *sql.DB that routes over existing pools: primary and
// replicas, named primary, replica1, … in Config.Nodes. Each configure
// function then adjusts the Config (node names, weights, Consistency, a
// Policy, a Tracer: anything a DSN cannot say). rwshard never closes the
// pools. This is the door for unit tests with go-sqlmock and for services
// that build their own pools. Its defaults suit unit tests: health probes
// off and Consistency eventual (no statement the test did not expect); a
// service sets Health and Consistency.
//
// rwshard checks a connection out of such a pool with DB.Conn, gets its
// driver connection through Conn.Raw, and uses it while it holds the
// *sql.Conn, after Raw has returned: database/sql's documentation forbids
// that. database/sql itself uses a connection that a *sql.Conn holds only
// through that *sql.Conn, which rwshard alone has, so the rule is not
// broken in effect; it stays the one place rwshard steps outside it. Pools
// rwshard opens itself (NewConnector, sql.Open) are its own and have no
// such exception.
func OpenDB(primary *sql.DB, replicas []*sql.DB, configure ...func(*Config)) (*sql.DB, error) {
	if primary == nil {
		return nil, configErr("primary", "", "nil *sql.DB")
	}
	cfg := NewConfig()
	// The unit-test door: no probes (see Config.Health) and no
	// read-your-writes statements (see Config.Consistency), so that
	// go-sqlmock handles see only the statements under test.
	cfg.Health = false
	cfg.Consistency = ConsistencyEventual
	cfg.dbs = append([]*sql.DB{primary}, replicas...)
	for i, db := range cfg.dbs {
		if db == nil {
			return nil, configErr("replicas", defaultName(i), "nil *sql.DB")
		}
		cfg.Nodes = append(cfg.Nodes, Node{Name: defaultName(i)})
	}
	for _, f := range configure {
		f(cfg)
	}
	c, err := NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}
