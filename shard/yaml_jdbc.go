package shard

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.yaml.in/yaml/v3"
)

// jdbcSource is one ShardingSphere data source as its YAML gives it.
type jdbcSource struct {
	name    string
	url     string
	urlKey  string // key path of jdbcUrl (or url)
	urlNode *yaml.Node
	user    *jdbcParam // username
	pass    *jdbcParam // password
	props   []jdbcParam
}

// jdbcParam is one connection property: from the URL's query string
// (key and node are jdbcUrl's) or from dataSourceProperties.
type jdbcParam struct {
	name, value string
	key         string
	node        *yaml.Node
}

// JDBC parameters and what they become (see the package documentation).
const jdbcSupportedParams = "serverTimezone, connectionTimeZone, useSSL, verifyServerCertificate, " +
	"trustServerCertificate, sslMode, characterEncoding, useUnicode, allowPublicKeyRetrieval, " +
	"connectTimeout, socketTimeout, allowMultiQueries, user, password"

// jdbcDSN converts a MySQL or MariaDB JDBC URL with its credentials and
// properties into a go-sql-driver/mysql DSN in FormatDSN's canonical
// form. Errors name the data source, the key and the parameter; they
// never quote the URL (it may hold a password).
func (r *yamlReader) jdbcDSN(s *jdbcSource) (string, error) {
	urlErr := func(format string, args ...any) error {
		return r.errf(s.urlNode, s.urlKey, format, args...)
	}
	u := strings.TrimSpace(s.url)
	lower := strings.ToLower(u)
	var rest string
	switch {
	case strings.HasPrefix(lower, "jdbc:mysql://"):
		rest = u[len("jdbc:mysql://"):]
	case strings.HasPrefix(lower, "jdbc:mariadb://"):
		rest = u[len("jdbc:mariadb://"):]
	case strings.HasPrefix(lower, "jdbc:mysql") || strings.HasPrefix(lower, "jdbc:mariadb"):
		scheme := u
		if i := strings.Index(u, "//"); i >= 0 {
			scheme = u[:i]
		} else if len(scheme) > 24 {
			scheme = scheme[:24]
		}
		return "", urlErr("data source %s: %q: replication, load-balancing, failover and DNS SRV URLs are not supported; "+
			"declare one data source per host (jdbc:mysql://host:port/db) and group them with !READWRITE_SPLITTING", s.name, scheme)
	default:
		return "", urlErr("data source %s: not a MySQL or MariaDB JDBC URL; want jdbc:mysql://host:port/db?… or jdbc:mariadb://host:port/db?…", s.name)
	}

	authority, pathQuery := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority, pathQuery = rest[:i], rest[i:]
	}
	var db, query string
	if strings.HasPrefix(pathQuery, "/") {
		db, query, _ = strings.Cut(pathQuery[1:], "?")
	} else {
		query = strings.TrimPrefix(pathQuery, "?")
	}

	mc := mysql.NewConfig()
	mc.Net = "tcp"

	// Credentials: the YAML keys, the URL's user info or its user and
	// password parameters, each at most once.
	var userFrom, passFrom string
	setUser := func(v, from string) error {
		if userFrom != "" {
			return fmt.Errorf("user given twice (%s and %s)", userFrom, from)
		}
		mc.User, userFrom = v, from
		return nil
	}
	setPass := func(v, from string) error {
		if passFrom != "" {
			return fmt.Errorf("password given twice (%s and %s)", passFrom, from)
		}
		mc.Passwd, passFrom = v, from
		return nil
	}
	if s.user != nil {
		_ = setUser(s.user.value, "username")
	}
	if s.pass != nil {
		_ = setPass(s.pass.value, "password")
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		info := authority[:i]
		authority = authority[i+1:]
		name, pw, hasPW := strings.Cut(info, ":")
		name, err1 := url.PathUnescape(name)
		pw, err2 := url.PathUnescape(pw)
		if err1 != nil || err2 != nil {
			return "", urlErr("data source %s: user info: invalid %%-escape", s.name)
		}
		if err := setUser(name, "the URL's user info"); err != nil {
			return "", urlErr("data source %s: %v", s.name, err)
		}
		if hasPW {
			if err := setPass(pw, "the URL's user info"); err != nil {
				return "", urlErr("data source %s: %v", s.name, err)
			}
		}
	}

	addr, err := jdbcHost(authority)
	if err != nil {
		return "", urlErr("data source %s: %v", s.name, err)
	}
	mc.Addr = addr
	if mc.DBName, err = url.PathUnescape(db); err != nil {
		return "", urlErr("data source %s: database name: invalid %%-escape", s.name)
	}

	params := []jdbcParam{}
	if query != "" {
		for _, kv := range strings.Split(query, "&") {
			if kv == "" {
				continue
			}
			k, v, _ := strings.Cut(kv, "=")
			k, err1 := url.QueryUnescape(k)
			v, err2 := url.QueryUnescape(v)
			if err1 != nil || err2 != nil {
				return "", urlErr("data source %s: parameter %q: invalid %%-escape", s.name, k)
			}
			if k == "" {
				return "", urlErr("data source %s: a parameter without a name", s.name)
			}
			params = append(params, jdbcParam{name: k, value: v, key: s.urlKey, node: s.urlNode})
		}
	}
	params = append(params, s.props...)

	seen := map[string]jdbcParam{}
	var ssl jdbcTLS
	var tz *jdbcParam
	for i := range params {
		p := &params[i]
		perr := func(format string, args ...any) error {
			return r.errf(p.node, p.key, "data source %s: parameter %s=%q: %s", s.name, p.name, p.value, fmt.Sprintf(format, args...))
		}
		l := strings.ToLower(p.name)
		if first, dup := seen[l]; dup {
			return "", r.errf(p.node, p.key, "data source %s: parameter %s given twice (also as %s at %s)", s.name, p.name, first.name, first.key)
		}
		seen[l] = *p
		switch l {
		case "servertimezone", "connectiontimezone":
			if tz != nil {
				return "", perr("conflicts with %s: give one time zone", tz.name)
			}
			tz = p
			loc, err := jdbcLocation(p.value)
			if err != nil {
				return "", perr("%v", err)
			}
			mc.Loc = loc
		case "usessl", "verifyservercertificate", "trustservercertificate", "sslmode":
			if err := ssl.set(l, p.value); err != nil {
				return "", perr("%v", err)
			}
		case "characterencoding":
			switch strings.ToLower(p.value) {
			case "utf8", "utf-8", "utf8mb4":
				if err := mc.Apply(mysql.Charset("utf8mb4", "")); err != nil {
					return "", perr("%v", err)
				}
			default:
				return "", perr("only utf8 / UTF-8 (charset=utf8mb4) is supported")
			}
		case "useunicode":
			if b, ok := jdbcBool(p.value); !ok || !b {
				return "", perr("only true is supported (go-sql-driver/mysql always speaks Unicode)")
			}
		case "allowpublickeyretrieval":
			// go-sql-driver/mysql asks the server for its RSA key whenever
			// caching_sha2_password or sha256_password needs it on a
			// connection without TLS: true is its behaviour; false cannot
			// be enforced (pin a key with mysql.RegisterServerPubKey and
			// the serverPubKey DSN parameter instead).
			if _, ok := jdbcBool(p.value); !ok {
				return "", perr("want true or false")
			}
		case "connecttimeout", "sockettimeout":
			ms, err := strconv.ParseInt(p.value, 10, 64)
			if err != nil || ms < 0 || ms > int64(24*time.Hour/time.Millisecond) {
				return "", perr("want milliseconds, 0 (none) to 86400000")
			}
			if l == "connecttimeout" {
				mc.Timeout = time.Duration(ms) * time.Millisecond
			} else {
				mc.ReadTimeout = time.Duration(ms) * time.Millisecond
			}
		case "allowmultiqueries":
			b, ok := jdbcBool(p.value)
			if !ok {
				return "", perr("want true or false")
			}
			mc.MultiStatements = b
		case "user":
			if err := setUser(p.value, "parameter user"); err != nil {
				return "", r.errf(p.node, p.key, "data source %s: %v", s.name, err)
			}
		case "password":
			if err := setPass(p.value, "parameter password"); err != nil {
				return "", r.errf(p.node, p.key, "data source %s: %v", s.name, err)
			}
		default:
			return "", r.errf(p.node, p.key, "data source %s: JDBC parameter %s is not supported; supported: %s",
				s.name, p.name, jdbcSupportedParams)
		}
	}
	if mc.TLSConfig, err = ssl.mode(); err != nil {
		return "", urlErr("data source %s: %v", s.name, err)
	}
	if strings.Contains(mc.User, ":") {
		return "", urlErr("data source %s: a user name with ':' cannot be written in a go-sql-driver/mysql DSN", s.name)
	}
	// Parsed and formatted again, the DSN is in go-sql-driver's canonical
	// form (tls=preferred, for one, implies allowFallbackToPlaintext).
	parsed, err := mysql.ParseDSN(mc.FormatDSN())
	if err != nil {
		return "", urlErr("data source %s: the converted DSN does not parse: %v", s.name, err)
	}
	return parsed.FormatDSN(), nil
}

