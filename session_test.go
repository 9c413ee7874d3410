package rwshard

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rwshard/rwshard/internal/monitor"
	"github.com/rwshard/rwshard/internal/testproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func keyedConnector(t *testing.T, key []byte) *Connector {
	t.Helper()
	return tokenConnector(t, key, false)
}

// unsignedConnector makes and takes unsigned tokens (Config.UnsignedTokens).
func unsignedConnector(t *testing.T) *Connector {
	t.Helper()
	return tokenConnector(t, nil, true)
}

func tokenConnector(t *testing.T, key []byte, unsigned bool) *Connector {
	t.Helper()
	cfg := NewConfig()
	cfg.Nodes = []Node{{Addr: "127.0.0.1:1"}}
	cfg.SessionKey, cfg.UnsignedTokens = key, unsigned
	c, err := NewConnector(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// mustToken is c.SessionToken(s), which must succeed.
func mustToken(t *testing.T, c *Connector, s *Session) string {
	t.Helper()
	tok, err := c.SessionToken(s)
	require.NoError(t, err)
	return tok
}

// Signed tokens: a token from SessionToken resumes with the same key; an
// edited one, an unsigned one, one signed with another key do not.
func TestSessionTokenSigned(t *testing.T) {
	c := keyedConnector(t, []byte("k1"))
	s := &Session{}
	g, err := monitor.ParseGTID("0-1-42")
	require.NoError(t, err)
	s.wroteOn("", time.Unix(1700000000, 5), g)
	tok := mustToken(t, c, s)

	ctx, err := c.ResumeSession(context.Background(), tok)
	require.NoError(t, err)
	got := SessionFrom(ctx)
	w, gg := lastOn(got, "")
	assert.True(t, w.Equal(time.Unix(1700000000, 5)))
	assert.Equal(t, "0-1-42", gg.String())

	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	edited := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(raw), "0-1-42", "0-1-99999", 1)))
	for name, bad := range map[string]string{
		"edited":    edited,
		"unsigned":  s.token(nil),
		"other key": mustToken(t, keyedConnector(t, []byte("k2")), s),
	} {
		_, err := c.ResumeSession(context.Background(), bad)
		var ce *ConfigError
		assert.True(t, errors.As(err, &ce), "%s: %v", name, err)
	}
	_, err = unsignedConnector(t).ResumeSession(context.Background(), tok)
	assert.ErrorContains(t, err, "no SessionKey")
	_, err = unsignedConnector(t).ResumeSession(context.Background(), s.token(nil))
	assert.NoError(t, err, "unsigned tokens where the program opted in")
}

// Without a SessionKey a connector makes and takes no tokens, unless the
// program opts in: an unsigned token is one a client can edit.
func TestSessionTokenNeedsAKey(t *testing.T) {
	c := keyedConnector(t, nil)
	s := &Session{}
	s.wroteOn("", time.Unix(1700000000, 5), gtid(t, "0-1-42"))
	_, err := c.SessionToken(s)
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "SessionKey", ce.Key)
	_, err = c.ResumeSession(context.Background(), s.token(nil))
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "SessionKey", ce.Key)
}

func gtid(t testing.TB, s string) monitor.GTIDSet {
	t.Helper()
	g, err := monitor.ParseGTID(s)
	require.NoError(t, err)
	return g
}

// rawToken encodes a token's payload, as an older version wrote it.
func rawToken(payload string) string { return base64.RawURLEncoding.EncodeToString([]byte(payload)) }

