package rwshard

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseDSN(t *testing.T) {
	c, err := ParseDSN("app:s3cret@tcp(10.0.0.1:3306),tcp(10.0.0.2),unix(/run/mysqld/r2.sock)/shop?parseTime=true" +
		"&rwshard.weights=0,4,3&rwshard.connectTimeout=2s&loc=UTC&rwshard.readOnlyTx=replica")
	require.NoError(t, err)
	assert.Equal(t, "app", c.Backend.User)
	assert.Equal(t, "s3cret", c.Backend.Passwd)
	assert.Equal(t, "shop", c.Backend.DBName)
	assert.True(t, c.Backend.ParseTime)
	assert.Equal(t, []Node{
		{Name: "primary", Net: "tcp", Addr: "10.0.0.1:3306"},
		{Name: "replica1", Net: "tcp", Addr: "10.0.0.2:3306"},
		{Name: "replica2", Net: "unix", Addr: "/run/mysqld/r2.sock"},
	}, c.Nodes)
	assert.Equal(t, "weighted", c.Balance)
	assert.Equal(t, map[string]float64{"primary": 0, "replica1": 4, "replica2": 3}, c.Weights)
	assert.Equal(t, 2*time.Second, c.ConnectTimeout)
	assert.Equal(t, TxReadReplica, c.ReadOnlyTx)
	assert.Equal(t, defaultConnMaxLifetime, c.ConnMaxLifetime)

	// Session variables still reach go-sql-driver, which sets them on
	// each connection; only rwshard's own names need the prefix.
	c, err = ParseDSN("app:pw@tcp(h1)/db?wait_timeout=60&sql_mode=%27ANSI_QUOTES%27&rwshard.probeInterval=2s")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"wait_timeout": "60", "sql_mode": "'ANSI_QUOTES'"}, c.Backend.Params)
	assert.Equal(t, 2*time.Second, c.ProbeInterval)
}

func TestDSNRoundTrip(t *testing.T) {
	for _, dsn := range []string{
		"tcp(127.0.0.1:3306)/",
		"app@tcp(h1:3306)/db",
		"app:pw@tcp(h1:3306),tcp(h2:3307)/db?parseTime=true&loc=Local",
		"app:p@ss/w?rd@tcp(h1:3306),tcp(h2:3306)/db?rwshard.balance=least_in_flight",
		"u:p@tcp([::1]:3306),tcp(h2:3306),tcp(h3:3306)/db?rwshard.names=main,east,west&rwshard.weights=1,2.5,0",
		"u:p@tcp(h1:3306),tcp(h2:3306)/db?rwshard.connectTimeout=500ms&rwshard.connMaxLifetime=1m&rwshard.connMaxIdleTime=10s" +
			"&rwshard.maxOpenConns=50&rwshard.maxIdleConns=5&rwshard.stmtCacheSize=0&rwshard.classifierCacheSize=100&rwshard.readOnlyTx=replica",
		"u:p@tcp(h1:3306)/db?interpolateParams=true&rejectReadOnly=true&timeout=1s&readTimeout=2s",
	} {
		c1, err := ParseDSN(dsn)
		require.NoError(t, err, dsn)
		formatted := c1.FormatDSN()
		c2, err := ParseDSN(formatted)
		require.NoError(t, err, formatted)
		assert.Equal(t, c1, c2, "%s\n→ %s", dsn, formatted)
		// Canonical: formatting again changes nothing.
		assert.Equal(t, formatted, c2.FormatDSN())
	}
}

func TestFormatDSNCanonical(t *testing.T) {
	c, err := ParseDSN("u:p@tcp(h1),tcp(h2)/db?rwshard.maxOpenConns=9&parseTime=true&rwshard.balance=random")
	require.NoError(t, err)
	assert.Equal(t, "u:p@tcp(h1:3306),tcp(h2:3306)/db?parseTime=true&rwshard.balance=random&rwshard.maxOpenConns=9", c.FormatDSN())
}

