package rwshard

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rwshard/rwshard/health"
	"github.com/rwshard/rwshard/internal/assert"
	"github.com/rwshard/rwshard/internal/require"
)

func keyedConnector(t *testing.T, key []byte) *Connector {
	t.Helper()
	cfg := NewConfig()
	cfg.Nodes = []Node{{Addr: "127.0.0.1:1"}}
	cfg.SessionKey = key
	c, err := NewConnector(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// Signed tokens: a token from SessionToken resumes with the same key; an
// edited one, an unsigned one, one signed with another key do not.
func TestSessionTokenSigned(t *testing.T) {
	c := keyedConnector(t, []byte("k1"))
	s := &Session{}
	g, err := health.ParseGTID("0-1-42")
	require.NoError(t, err)
	s.wrote(time.Unix(1700000000, 5), g)
	tok := c.SessionToken(s)

	ctx, err := c.ResumeSession(context.Background(), tok)
	require.NoError(t, err)
	got := SessionFrom(ctx)
	w, gg := got.last()
	assert.True(t, w.Equal(time.Unix(1700000000, 5)))
	assert.Equal(t, "0-1-42", gg.String())

	raw, _ := base64.RawURLEncoding.DecodeString(tok)
	edited := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(raw), "0-1-42", "0-1-99999", 1)))
	for name, bad := range map[string]string{
		"edited":    edited,
		"unsigned":  s.Token(),
		"other key": keyedConnector(t, []byte("k2")).SessionToken(s),
	} {
		_, err := c.ResumeSession(context.Background(), bad)
		var ce *ConfigError
		assert.True(t, errors.As(err, &ce), "%s: %v", name, err)
	}
	_, err = keyedConnector(t, nil).ResumeSession(context.Background(), tok)
	assert.ErrorContains(t, err, "no SessionKey")
	_, err = ResumeSession(context.Background(), s.Token())
	assert.NoError(t, err, "without a key, unsigned tokens as before")
}

// FuzzParseToken: no input panics; what an accepted token says survives
// its export and import.
func FuzzParseToken(f *testing.F) {
	key := []byte("fuzz")
	s := &Session{}
	g, _ := health.ParseGTID("0-1-7,1-2-3")
	s.wrote(time.Unix(0, 12345), g)
	f.Add(s.token(key))
	f.Add(s.token(nil))
	f.Add("cndzMXwwfA")
	f.Fuzz(func(t *testing.T, tok string) {
		for _, k := range [][]byte{nil, key} {
			got, err := parseToken(tok, k)
			if err != nil {
				continue
			}
			back, err := parseToken(got.token(k), k)
			if err != nil {
				t.Fatalf("accepted %q, and not its own export: %v", tok, err)
			}
			w1, g1 := got.last()
			w2, g2 := back.last()
			if !w1.Equal(w2) || !g1.Contains(g2) || !g2.Contains(g1) {
				t.Fatalf("%q: %v %v, exported and read back %v %v", tok, w1, g1, w2, g2)
			}
		}
	})
}