// A session keeps each cluster's writes apart: a write on one data source
// is nothing to another's reads, nor to the unnamed cluster's.
func TestSessionParts(t *testing.T) {
	s := &Session{}
	t0, t1 := time.Unix(1700000000, 0), time.Unix(1700000001, 0)
	s.wroteOn("ds_1", t0, gtid(t, "0-2-50"))
	s.wroteOn("ds_0", t1, gtid(t, "0-1-900"))
	s.wroteOn("ds_1", time.Time{}, gtid(t, "0-2-60")) // a GTID read late

	w, g := lastOn(s, "ds_1")
	assert.True(t, w.Equal(t0))
	assert.Equal(t, "0-2-60", g.String(), "ds_0's 0-1-900 is not ds_1's")
	w, g = lastOn(s, "ds_0")
	assert.True(t, w.Equal(t1))
	assert.Equal(t, "0-1-900", g.String())
	w, g = lastOn(s, "ds_2")
	assert.True(t, w.IsZero() && g.IsZero(), "a data source the session did not write on")
	w, g = lastOn(s, "")
	assert.True(t, w.IsZero() && g.IsZero(), "the unnamed cluster")
	assert.True(t, s.LastWrite().Equal(t1), "the last write on any cluster")

	s.wroteOn("", t0, gtid(t, "0-3-7"))
	_, g = lastOn(s, "")
	assert.Equal(t, "0-3-7", g.String())
	_, g = lastOn(s, "ds_0")
	assert.Equal(t, "0-1-900", g.String())
}