// jdbcHost reads the one host of a JDBC URL: host, host:port, [v6]:port;
// an empty host is localhost and the port defaults to 3306, as in
// Connector/J.
func jdbcHost(authority string) (string, error) {
	if strings.Contains(authority, ",") {
		return "", fmt.Errorf("multiple hosts: rwshard takes one host per data source; declare one data source per host and group them with !READWRITE_SPLITTING")
	}
	if strings.HasPrefix(authority, "(") || strings.HasPrefix(strings.ToLower(authority), "address=") {
		return "", fmt.Errorf("the address=(host=…)(port=…) form is not supported; write host:port")
	}
	host, port := authority, "3306"
	switch {
	case strings.HasPrefix(authority, "["):
		end := strings.IndexByte(authority, ']')
		if end < 0 {
			return "", fmt.Errorf("host %q: unterminated IPv6 address", authority)
		}
		host = authority[1:end]
		if tail := authority[end+1:]; tail != "" {
			if !strings.HasPrefix(tail, ":") {
				return "", fmt.Errorf("host %q: want [address]:port", authority)
			}
			port = tail[1:]
		}
	case strings.Count(authority, ":") == 1:
		host, port, _ = strings.Cut(authority, ":")
	case strings.Count(authority, ":") > 1:
		return "", fmt.Errorf("host %q: write an IPv6 address in brackets", authority)
	}
	if host == "" {
		host = "localhost"
	}
	if strings.ContainsAny(host, " /?#@()") {
		return "", fmt.Errorf("host %q: not a host name", host)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q: want 1 to 65535", port)
	}
	return net.JoinHostPort(host, strconv.Itoa(n)), nil
}