func TestParseDSNErrors(t *testing.T) {
	for _, tc := range []struct {
		dsn, key, msg string
	}{
		{"app:pw@tcp(h1:3306)", "dsn", "missing the slash"},
		{"app:pw@/db", "hosts", "no host"},
		{"app:pw@h1:3306/db", "hosts", "expected net(address)"},
		{"app:pw@tcp()/db", "hosts", "empty address"},
		{"app:pw@tcp(h1)tcp(h2)/db", "hosts", "separated by commas"},
		{"app:pw@tcp(h1),/db", "hosts", "separated by commas"},
		{"app:pw@tcp(10.0.0.1:3306,10.0.0.2:3306)/db", "hosts", "one address per host: write tcp(h1:3306),tcp(h2:3306)"},
		{"app:pw@tcp(h1,h2)/db", "hosts", "one address per host"},
		{"app:pw@u$p(h1)/db", "hosts", "not a network name"},
		{"app:pw@tcp(h1:3306),tcp(h2:3306),tcp(H2:3306)/db", "hosts", "replica1 and replica2 are the same server"},
		{"app:pw@tcp(127.0.0.1:3306),tcp(localhost:3306)/db", "hosts", "primary and replica1 are the same server"},
		{"app:pw@tcp(h1),tcp(h1:3306)/db", "hosts", "the same server"},
		{"app:pw@tcp(h1)/db?rwshard.heartbeatTable=hb;DROP+TABLE+t", "rwshard.heartbeatTable", "not a table name"},
		{"app:pw@tcp(h1)/db?rwshard.heartbeatTable=a.b.c", "rwshard.heartbeatTable", "not a table name"},
		{"app:pw@tcp(h1)/db?rwshard.heartbeatTable=`hb", "rwshard.heartbeatTable", "not a table name"},
		{"app:pw@tcp(h1)/db?rwshard.heartbeatTable=percona.", "rwshard.heartbeatTable", "not a table name"},
		{"app:pw@tcp(h1),tcp(h2)/db?rwshard.wieghts=1,2", "rwshard.wieghts", "unknown rwshard parameter"},
		{"app:pw@tcp(h1),tcp(h2)/db?rwshard.weights=0,4,3", "rwshard.weights", "3 weights for 2 hosts"},
		{"app:pw@tcp(h1),tcp(h2)/db?rwshard.weights=0,four", "rwshard.weights", `weight "four" of host 2 is not a number`},
		{"app:pw@tcp(h1),tcp(h2)/db?rwshard.weights=0,NaN", "rwshard.weights", `weight "NaN" of host 2`},
		{"app:pw@tcp(h1),tcp(h2)/db?rwshard.weights=0,-1", "rwshard.weights", `weight "-1" of host 2`},
		{"app:pw@tcp(h1),tcp(h2)/db?rwshard.weights=0,0", "rwshard.weights", "every weight is 0"},
		{"app:pw@tcp(h1),tcp(h2)/db?rwshard.weights=1,2&rwshard.balance=random", "rwshard.weights", "need rwshard.balance=weighted"},
		{"app:pw@tcp(h1),tcp(h2)/db?rwshard.balance=fastest", "rwshard.balance", "fastest"},
		{"app:pw@tcp(h1),tcp(h2)/db?rwshard.balance=weighted", "rwshard.balance", "needs weights"},
		{"app:pw@tcp(h1),tcp(h2)/db?rwshard.names=a", "rwshard.names", "1 names for 2 hosts"},
		{"app:pw@tcp(h1),tcp(h2)/db?rwshard.names=a,a", "rwshard.names", "name used by nodes 0 and 1"},
		{"app:pw@tcp(h1),tcp(h2)/db?rwshard.names=a,", "rwshard.names", "empty name for host 2"},
		{"app:pw@tcp(h1)/db?rwshard.connectTimeout=soon", "rwshard.connectTimeout", "not a duration"},
		{"app:pw@tcp(h1)/db?rwshard.connectTimeout=-1s", "rwshard.connectTimeout", "not a duration"},
		{"app:pw@tcp(h1)/db?rwshard.maxOpenConns=-3", "rwshard.maxOpenConns", "not an integer >= 0"},
		{"app:pw@tcp(h1)/db?rwshard.readOnlyTx=sometimes", "rwshard.readOnlyTx", "must be one of primary, replica"},
		{"app:pw@tcp(h1)/db?rwshard.balance=random&rwshard.balance=random", "rwshard.balance", "given twice"},
		{"app:pw@tcp(h1)/db?parseTime=maybe", "parseTime", `parseTime="maybe": invalid bool value`},
		// rwshard's own parameters without the prefix, which go-sql-driver
		// would send to the server as session variables on every connection.
		{"app:pw@tcp(h1),tcp(h2)/db?parseTime=true&probeInterval=2s", "probeInterval", `probeInterval="2s": an rwshard parameter: write rwshard.probeInterval`},
		{"app:pw@tcp(h1),tcp(h2)/db?MaxReplicaLag=5s", "MaxReplicaLag", "write rwshard.maxReplicaLag"},
		{"app:pw@tcp(h1),tcp(h2)/db?weights=1,2", "weights", "write rwshard.weights"},
	} {
		_, err := ParseDSN(tc.dsn)
		var ce *ConfigError
		if !assert.True(t, errors.As(err, &ce), "%s: want *ConfigError, got %v", tc.dsn, err) {
			continue
		}
		assert.Equal(t, tc.key, ce.Key, tc.dsn)
		assert.Contains(t, err.Error(), tc.msg, tc.dsn)
		assert.True(t, strings.HasPrefix(err.Error(), "rwshard: "), err.Error())
		assert.NotContains(t, err.Error(), "pw", "password leaked: %v", err)
	}
}

