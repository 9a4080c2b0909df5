package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/store"
)

// TestStoreRecordsNeverCrossTheAPIEdge: writeJSON refuses (500) a body
// that is or holds a store record — directly, in a list, a map or a field
// — and sends the apitypes resources the handlers convert them to.
func TestStoreRecordsNeverCrossTheAPIEdge(t *testing.T) {
	soul := store.Soul{SID: "h1", Status: store.SoulConnected, PublicKey: []byte("k")}
	for name, v := range map[string]any{
		"record": soul,
		"list":   []store.Soul{soul},
		"map":    map[string]*store.Run{"r": {ID: "r"}},
		"field":  struct{ Inc store.Incarnation }{},
		"wrapped": struct {
			X []map[string]store.CheckerLogLine
		}{},
	} {
		rec := httptest.NewRecorder()
		writeJSON(rec, http.StatusOK, v)
		if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "store.") {
			t.Errorf("%s: %d %s, want a 500 naming the store type", name, rec.Code, rec.Body)
		}
	}
	for name, v := range map[string]any{
		"soul":   wireSoul(soul),
		"list":   wireList([]store.Soul{soul}, wireSoul),
		"detail": RunDetail(store.Run{ID: "r"}, nil, nil),
		"drift":  wireDrift(store.Drift{Report: &store.DriftReport{Hosts: map[string]store.DriftHost{"h1": {Status: store.DriftDrifted}}}}),
		"nil":    nil,
	} {
		rec := httptest.NewRecorder()
		writeJSON(rec, http.StatusOK, v)
		if rec.Code != http.StatusOK {
			t.Errorf("%s: %d %s, want 200", name, rec.Code, rec.Body)
		}
	}
	if got := wireList[store.Soul, apitypes.Soul](nil, wireSoul); got == nil {
		t.Error("an empty list must encode as [], not null")
	}
}
