// Package monitoring checks the alert rules and the Grafana dashboard that
// ship in metrics/monitoring: the rules parse as Prometheus parses them
// (rulefmt, the parser promtool check rules uses), and every expression of
// both refers only to metrics and labels the metrics collector exports.
package monitoring

import (
	"encoding/json"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/metrics"
)

const dir = "../../metrics/monitoring/"

// exported returns the collector's metric names with their labels, the
// histogram's series names included.
func exported(t *testing.T) map[string]map[string]bool {
	t.Helper()
	primary, _, err := sqlmock.New()
	if err != nil {
		t.Fatal(err)
	}
	db, err := rwshard.OpenDB(primary, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := rwshard.ConnectorOf(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 64)
	go func() { metrics.NewCollector(c).Describe(ch); close(ch) }()
	nameRE := regexp.MustCompile(`fqName: "([^"]+)"`)
	labelsRE := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	out := map[string]map[string]bool{}
	for d := range ch {
		s := d.String()
		name := nameRE.FindStringSubmatch(s)[1]
		labels := map[string]bool{"job": true, "instance": true}
		if m := labelsRE.FindStringSubmatch(s); m != nil && m[1] != "" {
			for _, l := range strings.Split(m[1], ",") {
				labels[strings.TrimSpace(l)] = true
			}
		}
		out[name] = labels
		if strings.HasSuffix(name, "_seconds") && labels["class"] { // the histogram
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				l := map[string]bool{"le": suffix == "_bucket"}
				for k := range labels {
					l[k] = true
				}
				out[name+suffix] = l
			}
		}
	}
	if len(out) < 20 {
		t.Fatalf("collector describes %d metrics: parsing its descriptors failed", len(out))
	}
	return out
}

// check parses expr and fails on a selector of a metric the collector
// does not export, or a label that metric does not have.
func check(t *testing.T, where, expr string, known map[string]map[string]bool) {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %v\n%s", where, err, expr)
		return
	}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		labels, ok := known[vs.Name]
		if !ok {
			t.Errorf("%s: metric %q is not exported by the collector", where, vs.Name)
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name != "__name__" && !labels[m.Name] {
				t.Errorf("%s: %s has no label %q", where, vs.Name, m.Name)
			}
		}
		return nil
	})
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if ag, ok := n.(*parser.AggregateExpr); ok && !ag.Without {
			for _, l := range ag.Grouping {
				found := false
				for _, labels := range known {
					found = found || labels[l]
				}
				if !found {
					t.Errorf("%s: grouping by %q, which no rwshard metric has", where, l)
				}
			}
		}
		return nil
	})
}

func TestAlertRules(t *testing.T) {
	known := exported(t)
	rgs, errs := rulefmt.ParseFile(dir+"alerts.yml", false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("alerts.yml: %v", err)
	}
	if rgs == nil {
		t.Fatal("alerts.yml: no rule groups")
	}
	want := map[string]bool{"RwshardPrimaryDown": false, "RwshardNodeDown": false, "RwshardReplicaLag": false,
		"RwshardFallbackShare": false, "RwshardPrimaryReadShare": false, "RwshardRetryBudgetExhausted": false,
		"RwshardSplitBrain": false}
	for _, g := range rgs.Groups {
		for _, r := range g.Rules {
			if _, ok := want[r.Alert]; ok {
				want[r.Alert] = true
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("%s: want a severity label and a summary", r.Alert)
			}
			check(t, r.Alert, r.Expr, known)
		}
	}
	for name, found := range want {
		if !found {
			t.Errorf("alert %s missing", name)
		}
	}
}

func TestDashboard(t *testing.T) {
	known := exported(t)
	raw, err := os.ReadFile(dir + "dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string
		UID    string
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	if d.UID == "" || len(d.Panels) < 10 {
		t.Fatalf("dashboard: uid %q, %d panels", d.UID, len(d.Panels))
	}
	n := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			// Grafana's variables, as a query would see them expanded.
			expr := strings.NewReplacer("$__rate_interval", "5m", `=~"$job"`, `=~".+"`).Replace(tg.Expr)
			check(t, p.Title, expr, known)
			n++
		}
	}
	t.Logf("%d panels, %d queries checked", len(d.Panels), n)
}