func TestConfigNormalize(t *testing.T) {
	c := NewConfig()
	_, err := NewConnector(c)
	assert.ErrorContains(t, err, "rwshard: config hosts: no host")

	c.Nodes = []Node{{Addr: "h1:3306"}, {Addr: "h2:3306"}}
	c.Weights = map[string]float64{"replica1": 1, "replcia2": 1}
	_, err = NewConnector(c)
	assert.ErrorContains(t, err, `rwshard: config rwshard.weights="replcia2": weight for a node that does not exist; nodes: primary, replica1`)

	// A replica without a weight is an error too, not an idle replica.
	c.Nodes = append(c.Nodes, Node{Addr: "h3:3306"})
	c.Weights = map[string]float64{"replica1": 1}
	_, err = NewConnector(c)
	assert.ErrorContains(t, err, `"replica2"`)
	assert.ErrorContains(t, err, "missing")

	c.Weights = map[string]float64{"replica1": 1, "replica2": 2}
	conn, err := NewConnector(c)
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	// NewConnector took a copy: the caller's Config is unchanged.
	assert.Equal(t, "", c.Nodes[0].Name)
}

func TestConfigClone(t *testing.T) {
	c, err := ParseDSN("u:p@tcp(h1),tcp(h2)/db?rwshard.weights=1,1")
	require.NoError(t, err)
	d := c.Clone()
	require.Equal(t, c, d)
	d.Nodes[0].Name = "x"
	d.Weights["primary"] = 7
	d.Backend.User = "other"
	assert.Equal(t, "primary", c.Nodes[0].Name)
	assert.Equal(t, 1.0, c.Weights["primary"])
	assert.Equal(t, "u", c.Backend.User)
}

