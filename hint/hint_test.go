package hint

import (
	"context"
	"testing"
	"time"

	"github.com/rwshard/rwshard/internal/testproc"
	"github.com/stretchr/testify/assert"
)

func TestContextHints(t *testing.T) {
	bg := context.Background()
	h, ok := FromContext(bg)
	assert.False(t, ok)
	assert.True(t, h.IsZero())

	h, ok = FromContext(Primary(bg))
	assert.True(t, ok)
	assert.Equal(t, Hint{Route: PrimaryOnly}, h)

	h, _ = FromContext(Replica(bg))
	assert.Equal(t, Hint{Route: ReplicaOK}, h)

	h, _ = FromContext(Node(bg, "replica2"))
	assert.Equal(t, Hint{Route: NodeOnly, Node: "replica2"}, h)

	// Later wishes replace the route but keep an earlier lag bound.
	ctx := MaxLag(Node(bg, "replica2"), 2*time.Second)
	h, _ = FromContext(Primary(ctx))
	assert.Equal(t, Hint{Route: PrimaryOnly, MaxLag: 2 * time.Second}, h)

	// A negative bound means none; the parent context is untouched.
	h, _ = FromContext(MaxLag(ctx, -time.Second))
	assert.Equal(t, Hint{Route: NodeOnly, Node: "replica2"}, h)
	h, _ = FromContext(ctx)
	assert.Equal(t, 2*time.Second, h.MaxLag)
}

func TestMerge(t *testing.T) {
	p := Hint{Route: PrimaryOnly}
	r := Hint{Route: ReplicaOK}
	n1 := Hint{Route: NodeOnly, Node: "a"}
	n2 := Hint{Route: NodeOnly, Node: "b"}
	for _, tc := range []struct {
		name string
		a, b Hint
		want Hint
	}{
		{"zero", Hint{}, Hint{}, Hint{}},
		{"primary beats replica", r, p, p},
		{"primary beats replica reversed", p, r, p},
		{"primary beats node", n1, p, p},
		{"node beats replica", r, n1, n1},
		{"second node wins", n1, n2, n2},
		{"smaller lag wins", Hint{MaxLag: time.Second}, Hint{MaxLag: time.Millisecond}, Hint{MaxLag: time.Millisecond}},
		{"lag kept", Hint{MaxLag: time.Second}, p, Hint{Route: PrimaryOnly, MaxLag: time.Second}},
	} {
		assert.Equal(t, tc.want, Merge(tc.a, tc.b), tc.name)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		comment string
		want    Hint
		ok      bool
		err     string
	}{
		{"just a comment", Hint{}, false, ""},
		{" rwshard:primary ", Hint{Route: PrimaryOnly}, true, ""},
		{"RWSHARD:Primary", Hint{Route: PrimaryOnly}, true, ""},
		{"rwshard:master", Hint{Route: PrimaryOnly}, true, ""},
		{"rwshard:replica", Hint{Route: ReplicaOK}, true, ""},
		{"rwshard:node=replica2", Hint{Route: NodeOnly, Node: "replica2"}, true, ""},
		{"rwshard:replica, max_lag=500ms", Hint{Route: ReplicaOK, MaxLag: 500 * time.Millisecond}, true, ""},
		{"rwshard: max_lag=2s primary", Hint{Route: PrimaryOnly, MaxLag: 2 * time.Second}, true, ""},
		{"rwshard:primary,primary", Hint{Route: PrimaryOnly}, true, ""},
		{"SHARDINGSPHERE_HINT: WRITE_ROUTE_ONLY=true", Hint{Route: PrimaryOnly}, true, ""},
		{"shardingsphere_hint: write_route_only=TRUE", Hint{Route: PrimaryOnly}, true, ""},
		{"SHARDINGSPHERE_HINT: WRITE_ROUTE_ONLY=false", Hint{}, true, ""},

		{"rwshard:", Hint{}, true, `hint "rwshard:": empty hint: ""`},
		{"rwshard:primry", Hint{}, true, `hint "rwshard:primry": unknown item: "primry"`},
		{"rwshard:primary=1", Hint{}, true, `takes no value: "primary=1"`},
		{"rwshard:node=", Hint{}, true, `needs a node name: "node="`},
		{"rwshard:max_lag=soon", Hint{}, true, `needs a positive duration such as 500ms: "max_lag=soon"`},
		{"rwshard:max_lag=-1s", Hint{}, true, `needs a positive duration`},
		{"rwshard:primary,replica", Hint{}, true, `conflicting route: "replica"`},
		{"rwshard:node=a,node=b", Hint{}, true, `conflicting route: "node=b"`},
		{"SHARDINGSPHERE_HINT: WRITE_ROUTE_ONLY=yes", Hint{}, true, `needs true or false: "WRITE_ROUTE_ONLY=yes"`},
		{"SHARDINGSPHERE_HINT: DATA_SOURCE_NAME=ds_0", Hint{}, true, `ShardingSphere hint key not supported by rwshard: "DATA_SOURCE_NAME=ds_0"`},
		{"SHARDINGSPHERE_HINT: FOO=1", Hint{}, true, `unknown ShardingSphere hint key: "FOO=1"`},
	} {
		h, ok, err := Parse(tc.comment)
		assert.Equal(t, tc.ok, ok, tc.comment)
		if tc.err != "" {
			var he *Error
			if assert.ErrorAs(t, err, &he, tc.comment) {
				assert.Contains(t, err.Error(), tc.err, tc.comment)
				assert.Contains(t, err.Error(), "hint \"", tc.comment)
			}
			continue
		}
		assert.NoError(t, err, tc.comment)
		assert.Equal(t, tc.want, h, tc.comment)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"rwshard:primary", "rwshard:replica,max_lag=1s", "rwshard:node=x",
		"SHARDINGSPHERE_HINT: WRITE_ROUTE_ONLY=true", "plain", "rwshard:,,", "rwshard:max_lag=1e9h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, comment string) {
		h, ok, err := Parse(comment)
		if !ok && (err != nil || !h.IsZero()) {
			t.Fatalf("non-hint %q gave %+v, %v", comment, h, err)
		}
		if err != nil && !h.IsZero() {
			t.Fatalf("error with a hint: %+v, %v", h, err)
		}
		if h.Route == NodeOnly && h.Node == "" {
			t.Fatalf("node route without a node: %q", comment)
		}
		if h.MaxLag < 0 {
			t.Fatalf("negative lag from %q", comment)
		}
	})
}

