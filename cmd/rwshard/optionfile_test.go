package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/internal/lab"
)

func TestParseOptions(t *testing.T) {
	const file = "\uFEFF# a MySQL option file\n" +
		"; another comment\n" +
		"[mysqld]\n" +
		"password = server-side\n" +
		"user=mysql\n" +
		"\n" +
		"[client]\n" +
		"user = app\n" +
		"password=\"pa ss#word\" # the application's\n" +
		"host=db1\n" +
		"!includedir /etc/mysql/conf.d/\n" +
		"[mysqldump]\n" +
		"password=dump\n" +
		"  [ CLIENT ]  \n" +
		"  port = 3307  \n" +
		"ssl-ca = '/etc/ca.pem'\n" +
		"prompt\n"
	opts, err := parseOptions([]byte(file), "client")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"user": "app", "password": "pa ss#word", "host": "db1", "port": "3307", "ssl-ca": "/etc/ca.pem"}, opts)

	opts, err = parseOptions([]byte(file), "mysqld")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"password": "server-side", "user": "mysql"}, opts)

	_, err = parseOptions([]byte("[client\npassword=x\n"), "client")
	assert.ErrorContains(t, err, "line 1: no ] after the section name")

	opts, err = parseOptions([]byte("password=outside\n[client]\nPassword=later\npassword = last\n"), "client")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"password": "last"}, opts, "options before any section are in none; a later value wins")
}