func jdbcBool(s string) (value, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// jdbcOffsetZone matches Java zone offsets: GMT+8, UTC-05:00, +08:00.
var jdbcOffsetZone = regexp.MustCompile(`^(?i:GMT|UTC)?([+-])(\d{1,2})(?::?(\d{2}))?$`)

// jdbcLocation maps a Connector/J time zone to a location go-sql-driver
// can name in a DSN (loc=…): an IANA name, UTC/GMT, LOCAL (the process's
// zone, as Connector/J's LOCAL is the JVM's), or a whole-hour offset,
// which becomes the IANA zone Etc/GMT∓h (the POSIX sign is inverted).
func jdbcLocation(v string) (*time.Location, error) {
	switch strings.ToUpper(v) {
	case "UTC", "GMT", "Z", "UTC0", "GMT0":
		return time.UTC, nil
	case "LOCAL":
		return time.Local, nil
	case "SERVER":
		return nil, fmt.Errorf("SERVER (ask the server) is not supported; name the zone")
	}
	if m := jdbcOffsetZone.FindStringSubmatch(v); m != nil {
		h, _ := strconv.Atoi(m[2])
		if m[3] != "" && m[3] != "00" {
			return nil, fmt.Errorf("offsets with minutes cannot be named in a go-sql-driver DSN; use an IANA zone name")
		}
		if h == 0 {
			return time.UTC, nil
		}
		sign := "-" // GMT+8 is Etc/GMT-8
		if m[1] == "-" {
			sign = "+"
		}
		loc, err := time.LoadLocation("Etc/GMT" + sign + strconv.Itoa(h))
		if err != nil {
			return nil, fmt.Errorf("offset out of range or no time zone database: %v", err)
		}
		return loc, nil
	}
	loc, err := time.LoadLocation(v)
	if err != nil {
		if strings.Contains(v, " ") {
			return nil, fmt.Errorf("unknown time zone (a '+' in a URL reads as a space: write %%2B)")
		}
		return nil, fmt.Errorf("unknown time zone: %v", err)
	}
	return loc, nil
}

// jdbcTLS gathers the TLS parameters of Connector/J (useSSL,
// verifyServerCertificate, sslMode) and MariaDB Connector/J (useSsl,
// trustServerCertificate, sslMode).
type jdbcTLS struct {
	useSSL, verify, trust *bool
	sslMode               string
}

func (t *jdbcTLS) set(name, value string) error {
	if name == "sslmode" {
		t.sslMode = strings.ToUpper(strings.ReplaceAll(value, "-", "_"))
		return nil
	}
	b, ok := jdbcBool(value)
	if !ok {
		return fmt.Errorf("want true or false")
	}
	switch name {
	case "usessl":
		t.useSSL = &b
	case "verifyservercertificate":
		t.verify = &b
	case "trustservercertificate":
		t.trust = &b
	}
	return nil
}

// mode is go-sql-driver's tls value: "" (its default, no TLS), false,
// preferred, skip-verify or true (verify the chain and the host name).
func (t *jdbcTLS) mode() (string, error) {
	if t.sslMode != "" {
		if t.useSSL != nil || t.verify != nil || t.trust != nil {
			return "", fmt.Errorf("sslMode and useSSL/verifyServerCertificate/trustServerCertificate together: give sslMode alone")
		}
		switch t.sslMode {
		case "DISABLED", "DISABLE":
			return "false", nil
		case "PREFERRED":
			return "preferred", nil
		case "REQUIRED", "TRUST":
			return "skip-verify", nil
		case "VERIFY_CA", "VERIFY_IDENTITY", "VERIFY_FULL":
			return "true", nil
		}
		return "", fmt.Errorf("sslMode %q: want DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY (MariaDB: disable, trust, verify-ca, verify-full)", t.sslMode)
	}
	if t.useSSL == nil {
		if t.verify != nil || t.trust != nil {
			return "", fmt.Errorf("verifyServerCertificate/trustServerCertificate need useSSL=true")
		}
		return "", nil
	}
	if !*t.useSSL {
		if t.verify != nil || t.trust != nil {
			return "", fmt.Errorf("verifyServerCertificate/trustServerCertificate need useSSL=true")
		}
		return "false", nil
	}
	if t.verify != nil && !*t.verify || t.trust != nil && *t.trust {
		return "skip-verify", nil
	}
	return "true", nil
}