func FuzzParseDSN(f *testing.F) {
	for _, s := range []string{
		"app:pw@tcp(h1:3306),tcp(h2:3306)/db?parseTime=true&rwshard.weights=0,1",
		"tcp(a),unix(/s)/?rwshard.names=x,y",
		"u:p@tcp(h)/d?rwshard.balance=latency&rwshard.connectTimeout=1s",
		"@/", "/", "u@tcp(h)/db?rwshard.",
		"u@tcp(h)/db?wait_timeout=5&probeInterval=1s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		c, err := ParseDSN(dsn)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("%q: error is not a *ConfigError: %v", dsn, err)
			}
			return
		}
		formatted := c.FormatDSN()
		c2, err := ParseDSN(formatted)
		if err != nil {
			t.Fatalf("%q formatted as %q does not parse: %v", dsn, formatted, err)
		}
		if c2.FormatDSN() != formatted {
			t.Fatalf("not canonical: %q → %q → %q", dsn, formatted, c2.FormatDSN())
		}
	})
}

func TestHeartbeatTableNames(t *testing.T) {
	for _, name := range []string{"heartbeat", "percona.heartbeat", "`my db`.`heart beat`", "p_1.$hb", "`a`.hb"} {
		cfg, err := ParseDSN("app:pw@tcp(h1)/db?rwshard.heartbeatTable=" + url.QueryEscape(name))
		require.NoError(t, err, name)
		require.Equal(t, name, cfg.HeartbeatTable)
	}
}

func TestParseDSNGalera(t *testing.T) {
	c, err := ParseDSN("app:pw@tcp(g1),tcp(g2),tcp(g3)/db?rwshard.topology=galera&rwshard.names=g1,g2,g3" +
		"&rwshard.galeraWriters=g3,g1&rwshard.galeraNoFailback=true&rwshard.galeraDonor=true&rwshard.galeraMaxRecvQueue=50" +
		"&rwshard.galeraMaxWriters=2")
	require.NoError(t, err)
	assert.Equal(t, TopologyGalera, c.Topology)
	assert.Equal(t, []string{"g3", "g1"}, c.Galera.Writers)
	assert.True(t, c.Galera.NoFailback)
	assert.True(t, c.Galera.Donor)
	assert.Equal(t, 50, c.Galera.MaxRecvQueue)
	assert.Equal(t, 2, c.Galera.MaxWriters)
	back, err := ParseDSN(c.FormatDSN())
	require.NoError(t, err)
	assert.Equal(t, c.FormatDSN(), back.FormatDSN(), "FormatDSN round trip")
	assert.Contains(t, c.FormatDSN(), "rwshard.galeraWriters=g3%2Cg1")

	c, err = ParseDSN("app:pw@tcp(g1),tcp(g2)/db")
	require.NoError(t, err)
	assert.Equal(t, TopologyReplication, c.Topology, "default")

	for dsn, key := range map[string]string{
		"app:pw@tcp(g1),tcp(g2)/db?rwshard.topology=ring":                                         "rwshard.topology",
		"app:pw@tcp(g1),tcp(g2)/db?rwshard.topology=galera&rwshard.galeraWriters=primary,x":       "rwshard.galeraWriters",
		"app:pw@tcp(g1),tcp(g2)/db?rwshard.topology=galera&rwshard.galeraWriters=primary,primary": "rwshard.galeraWriters",
		"app:pw@tcp(g1),tcp(g2)/db?rwshard.galeraWriters=primary":                                 "rwshard.galeraWriters",
		"app:pw@tcp(g1),tcp(g2)/db?rwshard.galeraDonor=true":                                      "rwshard.galeraDonor",
		"app:pw@tcp(g1),tcp(g2)/db?rwshard.galeraNoFailback=true":                                 "rwshard.galeraNoFailback",
		"app:pw@tcp(g1),tcp(g2)/db?rwshard.galeraMaxRecvQueue=5":                                  "rwshard.galeraMaxRecvQueue",
		"app:pw@tcp(g1),tcp(g2)/db?rwshard.galeraMaxWriters=2":                                    "rwshard.galeraMaxWriters",
	} {
		_, err := ParseDSN(dsn)
		var ce *ConfigError
		if assert.ErrorAs(t, err, &ce, dsn) {
			assert.Equal(t, key, ce.Key, dsn)
		}
	}
}
