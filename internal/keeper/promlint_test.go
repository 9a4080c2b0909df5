package keeper_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// TestMetricsPassPromlint (issue 32): the Keeper's /metrics, after souls
// connected and a run, passes the checks of `promtool check metrics`
// (promlint, the library promtool runs): names, units, suffixes, help.
func TestMetricsPassPromlint(t *testing.T) {
	f := inProcessKeeper(t, "")
	f.startSouls()
	f.registerFleet()
	if r := f.createFleet(); r.Status != "succeeded" {
		t.Fatalf("create: %s", r.Status)
	}
	resp, err := http.Get("http://" + f.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"soulstack_souls{", "soulstack_api_request_duration_seconds_bucket{", "soulstack_keeper_souls{"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Fatalf("/metrics has no %s", want)
		}
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	var lines []string
	for _, p := range problems {
		lines = append(lines, p.Metric+": "+p.Text)
	}
	if len(lines) > 0 {
		t.Fatalf("promlint found %d problems:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	checkDashboard(t, string(body))
}

var (
	metricName = regexp.MustCompile(`soulstack_[a-z_]+`)
	byLabels   = regexp.MustCompile(`by \(([a-z_, ]+)\) \((?:rate\()?(soulstack_[a-z_]+)`)
)

// checkDashboard: every metric packaging/grafana's dashboard queries is one
// the Keeper exports (a histogram by its _bucket/_count/_sum series), and
// every label it groups by is one that metric has.
func checkDashboard(t *testing.T, metrics string) {
	t.Helper()
	b, err := os.ReadFile("../../packaging/grafana/soulstack-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("the dashboard: %v", err)
	}
	if len(dash.Panels) < 10 {
		t.Fatalf("the dashboard has %d panels", len(dash.Panels))
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range metricName.FindAllString(tg.Expr, -1) {
				if !strings.Contains(metrics, "\n"+name+"{") && !strings.Contains(metrics, "\n"+name+" ") {
					t.Errorf("panel %q queries %s, which /metrics does not have", p.Title, name)
				}
			}
			for _, m := range byLabels.FindAllStringSubmatch(tg.Expr, -1) {
				for _, l := range strings.Split(m[1], ",") {
					if l = strings.TrimSpace(l); l != "le" && !strings.Contains(metrics, "\n"+m[2]+"{"+l+"=") && !strings.Contains(metrics, ","+l+"=") {
						t.Errorf("panel %q groups %s by %s, a label it does not have", p.Title, m[2], l)
					}
				}
			}
		}
	}
}
