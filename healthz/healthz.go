// Package healthz serves an rwshard Connector's health over HTTP for load
// balancers and Kubernetes probes.
//
//	c, err := rwshard.ConnectorOf(ctx, db)
//	…
//	http.Handle("/readyz", healthz.Handler(c))
//
// The handler answers GET and HEAD with the JSON of Connector.Health (the
// primary of every group, its replicas, and why a node is out) and a
// status code by this rule:
//
//   - 200 when every group (the connector, or each data source of a
//     sharded one) has a usable primary: up, writable, no split brain,
//     and at least MinReplicas replicas serving (up and not fenced);
//   - with ReadOnly, 200 when every group has at least max(1, MinReplicas)
//     replicas serving, primary or not (a service that only reads);
//   - 503 otherwise, the body's "reason" saying why.
//
// It does no I/O: it reads what rwshard's health probes last saw, so a
// probe every second costs nothing on the database. Use it for readiness
// (stop sending traffic to an instance that cannot write); a liveness
// probe that depends on the database restarts every instance at once
// when the database fails, which is rarely what is wanted.
package healthz

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/rwshard/rwshard"
)

// Option configures a Handler.
type Option func(*handler)

// MinReplicas requires n replicas serving in every group.
func MinReplicas(n int) Option { return func(h *handler) { h.minReplicas = n } }

// ReadOnly makes the handler ready without a primary, with replicas.
func ReadOnly() Option { return func(h *handler) { h.readOnly = true } }

type handler struct {
	c           *rwshard.Connector
	minReplicas int
	readOnly    bool
}

// Handler returns the health handler of c.
func Handler(c *rwshard.Connector, opts ...Option) http.Handler {
	h := &handler{c: c}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Report is the handler's body: Connector.Health, with Ready and Reason
// by the handler's rule.
type Report = rwshard.Health

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	rep := h.report()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if rep.Ready {
		w.WriteHeader(http.StatusOK)
	} else {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	if r.Method == http.MethodGet {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	}
}

// report applies the handler's rule to the connector's health.
func (h *handler) report() Report {
	rep := h.c.Health()
	rep.Ready, rep.Reason = true, ""
	need := h.minReplicas
	if h.readOnly {
		need = max(need, 1)
	}
	for _, g := range rep.Groups {
		why := ""
		switch {
		case !h.readOnly && !g.PrimaryUsable:
			why = g.Reason
		case g.ReplicasServing < need:
			why = fmt.Sprintf("%d of %d replicas serving, %d required", g.ReplicasServing, len(g.Nodes)-1, need)
		}
		if why != "" {
			if g.Name != "" {
				why = g.Name + ": " + why
			}
			rep.Ready, rep.Reason = false, why
			break
		}
	}
	return rep
}
