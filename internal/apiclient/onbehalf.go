package apiclient

import (
	"context"
	"net/http"

	"github.com/soulstack/soulstack/internal/apitypes"
)

type onBehalfKey struct{}

// WithOnBehalfOf returns ctx under which the Client's requests say they
// act for the Archon archonID (header apitypes.HeaderOnBehalfOf). The
// Keeper accepts it only from its Checker's own token: the Checker runs a
// schedule's or an operator's procedure for them, so the audit log names
// them and a disabled owner's calls are refused (audit M4). An empty
// archonID leaves ctx as it is.
func WithOnBehalfOf(ctx context.Context, archonID string) context.Context {
	if archonID == "" {
		return ctx
	}
	return context.WithValue(ctx, onBehalfKey{}, archonID)
}

// setOnBehalfOf copies the Archon of WithOnBehalfOf, if any, into req.
func setOnBehalfOf(req *http.Request) {
	if id, _ := req.Context().Value(onBehalfKey{}).(string); id != "" {
		req.Header.Set(apitypes.HeaderOnBehalfOf, id)
	}
}