func BenchmarkFromContext(b *testing.B) {
	ctx := MaxLag(Primary(context.Background()), time.Second)
	b.ReportAllocs()
	for b.Loop() {
		if h, _ := FromContext(ctx); h.Route != PrimaryOnly {
			b.Fatal(h)
		}
	}
}

type otherKey struct{}

// TestFromContextFirstHint checks, in a fresh process per constructor,
// that the first context hint a program makes is found: FromContext skips
// the context lookup until a hint has been made (made).
func TestFromContextFirstHint(t *testing.T) {
	want := map[string]Hint{
		"Primary":    {Route: PrimaryOnly},
		"Replica":    {Route: ReplicaOK},
		"Node":       {Route: NodeOnly, Node: "replica2"},
		"MaxLag":     {MaxLag: time.Second},
		"Pool":       {Pool: "reports"},
		"NewContext": {Route: PrimaryOnly, Pool: "p"},
	}
	ctors := map[string]func(context.Context) context.Context{
		"Primary":    Primary,
		"Replica":    Replica,
		"Node":       func(ctx context.Context) context.Context { return Node(ctx, "replica2") },
		"MaxLag":     func(ctx context.Context) context.Context { return MaxLag(ctx, time.Second) },
		"Pool":       func(ctx context.Context) context.Context { return Pool(ctx, "reports") },
		"NewContext": func(ctx context.Context) context.Context { return NewContext(ctx, want["NewContext"]) },
	}
	v := testproc.Variant()
	if v == "" {
		testproc.Each(t, "Primary", "Replica", "Node", "MaxLag", "Pool", "NewContext")
		return
	}
	outer := context.WithValue(context.Background(), otherKey{}, 1)
	_, ok := FromContext(outer)
	assert.False(t, ok, "no hint yet")
	assert.False(t, Made(), "a fresh process has made no hint")
	ctx := context.WithValue(ctors[v](outer), otherKey{}, 2) // under another layer
	assert.True(t, Made(), "%s: a hint made", v)
	h, ok := FromContext(ctx)
	assert.True(t, ok, "%s: the first hint is found", v)
	assert.Equal(t, want[v], h, v)
	_, ok = FromContext(outer)
	assert.False(t, ok, "the context without it still has none")
}
