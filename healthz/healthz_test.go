package healthz_test

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/healthz"
	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { labtest.Main(m) }

// get asks h and decodes its answer.
func get(t *testing.T, h http.Handler) (int, healthz.Report) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	var rep healthz.Report
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &rep), rec.Body.String())
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	return rec.Code, rep
}

// The readiness rule on a real primary and two replicas: ready with a
// primary; MinReplicas counts the replicas that serve; a replica whose
// replication stopped is fenced and says so; a primary that stops
// answering makes the handler 503 with the reason, while a ReadOnly
// handler stays ready on its replica.
func TestLabReadiness(t *testing.T) {
	l := labtest.Fresh(t, lab.RW())
	ctx := labtest.Ctx(t, 2*time.Minute)
	db, err := sql.Open(rwshard.DriverName, labtest.DSN(l, "rwshard.probeInterval=200ms&rwshard.probeTimeout=300ms"))
	require.NoError(t, err)
	defer db.Close()
	labtest.WaitReady(t, db)
	c, err := rwshard.ConnectorOf(ctx, db)
	require.NoError(t, err)
	ready, three, readOnly := healthz.Handler(c), healthz.Handler(c, healthz.MinReplicas(3)), healthz.Handler(c, healthz.ReadOnly())

	// Every node probed once (WaitReady); on a loaded machine the
	// primary's first probe may have timed out (300 ms), so ready comes
	// with the next probe that reaches it.
	var code int
	var rep healthz.Report
	require.True(t, assert.Eventually(t, func() bool {
		code, rep = get(t, ready)
		return code == http.StatusOK
	}, 10*time.Second, 100*time.Millisecond), "%+v", rep)
	require.Len(t, rep.Groups, 1)
	g := rep.Groups[0]
	assert.Equal(t, "primary", g.Primary)
	assert.True(t, g.PrimaryUsable)
	assert.Equal(t, 2, g.ReplicasServing)
	require.Len(t, g.Nodes, 3)
	assert.Equal(t, "replica", g.Nodes[1].Role)
	assert.NotNil(t, g.Nodes[1].LagSeconds, "replica lag is measured")
	assert.Nil(t, g.Nodes[0].LagSeconds, "no lag for the primary")

	code, rep = get(t, three)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "2 of 2 replicas serving, 3 required", rep.Reason)

	rec := httptest.NewRecorder()
	ready.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/readyz", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Zero(t, rec.Body.Len(), "HEAD has no body")
	rec = httptest.NewRecorder()
	ready.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/readyz", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)

	r1 := l.Replicas()[0]
	require.NoError(t, l.StopReplication(ctx, r1))
	require.True(t, assert.Eventually(t, func() bool {
		_, rep = get(t, ready)
		return rep.Groups[0].ReplicasServing == 1
	}, 10*time.Second, 100*time.Millisecond), "%+v", rep)
	assert.Equal(t, "fenced: replication stopped", rep.Groups[0].Nodes[1].Reason)
	assert.True(t, rep.Ready, "a primary and one replica: ready")
	require.NoError(t, l.StartReplication(ctx, r1))

	require.NoError(t, l.Pause(l.Primary()))
	defer l.Resume(l.Primary())
	require.True(t, assert.Eventually(t, func() bool {
		code, rep = get(t, ready)
		return code == http.StatusServiceUnavailable
	}, 15*time.Second, 100*time.Millisecond), "%+v", rep)
	assert.True(t, strings.HasPrefix(rep.Reason, "primary primary down: "), rep.Reason)
	assert.False(t, rep.Groups[0].Nodes[0].Up)
	code, rep = get(t, readOnly)
	assert.Equal(t, http.StatusOK, code, "read-only service with replicas serving: %+v", rep)

	require.NoError(t, l.Resume(l.Primary()))
	require.True(t, assert.Eventually(t, func() bool {
		code, _ = get(t, ready)
		return code == http.StatusOK
	}, 15*time.Second, 100*time.Millisecond), "ready again once the primary answers")
}

// One host, no probes: the node is the primary, up, and ready.
func TestLabOneHost(t *testing.T) {
	l := labtest.Fresh(t, lab.RW())
	db, err := sql.Open(rwshard.DriverName, l.Primary().DSN(""))
	require.NoError(t, err)
	defer db.Close()
	c, err := rwshard.ConnectorOf(t.Context(), db)
	require.NoError(t, err)
	code, rep := get(t, healthz.Handler(c))
	assert.Equal(t, http.StatusOK, code, "%+v", rep)
	assert.Equal(t, 0, rep.Groups[0].ReplicasServing)
	code, rep = get(t, healthz.Handler(c, healthz.ReadOnly()))
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "0 of 0 replicas serving, 1 required", rep.Reason)
}
