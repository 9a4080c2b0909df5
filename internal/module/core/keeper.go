package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	register("core.cloud.created", module.Schema{
		Summary: "Create cloud instances (idempotent by name) and wait until their souls join the incarnation",
		Params: map[string]module.Param{
			"provider": str(true, "cloud provider registered through the Operator API"),
			"profile":  str(true, "instance profile of that provider"),
			"count":    typed(module.TypeInt, "number of instances of this profile the incarnation has (grows, never shrinks); names <incarnation>-<profile>-<i>"),
			"names":    typed(module.TypeStrList, "instance names (host names and SIDs)"),
		},
		ExactlyOne: [][]string{{"count", "names"}},
		KeeperSide: true,
	}, cloudOnlyInEngine)
	register("core.cloud.absent", module.Schema{
		Summary: "Delete cloud instances of the incarnation and forget their souls",
		Params: map[string]module.Param{
			"provider": str(true, "cloud provider registered through the Operator API"),
			"names":    {Type: module.TypeStrList, Required: true, Description: "instance names to delete"},
		},
		KeeperSide: true,
	}, cloudOnlyInEngine)
	register("core.http.request", module.Schema{
		Summary: "Send an HTTP request and check the status; in check mode only GET, HEAD and OPTIONS are sent",
		Params: map[string]module.Param{
			"url":     str(true, "URL"),
			"method":  str(false, "HTTP method (GET)"),
			"body":    {Type: module.TypeAny, Description: "request body; maps and lists are sent as JSON"},
			"headers": typed(module.TypeMap, "request headers"),
			"status":  typed(module.TypeInt, "expected status code (default 2xx)"),
		},
	}, httpRequest)
}

// cloudOnlyInEngine answers a core.cloud.* call that reached the module
// itself: the Keeper's run engine runs these (they need the incarnation),
// so anywhere else they fail clearly.
func cloudOnlyInEngine(_ context.Context, p map[string]any, _ *module.Env) (domain.Result, error) {
	return domain.Result{}, fmt.Errorf("core.cloud.* runs only in a scenario step on: keeper, through the Keeper's cloud providers (provider %q)", p["provider"])
}

// safeMethod reports methods that only read, which run in check mode and
// never report a change.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

func httpRequest(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	url, method, headers := a.str("url"), strings.ToUpper(a.str("method")), a.strMap("headers")
	want, hasWant := a.integer("status")
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if method == "" {
		method = http.MethodGet
	}
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return domain.Result{}, fmt.Errorf("url %q must start with http:// or https://", url)
	}
	data := map[string]any{"url": url, "method": method}
	if env.Check && !safeMethod(method) {
		return domain.Result{Skipped: true, Msg: fmt.Sprintf("skipped in check mode: would send %s %s", method, url), Data: data}, nil
	}
	var body io.Reader
	isJSON := false
	switch b := p["body"].(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return domain.Result{}, fmt.Errorf("param \"body\": cannot encode as JSON: %w", err)
		}
		body, isJSON = bytes.NewReader(raw), true
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return domain.Result{}, fmt.Errorf("building request %s %s: %w", method, url, err)
	}
	if isJSON {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, k := range sortedKeys(headers) {
		req.Header.Set(k, headers[k])
	}
	client := env.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return failed("%s %s: %v", method, url, err), nil
	}
	defer resp.Body.Close()
	w := &capWriter{limit: outputCap}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return failed("%s %s: reading response: %v", method, url, err), nil
	}
	data["status"] = int64(resp.StatusCode)
	hdr := map[string]any{}
	for k := range resp.Header {
		hdr[strings.ToLower(k)] = resp.Header.Get(k)
	}
	data["headers"] = hdr
	if strings.Contains(resp.Header.Get("Content-Type"), "json") {
		var v any
		if json.Unmarshal(w.buf, &v) == nil {
			data["json"] = v
		}
	}
	res := domain.Result{Changed: !safeMethod(method), RC: resp.StatusCode, Stdout: w.String(), Data: data}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if hasWant {
		ok = int64(resp.StatusCode) == want
	}
	if !ok {
		res.Failed = true
		wantText := "2xx"
		if hasWant {
			wantText = fmt.Sprint(want)
		}
		res.Msg = fmt.Sprintf("%s %s: status %d, want %s", method, url, resp.StatusCode, wantText)
	}
	if w.truncated {
		res.Msg = strings.TrimPrefix(res.Msg+fmt.Sprintf("; body truncated to %d bytes", outputCap), "; ")
	}
	return res, nil
}