func TestOptionValue(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"secret", "secret"},
		{"  secret  ", "secret"},
		{`"secret"`, "secret"},
		{`'secret'`, "secret"},
		{`'se cret' `, "se cret"},
		{`"a'b"`, "a'b"},
		{`'a"b'`, `a"b`},
		{`"unbalanced`, `"unbalanced`},
		{`"a"b'`, `"a"b'`},
		{"pass # a comment", "pass"},
		{"pass#word", "pass"},
		{`"pass#word" # comment`, "pass#word"},
		{`'pass#word'`, "pass#word"},
		{`"a\"#b"`, `a"#b`},
		{`a\sb\tc\\d\qe`, "a b\tc\\d\\qe"},
		{`"it\'s"`, "it's"},
		{`ends with \`, `ends with \`},
		{"", ""},
		{`""`, ""},
	} {
		assert.Equal(t, tc.want, optionValue(tc.in), "%q", tc.in)
	}
}

func TestReadOptionFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.cnf")
	_, err := readOptionFile(missing, "client")
	assert.EqualError(t, err, "option file "+missing+": no such file or directory")

	p := filepath.Join(dir, "my.cnf")
	require.NoError(t, os.WriteFile(p, []byte("[client\n"), 0o600))
	_, err = readOptionFile(p, "client")
	assert.EqualError(t, err, "option file "+p+": line 1: no ] after the section name")
}

// noPasswordEnv unsets RWSHARD_PASSWORD for the test (and restores it),
// and gives it an empty home: no ~/.my.cnf of the developer's applies.
func noPasswordEnv(t *testing.T) (home string) {
	t.Helper()
	t.Setenv(passwordEnv, "")
	require.NoError(t, os.Unsetenv(passwordEnv))
	home = t.TempDir()
	t.Setenv("HOME", home)
	return home
}

func TestFillCredentials(t *testing.T) {
	home := noPasswordEnv(t)
	dir := t.TempDir()
	cnf := filepath.Join(dir, "app.cnf")
	require.NoError(t, os.WriteFile(cnf, []byte("[client]\nuser=fileuser\npassword='file-pw'\n"), 0o600))
	fill := func(dsn, defaultsFile string) (*rwshard.Config, error) {
		t.Helper()
		cfg, err := rwshard.ParseDSN(dsn)
		require.NoError(t, err)
		return cfg, fillCredentials(cfg, defaultsFile)
	}

	// Nothing anywhere: nothing filled, a missing ~/.my.cnf is no error.
	cfg, err := fill("app@tcp(10.0.0.1:3306)/shop", "")
	require.NoError(t, err)
	assert.Equal(t, "", cfg.Backend.Passwd)
	assert.Equal(t, "app", cfg.Backend.User)

	// A missing -defaults-file is an error that names it.
	_, err = fill("app@tcp(10.0.0.1:3306)/shop", filepath.Join(dir, "missing.cnf"))
	assert.EqualError(t, err, "option file "+filepath.Join(dir, "missing.cnf")+": no such file or directory")
	_, err = fill("app:pw@tcp(10.0.0.1:3306)/shop", filepath.Join(dir, "missing.cnf"))
	assert.Error(t, err, "named, it must exist even when CONFIG has a password")

	// -defaults-file: its password; its user only for a CONFIG without one.
	cfg, err = fill("app@tcp(10.0.0.1:3306)/shop", cnf)
	require.NoError(t, err)
	assert.Equal(t, "file-pw", cfg.Backend.Passwd)
	assert.Equal(t, "app", cfg.Backend.User)
	cfg, err = fill("tcp(10.0.0.1:3306)/shop", cnf)
	require.NoError(t, err)
	assert.Equal(t, "fileuser", cfg.Backend.User)
	assert.NotContains(t, redactedDSN(cfg), "file-pw")
	cfg, err = fill("app:dsn-pw@tcp(10.0.0.1:3306)/shop", cnf)
	require.NoError(t, err)
	assert.Equal(t, "dsn-pw", cfg.Backend.Passwd, "the DSN's password wins")

	// ~/.my.cnf when there is one.
	require.NoError(t, os.WriteFile(filepath.Join(home, ".my.cnf"), []byte("[client]\npassword=home-pw\n"), 0o600))
	cfg, err = fill("app@tcp(10.0.0.1:3306)/shop", "")
	require.NoError(t, err)
	assert.Equal(t, "home-pw", cfg.Backend.Passwd)
	cfg, err = fill("app@tcp(10.0.0.1:3306)/shop", cnf)
	require.NoError(t, err)
	assert.Equal(t, "file-pw", cfg.Backend.Passwd, "-defaults-file replaces ~/.my.cnf")

	// RWSHARD_PASSWORD comes first, even set empty; the DSN before it.
	t.Setenv(passwordEnv, "env-pw")
	cfg, err = fill("app@tcp(10.0.0.1:3306)/shop", cnf)
	require.NoError(t, err)
	assert.Equal(t, "env-pw", cfg.Backend.Passwd)
	cfg, err = fill("tcp(10.0.0.1:3306)/shop", cnf)
	require.NoError(t, err)
	assert.Equal(t, "env-pw", cfg.Backend.Passwd)
	assert.Equal(t, "fileuser", cfg.Backend.User, "the option file's user still fills a CONFIG without one")
	cfg, err = fill("app:dsn-pw@tcp(10.0.0.1:3306)/shop", "")
	require.NoError(t, err)
	assert.Equal(t, "dsn-pw", cfg.Backend.Passwd)
	t.Setenv(passwordEnv, "")
	cfg, err = fill("app@tcp(10.0.0.1:3306)/shop", "")
	require.NoError(t, err)
	assert.Equal(t, "", cfg.Backend.Passwd, "RWSHARD_PASSWORD set empty: no password")

	// A sharding rules file's data sources are left alone.
	require.NoError(t, os.Unsetenv(passwordEnv))
	cfg, err = fill("/app?rwshard.rulesFile="+url.QueryEscape(filepath.Join(dir, "rules.yaml")), filepath.Join(dir, "missing.cnf"))
	require.NoError(t, err)
	assert.Equal(t, "", cfg.Backend.Passwd)
}

// check connects with the password only in RWSHARD_PASSWORD, or only in
// an option file, and never prints it; without either, access is denied.
func TestCheckPasswordSources(t *testing.T) {
	l := rwLab.Get(t)
	home := noPasswordEnv(t)
	noPassword := hostsDSN("", labAddrs(l), "")
	require.True(t, strings.HasPrefix(noPassword, lab.AppUser+":@tcp("), noPassword)

	r := cli(t, "check", noPassword)
	assert.Equal(t, exitProblem, r.code, r)
	assert.Contains(t, r.stdout, "primary: wrong password")

	t.Run("RWSHARD_PASSWORD", func(t *testing.T) {
		t.Setenv(passwordEnv, lab.AppPassword)
		r := cli(t, "check", noPassword)
		require.Equal(t, exitOK, r.code, r)
		assert.Contains(t, r.stdout, "ok: 3 nodes checked")
		assert.Contains(t, r.stdout, "config: app:***@tcp(")
		assert.NotContains(t, r.stdout+r.stderr, lab.AppPassword)
		// lag and explain connect through rwshard with it too.
		r = cli(t, "lag", noPassword+"?"+slowProbes, "-count", "1")
		require.Equal(t, exitOK, r.code, r)
		assert.Contains(t, r.stdout, "3 nodes: 3 up, 0 fenced")
		r = cli(t, "explain", noPassword+"?"+slowProbes, "SELECT 1")
		require.Equal(t, exitOK, r.code, r)
		assert.Contains(t, r.stdout, "targets: replica1, replica2\n")
		assert.Empty(t, r.stderr, "the primary answers")
	})

	t.Run("defaults-file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "rwshard.cnf")
		require.NoError(t, os.WriteFile(p, []byte("[mysqld]\npassword=wrong\n\n[client]\n# the lab's\npassword = \""+lab.AppPassword+"\"\n"), 0o600))
		r := cli(t, "check", noPassword, "-defaults-file", p, "-json")
		require.Equal(t, exitOK, r.code, r)
		rep := decodeCheck(t, r.stdout)
		assert.Equal(t, 0, rep.Problems)
		assert.NotContains(t, r.stdout+r.stderr, lab.AppPassword)
		// User and password both from the file.
		noUser := strings.TrimPrefix(noPassword, lab.AppUser+":@")
		require.NoError(t, os.WriteFile(p, []byte("[client]\nuser="+lab.AppUser+"\npassword="+lab.AppPassword+"\n"), 0o600))
		r = cli(t, "check", "--defaults-file="+p, noUser)
		require.Equal(t, exitOK, r.code, r)
		assert.Contains(t, r.stdout, "user app, database app")
		assert.NotContains(t, r.stdout+r.stderr, lab.AppPassword)
	})

	t.Run("~/.my.cnf", func(t *testing.T) {
		require.NoError(t, os.WriteFile(filepath.Join(home, ".my.cnf"), []byte("[client]\npassword="+lab.AppPassword+"\n"), 0o600))
		t.Cleanup(func() { os.Remove(filepath.Join(home, ".my.cnf")) })
		r := cli(t, "check", noPassword)
		require.Equal(t, exitOK, r.code, r)
		assert.NotContains(t, r.stdout+r.stderr, lab.AppPassword)
	})

	t.Run("missing defaults-file", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "missing.cnf")
		for _, cmd := range [][]string{{"check", noPassword}, {"lag", noPassword, "-count", "1"}, {"explain", noPassword, "SELECT 1"}} {
			r := cli(t, append(cmd, "-defaults-file", missing)...)
			assert.Equal(t, exitProblem, r.code, r)
			assert.Equal(t, "rwshard: "+cmd[0]+": option file "+missing+": no such file or directory\n", r.stderr)
		}
	})
}
