package keeper_test

import (
	"bytes"
	"io"
	"net/http"
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
}
