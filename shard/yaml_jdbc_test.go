package shard

import (
	"strings"
	"testing"
	_ "time/tzdata" // the zone tests must not depend on the machine

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jdbcYAML is a ShardingSphere file with one data source.
func jdbcYAML(url, extra string) string {
	return "dataSources:\n  ds_0:\n    jdbcUrl: '" + url + "'\n    username: app\n    password: pw\n" + extra
}

func TestJDBCToDSN(t *testing.T) {
	for _, tc := range []struct {
		url, extra string
		want       string
	}{
		{"jdbc:mysql://localhost:3306/db", "", "app:pw@tcp(localhost:3306)/db"},
		{"jdbc:mysql://db.example.com/shop", "", "app:pw@tcp(db.example.com:3306)/shop"},
		{"jdbc:mysql://:3307/shop", "", "app:pw@tcp(localhost:3307)/shop"},
		{"jdbc:mysql://h:3306", "", "app:pw@tcp(h:3306)/"},
		{"jdbc:mysql://h:3306/", "", "app:pw@tcp(h:3306)/"},
		{"jdbc:mysql://h:3306?useSSL=false", "", "app:pw@tcp(h:3306)/?tls=false"},
		{"jdbc:mariadb://[::1]:3307/db", "", "app:pw@tcp([::1]:3307)/db"},
		{"jdbc:mysql://[fd00::1]/db", "", "app:pw@tcp([fd00::1]:3306)/db"},
		{"JDBC:MySQL://h/db", "", "app:pw@tcp(h:3306)/db"},
		// Time zones.
		{"jdbc:mysql://h/db?serverTimezone=UTC", "", "app:pw@tcp(h:3306)/db"},
		{"jdbc:mysql://h/db?serverTimezone=GMT", "", "app:pw@tcp(h:3306)/db"},
		{"jdbc:mysql://h/db?serverTimezone=Asia/Shanghai", "", "app:pw@tcp(h:3306)/db?loc=Asia%2FShanghai"},
		{"jdbc:mysql://h/db?serverTimezone=Asia%2FShanghai", "", "app:pw@tcp(h:3306)/db?loc=Asia%2FShanghai"},
		{"jdbc:mysql://h/db?serverTimezone=GMT%2B8", "", "app:pw@tcp(h:3306)/db?loc=Etc%2FGMT-8"},
		{"jdbc:mysql://h/db?serverTimezone=GMT-05:00", "", "app:pw@tcp(h:3306)/db?loc=Etc%2FGMT%2B5"},
		{"jdbc:mysql://h/db?connectionTimeZone=%2B00:00", "", "app:pw@tcp(h:3306)/db"},
		{"jdbc:mysql://h/db?connectionTimeZone=LOCAL", "", "app:pw@tcp(h:3306)/db?loc=Local"},
		// TLS.
		{"jdbc:mysql://h/db?useSSL=true", "", "app:pw@tcp(h:3306)/db?tls=true"},
		{"jdbc:mysql://h/db?useSSL=true&verifyServerCertificate=false", "", "app:pw@tcp(h:3306)/db?tls=skip-verify"},
		{"jdbc:mysql://h/db?useSSL=true&verifyServerCertificate=true", "", "app:pw@tcp(h:3306)/db?tls=true"},
		{"jdbc:mariadb://h/db?useSsl=true&trustServerCertificate=true", "", "app:pw@tcp(h:3306)/db?tls=skip-verify"},
		{"jdbc:mysql://h/db?sslMode=DISABLED", "", "app:pw@tcp(h:3306)/db?tls=false"},
		{"jdbc:mysql://h/db?sslMode=PREFERRED", "", "app:pw@tcp(h:3306)/db?allowFallbackToPlaintext=true&tls=preferred"},
		{"jdbc:mysql://h/db?sslMode=REQUIRED", "", "app:pw@tcp(h:3306)/db?tls=skip-verify"},
		{"jdbc:mysql://h/db?sslMode=VERIFY_CA", "", "app:pw@tcp(h:3306)/db?tls=true"},
		{"jdbc:mysql://h/db?sslMode=VERIFY_IDENTITY", "", "app:pw@tcp(h:3306)/db?tls=true"},
		{"jdbc:mariadb://h/db?sslMode=disable", "", "app:pw@tcp(h:3306)/db?tls=false"},
		{"jdbc:mariadb://h/db?sslMode=trust", "", "app:pw@tcp(h:3306)/db?tls=skip-verify"},
		{"jdbc:mariadb://h/db?sslMode=verify-ca", "", "app:pw@tcp(h:3306)/db?tls=true"},
		{"jdbc:mariadb://h/db?sslMode=verify-full", "", "app:pw@tcp(h:3306)/db?tls=true"},
		// Character set and the no-ops.
		{"jdbc:mysql://h/db?useUnicode=true&characterEncoding=utf8", "", "app:pw@tcp(h:3306)/db?charset=utf8mb4"},
		{"jdbc:mysql://h/db?characterEncoding=UTF-8", "", "app:pw@tcp(h:3306)/db?charset=utf8mb4"},
		{"jdbc:mysql://h/db?allowPublicKeyRetrieval=true", "", "app:pw@tcp(h:3306)/db"},
		// Timeouts and multi-statements.
		{"jdbc:mysql://h/db?connectTimeout=1500&socketTimeout=60000", "", "app:pw@tcp(h:3306)/db?readTimeout=1m0s&timeout=1.5s"},
		{"jdbc:mysql://h/db?connectTimeout=0", "", "app:pw@tcp(h:3306)/db"},
		{"jdbc:mysql://h/db?allowMultiQueries=true", "", "app:pw@tcp(h:3306)/db?multiStatements=true"},
		// Everything at once, in go-sql-driver's canonical order.
		{"jdbc:mysql://10.0.0.1:3306/demo?serverTimezone=Asia/Shanghai&useSSL=false&useUnicode=true&characterEncoding=utf8&connectTimeout=2000&allowPublicKeyRetrieval=true",
			"", "app:pw@tcp(10.0.0.1:3306)/demo?charset=utf8mb4&loc=Asia%2FShanghai&timeout=2s&tls=false"},
		// dataSourceProperties are parameters too.
		{"jdbc:mysql://h/db", "    dataSourceProperties:\n      useSSL: false\n      serverTimezone: Europe/Paris\n",
			"app:pw@tcp(h:3306)/db?loc=Europe%2FParis&tls=false"},
	} {
		c, err := ParseYAML([]byte(jdbcYAML(tc.url, tc.extra)))
		require.NoError(t, err, tc.url)
		got := c.DataSources["ds_0"].Primary
		assert.Equal(t, tc.want, got, tc.url)
		// The DSN is go-sql-driver's canonical form: it round-trips.
		mc, err := mysql.ParseDSN(got)
		require.NoError(t, err, got)
		assert.Equal(t, got, mc.FormatDSN())
	}
}

func TestJDBCCredentials(t *testing.T) {
	parse := func(src string) (*mysql.Config, error) {
		c, err := ParseYAML([]byte(src))
		if err != nil {
			return nil, err
		}
		return mysql.ParseDSN(c.DataSources["ds_0"].Primary)
	}
	// Passwords with the DSN's separators survive.
	mc, err := parse("dataSources:\n  ds_0:\n    jdbcUrl: jdbc:mysql://h/db\n    username: app\n    password: 'p@ss:w/rd?x=1&(y)'\n")
	require.NoError(t, err)
	assert.Equal(t, "app", mc.User)
	assert.Equal(t, "p@ss:w/rd?x=1&(y)", mc.Passwd)
	assert.Equal(t, "db", mc.DBName)

	// User info in the URL, user and password parameters.
	mc, err = parse("dataSources:\n  ds_0:\n    jdbcUrl: jdbc:mysql://bob:s%40cret@h/db\n")
	require.NoError(t, err)
	assert.Equal(t, "bob", mc.User)
	assert.Equal(t, "s@cret", mc.Passwd)
	mc, err = parse("dataSources:\n  ds_0:\n    url: jdbc:mysql://h/db?user=bob&password=pw\n")
	require.NoError(t, err)
	assert.Equal(t, "bob", mc.User)
	assert.Equal(t, "pw", mc.Passwd)

	_, err = parse("dataSources:\n  ds_0:\n    jdbcUrl: jdbc:mysql://h/db?user=bob\n    username: app\n")
	require.ErrorContains(t, err, "dataSources.ds_0.jdbcUrl: data source ds_0: user given twice (username and parameter user)")
	_, err = parse("dataSources:\n  ds_0:\n    jdbcUrl: jdbc:mysql://h/db?password=secret1\n    password: secret2\n")
	require.ErrorContains(t, err, "password given twice")
	assert.NotContains(t, err.Error(), "secret")
	_, err = parse("dataSources:\n  ds_0:\n    jdbcUrl: jdbc:mysql://h/db\n    username: 'a:b'\n")
	require.ErrorContains(t, err, "a user name with ':' cannot be written in a go-sql-driver/mysql DSN")
}

func TestJDBCInvalid(t *testing.T) {
	for _, tc := range []struct {
		url, extra string
		want       string
	}{
		{"jdbc:mysql://h1:3306,h2:3306/db", "", "dataSources.ds_0.jdbcUrl: data source ds_0: multiple hosts: rwshard takes one host per data source"},
		{"jdbc:mysql:replication://h1,h2/db", "", `dataSources.ds_0.jdbcUrl: data source ds_0: "jdbc:mysql:replication:": replication, load-balancing, failover and DNS SRV URLs are not supported`},
		{"jdbc:mysql:loadbalance://h1,h2/db", "", `"jdbc:mysql:loadbalance:": replication`},
		{"jdbc:mysql+srv://_mysql._tcp.example.com/db", "", `"jdbc:mysql+srv:": replication`},
		{"jdbc:mariadb:sequential://h1,h2/db", "", `"jdbc:mariadb:sequential:": replication`},
		{"jdbc:postgresql://h/db", "", "dataSources.ds_0.jdbcUrl: data source ds_0: not a MySQL or MariaDB JDBC URL"},
		{"jdbc:mysql://address=(host=h)(port=3306)/db", "", "the address=(host=…)(port=…) form is not supported"},
		{"jdbc:mysql://h:99999/db", "", `port "99999": want 1 to 65535`},
		{"jdbc:mysql://h:port/db", "", `port "port": want 1 to 65535`},
		{"jdbc:mysql://fd00::1/db", "", "write an IPv6 address in brackets"},
		{"jdbc:mysql://h/db?zeroDateTimeBehavior=convertToNull", "",
			"dataSources.ds_0.jdbcUrl: data source ds_0: JDBC parameter zeroDateTimeBehavior is not supported; supported: serverTimezone,"},
		{"jdbc:mysql://h/db?rewriteBatchedStatements=true", "", "JDBC parameter rewriteBatchedStatements is not supported"},
		{"jdbc:mysql://h/db?useSSL=false&usessl=true", "", "parameter usessl given twice (also as useSSL"},
		{"jdbc:mysql://h/db?useSSL=yes", "", `parameter useSSL="yes": want true or false`},
		{"jdbc:mysql://h/db?sslMode=REQUIRED&useSSL=true", "", "sslMode and useSSL/verifyServerCertificate/trustServerCertificate together"},
		{"jdbc:mysql://h/db?sslMode=STRICT", "", `sslMode "STRICT": want DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY`},
		{"jdbc:mysql://h/db?verifyServerCertificate=false", "", "verifyServerCertificate/trustServerCertificate need useSSL=true"},
		{"jdbc:mysql://h/db?characterEncoding=GBK", "", `parameter characterEncoding="GBK": only utf8 / UTF-8 (charset=utf8mb4) is supported`},
		{"jdbc:mysql://h/db?useUnicode=false", "", `parameter useUnicode="false": only true is supported`},
		{"jdbc:mysql://h/db?serverTimezone=Mars/Olympus", "", `parameter serverTimezone="Mars/Olympus": unknown time zone`},
		{"jdbc:mysql://h/db?serverTimezone=GMT+8", "", `parameter serverTimezone="GMT 8": unknown time zone (a '+' in a URL reads as a space: write %2B)`},
		{"jdbc:mysql://h/db?serverTimezone=GMT%2B05:30", "", "offsets with minutes cannot be named in a go-sql-driver DSN"},
		{"jdbc:mysql://h/db?serverTimezone=UTC&connectionTimeZone=UTC", "", "conflicts with serverTimezone: give one time zone"},
		{"jdbc:mysql://h/db?connectTimeout=-1", "", `parameter connectTimeout="-1": want milliseconds`},
		{"jdbc:mysql://h/db?=x", "", "a parameter without a name"},
		{"jdbc:mysql://h/db?a=%zz", "", "invalid %-escape"},
		{"jdbc:mysql://h/db", "    dataSourceProperties:\n      cachePrepStmts: true\n",
			"dataSources.ds_0.dataSourceProperties.cachePrepStmts: data source ds_0: JDBC parameter cachePrepStmts is not supported"},
		{"jdbc:mysql://h/db?useSSL=true", "    dataSourceProperties:\n      useSSL: false\n",
			"dataSources.ds_0.dataSourceProperties.useSSL: data source ds_0: parameter useSSL given twice (also as useSSL at dataSources.ds_0.jdbcUrl)"},
		{"jdbc:mysql://h/db", "    url: jdbc:mysql://h/db\n", "dataSources.ds_0.url: jdbcUrl and url both given"},
	} {
		_, err := ParseYAML([]byte(jdbcYAML(tc.url, tc.extra)))
		require.Error(t, err, tc.url)
		assert.Contains(t, err.Error(), tc.want, tc.url)
		assert.NotContains(t, err.Error(), "pw", "no password in %v", err)
		assert.True(t, strings.HasPrefix(err.Error(), "rwshard: config line "), err.Error())
	}
}