// The part a cluster reads and writes: its data source's name, and the
// unnamed part in the connector's own scope.
func TestClusterPartOf(t *testing.T) {
	cfg := NewConfig()
	cfg.Nodes = []Node{{Addr: "127.0.0.1:1"}}
	cfg.DataSource = "ds_0"
	c, err := NewConnector(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	assert.Equal(t, "ds_0", c.cl.partOf(&Session{}))
	assert.Equal(t, "", c.cl.partOf(c.cl.global.Load()))
	assert.Equal(t, "", keyedConnector(t, nil).cl.partOf(&Session{}))
}

// sameSession reports whether two sessions say the same of every cluster.
func sameSession(a, b *Session) bool {
	if a.shared != b.shared || len(a.parts) != len(b.parts) || !samePart(a.own, b.own) {
		return false
	}
	for i := range a.parts {
		if a.parts[i].name != b.parts[i].name || !samePart(a.parts[i], b.parts[i]) {
			return false
		}
	}
	return true
}

func samePart(a, b sessionPart) bool {
	return a.written.Equal(b.written) && a.gtid.Contains(b.gtid) && b.gtid.Contains(a.gtid)
}

// Tokens carry every part: rws1 for a session of the unnamed cluster
// alone (as before), rws2 once it wrote on a data source; signed or not.
func TestSessionTokenParts(t *testing.T) {
	one := &Session{}
	one.wroteOn("", time.Unix(1700000000, 5), gtid(t, "0-1-42"))
	many := &Session{}
	many.wroteOn("ds_1", time.Unix(1700000000, 7), gtid(t, "0-2-50"))
	many.wroteOn("ds|0/x y*", time.Unix(1700000000, 9), gtid(t, "0-1-900,1-1-3")) // a name to escape
	mixed := &Session{}
	mixed.wroteOn("", time.Unix(1, 0), monitor.GTIDSet{})
	mixed.wroteOn("ds_0", time.Time{}, gtid(t, "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5"))
	c := keyedConnector(t, []byte("k"))
	for name, s := range map[string]*Session{"empty": {}, "one": one, "many": many, "mixed": mixed} {
		tok := s.token(nil)
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		require.NoError(t, err)
		wantVersion := "rws2|"
		if len(s.parts) == 0 {
			wantVersion = "rws1|"
		}
		assert.True(t, strings.HasPrefix(string(raw), wantVersion), "%s: %s", name, raw)
		ctx, err := unsignedConnector(t).ResumeSession(context.Background(), tok)
		require.NoError(t, err, name)
		back := SessionFrom(ctx)
		if len(s.parts) == 0 {
			assert.True(t, back.shared, "%s: an rws1 token stands for every cluster", name)
			back.shared = false
		}
		assert.True(t, sameSession(s, back), "%s: %s", name, raw)

		ctx, err = c.ResumeSession(context.Background(), mustToken(t, c, s))
		require.NoError(t, err, name)
		back = SessionFrom(ctx)
		back.shared = false
		assert.True(t, sameSession(s, back), "%s signed", name)
		_, err = c.ResumeSession(context.Background(), tok)
		assert.ErrorContains(t, err, "not signed", name)
	}
}

// A token of an earlier version (rws1, one part): an unsharded connector
// reads it as before; in a sharded one it holds for every data source
// that has no part of its own yet (what it meant when written: the
// writes of every data source in one), and a data source the session
// then writes on starts from it.
func TestSessionTokenRWS1(t *testing.T) {
	for name, tok := range map[string]string{
		"unsigned": rawToken("rws1|1700000000000000005|0-1-42"),
		"empty":    rawToken("rws1|0|"),
	} {
		ctx, err := unsignedConnector(t).ResumeSession(context.Background(), tok)
		require.NoError(t, err, name)
		s := SessionFrom(ctx)
		w, g := lastOn(s, "")
		w0, g0 := lastOn(s, "ds_0")
		assert.True(t, w.Equal(w0) && g.String() == g0.String(), name)
		if name == "empty" {
			assert.True(t, w.IsZero() && g.IsZero())
			continue
		}
		assert.True(t, w.Equal(time.Unix(1700000000, 5)))
		assert.Equal(t, "0-1-42", g.String())

		s.wroteOn("ds_1", time.Unix(1700000001, 0), gtid(t, "0-2-7"))
		_, g1 := lastOn(s, "ds_1")
		assert.Equal(t, "0-1-42", g1.String(), "the token's 0-1-42 (higher in domain 0) holds for ds_1 still")
		_, g0 = lastOn(s, "ds_0")
		assert.Equal(t, "0-1-42", g0.String())

		// Its token keeps that meaning.
		ctx, err = unsignedConnector(t).ResumeSession(context.Background(), s.token(nil))
		require.NoError(t, err)
		back := SessionFrom(ctx)
		assert.True(t, sameSession(s, back))
		_, g2 := lastOn(back, "ds_2")
		assert.Equal(t, "0-1-42", g2.String())
	}
	// Signed by an earlier version: the MAC covers the same payload.
	key := []byte("k")
	payload := "rws1|1700000000000000005|0-1-42"
	signed := rawToken(payload + "|" + base64.RawURLEncoding.EncodeToString(tokenMAC(key, payload)))
	_, err := keyedConnector(t, key).ResumeSession(context.Background(), signed)
	assert.NoError(t, err)
}

// Tokens rws2 refuses, with an error that names the token and the
// problem, and never the key or the MAC it expected.
func TestSessionTokenRWS2Errors(t *testing.T) {
	key := []byte("secret-session-key")
	c := keyedConnector(t, key)
	s := &Session{}
	s.wroteOn("ds_0", time.Unix(1, 0), gtid(t, "0-1-2"))
	s.wroteOn("ds_1", time.Unix(2, 0), gtid(t, "0-2-3"))
	raw, err := base64.RawURLEncoding.DecodeString(mustToken(t, c, s))
	require.NoError(t, err)
	payload := string(raw[:strings.LastIndex(string(raw), "|")])
	for name, tok := range map[string]string{
		"edited name":     rawToken(strings.Replace(string(raw), "ds_1", "ds_2", 1)),
		"edited gtid":     rawToken(strings.Replace(string(raw), "0-2-3", "0-2-1", 1)),
		"part dropped":    rawToken(strings.Replace(payload, "rws2|2", "rws2|1", 1) + string(raw[len(payload):])),
		"count too high":  rawToken("rws2|3|ds_0/1/0-1-2|ds_1/2/0-2-3"),
		"count zero":      rawToken("rws2|0|"),
		"count not a num": rawToken("rws2|x|ds_0/1/0-1-2"),
		"no count":        rawToken("rws2"),
		"out of order":    rawToken("rws2|2|ds_1/1/0-1-2|ds_0/2/0-2-3"),
		"duplicate":       rawToken("rws2|2|ds_0/1/0-1-2|ds_0/2/0-2-3"),
		"two unnamed":     rawToken("rws2|3|/1/|*/1/|ds_0/1/"),
		"unnamed only":    rawToken("rws2|1|/1/0-1-2"),
		"bad escape":      rawToken("rws2|1|ds%zz/1/0-1-2"),
		"bad part":        rawToken("rws2|1|ds_0-1-0-1-2"),
		"bad time":        rawToken("rws2|1|ds_0/-1/0-1-2"),
		"bad gtid":        rawToken("rws2|1|ds_0/1/0-1"),
		"other version":   rawToken("rws3|1|ds_0/1/0-1-2"),
	} {
		var parseErr error
		if strings.HasPrefix(name, "edited") || name == "part dropped" {
			_, parseErr = c.ResumeSession(context.Background(), tok)
		} else {
			_, parseErr = unsignedConnector(t).ResumeSession(context.Background(), tok)
		}
		var ce *ConfigError
		require.True(t, errors.As(parseErr, &ce), "%s: %v", name, parseErr)
		msg := parseErr.Error()
		assert.True(t, strings.HasPrefix(msg, "rwshard: "), msg)
		assert.False(t, strings.Contains(msg, string(key)), "%s: the key in %s", name, msg)
		for _, p := range []string{payload, strings.Replace(payload, "ds_1", "ds_2", 1)} {
			mac := base64.RawURLEncoding.EncodeToString(tokenMAC(key, p))
			assert.False(t, strings.Contains(msg, mac), "%s: a MAC in %s", name, msg)
		}
	}
}

// FuzzParseToken: no input panics; what an accepted token says survives
// its export and import, every part of it.
func FuzzParseToken(f *testing.F) {
	key := []byte("fuzz")
	s := &Session{}
	g, _ := monitor.ParseGTID("0-1-7,1-2-3")
	s.wroteOn("", time.Unix(0, 12345), g)
	f.Add(s.token(key))
	f.Add(s.token(nil))
	f.Add("cndzMXwwfA")
	s.wroteOn("ds_0", time.Unix(0, 7), g)
	s.wroteOn("ds 1|/", time.Time{}, monitor.GTIDSet{})
	f.Add(s.token(key))
	f.Add(s.token(nil))
	s.shared = true
	f.Add(s.token(nil))
	f.Add(rawToken("rws2|2|*/0/|ds_1/5/0-2-3"))
	f.Fuzz(func(t *testing.T, tok string) {
		for _, k := range [][]byte{nil, key} {
			got, err := parseToken(tok, k)
			if err != nil {
				if k != nil && strings.Contains(err.Error(), string(k)) {
					t.Fatalf("the key in %v", err)
				}
				continue
			}
			back, err := parseToken(got.token(k), k)
			if err != nil {
				t.Fatalf("accepted %q, and not its own export: %v", tok, err)
			}
			if len(got.parts) == 0 {
				back.shared = got.shared // rws1 always resumes shared
			}
			if !sameSession(got, back) {
				t.Fatalf("%q: %+v, exported and read back %+v", tok, got, back)
			}
		}
	})
}

// lastOn is the last write time and GTID session s holds for cluster name
// (Session.rule without the unknown flag).
func lastOn(s *Session, name string) (time.Time, monitor.GTIDSet) {
	t, g, _ := s.rule(name)
	return t, g
}

type otherKey struct{}

// TestSessionFromFirstSession checks, in a fresh process per way of
// making one, that the first session context a program makes is found:
// SessionFrom skips the context lookup until one has been made
// (sessionsMade).
func TestSessionFromFirstSession(t *testing.T) {
	v := testproc.Variant()
	if v == "" {
		testproc.Each(t, "WithSession", "ResumeSession", "Connector.ResumeSession")
		return
	}
	outer := context.WithValue(context.Background(), otherKey{}, 1)
	assert.Nil(t, SessionFrom(outer), "no session yet")
	assert.False(t, sessionsMade.Load(), "a fresh process has made no session context")
	var ctx context.Context
	var err error
	switch v {
	case "WithSession":
		ctx = WithSession(outer)
	case "ResumeSession":
		ctx, err = unsignedConnector(t).ResumeSession(outer, (&Session{}).token(nil))
	case "Connector.ResumeSession":
		key := []byte("0123456789abcdef0123456789abcdef")
		c := keyedConnector(t, key)
		ctx, err = c.ResumeSession(outer, mustToken(t, c, &Session{}))
	}
	require.NoError(t, err)
	ctx = context.WithValue(ctx, otherKey{}, 2) // under another layer
	assert.NotNil(t, SessionFrom(ctx), "%s: the first session is found", v)
	assert.Nil(t, SessionFrom(outer), "the context without it still has none")
}
