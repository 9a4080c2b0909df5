package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
)

// Services opens a service's DSL at a commit; *catalog.Catalog implements
// it. The run form reads a scenario's typed input from it.
type Services interface {
	Open(ctx context.Context, name, commit string) (*dsl.Service, error)
}

// inputField is one input of the run form.
type inputField struct {
	Name        string
	Type        string
	Required    bool
	Secret      bool
	Description string
	Default     string // the default rendered for the field ("" none)
	HasDefault  bool
	Checked     bool // boolean: checked by default
}

// startView is the data of the start-run page.
type startView struct {
	Act         actions
	Incarnation string
	Scenarios   []string
	Scenario    string
	Fields      []inputField
}

// startForm shows the scenarios of an incarnation, or the form of one.
func (u *UI) startForm(r *http.Request) (view, error) {
	name := r.PathValue("name")
	inc, err := u.store.GetIncarnation(r.Context(), name)
	if err != nil {
		return view{}, lookupErr(err, "incarnation", name)
	}
	if u.cfg.Services == nil {
		return view{}, domain.Errorf(domain.CodeNotFound, "This keeper's UI cannot read services: start runs with soulctl.")
	}
	svc, err := u.cfg.Services.Open(r.Context(), inc.Service, inc.Commit)
	if err != nil {
		return view{}, fmt.Errorf("opening service %s at %s: %w", inc.Service, inc.Commit, err)
	}
	sv := startView{Act: u.actionsOn(r, auth.Object{Kind: auth.ObjIncarnation, Name: name}), Incarnation: name, Scenarios: slices.Sorted(maps.Keys(svc.Scenarios))}
	if sc := r.URL.Query().Get("scenario"); sc != "" {
		s, ok := svc.Scenarios[sc]
		if !ok {
			return view{}, domain.Errorf(domain.CodeNotFound, "Service %s has no scenario %q.", inc.Service, sc)
		}
		sv.Scenario = sc
		for _, in := range s.Input {
			sv.Fields = append(sv.Fields, fieldOf(in))
		}
	}
	return view{Template: "start", Title: "Run " + name, Nav: "incarnations", Data: sv}, nil
}

// fieldOf describes one declared input for the form. A secret's default
// is never put into the page.
func fieldOf(in *dsl.InputSpec) inputField {
	f := inputField{Name: in.Name, Type: string(in.Type), Required: in.Required, Secret: in.Secret,
		Description: in.Description, HasDefault: in.HasDefault}
	if !in.HasDefault || in.Secret {
		return f
	}
	switch v := in.Default.(type) {
	case string:
		f.Default = v
	case bool:
		f.Checked = v
		f.Default = strconv.FormatBool(v)
	case nil:
	default:
		b, err := json.Marshal(v)
		if err == nil {
			f.Default = string(b)
		}
	}
	return f
}

// startRun starts a run of the posted scenario with the typed input read
// from the form, then lands on the run's live page.
func (u *UI) startRun(_ http.ResponseWriter, r *http.Request) (string, error) {
	name := r.PathValue("name")
	sc := strings.TrimSpace(r.PostForm.Get("scenario"))
	if sc == "" {
		return "", domain.Errorf(domain.CodeInvalid, "choose a scenario")
	}
	inc, err := u.store.GetIncarnation(r.Context(), name)
	if err != nil {
		return "", lookupErr(err, "incarnation", name)
	}
	if u.cfg.Services == nil {
		return "", domain.Errorf(domain.CodeUnavailable, "this keeper's UI cannot read services")
	}
	svc, err := u.cfg.Services.Open(r.Context(), inc.Service, inc.Commit)
	if err != nil {
		return "", fmt.Errorf("opening service %s at %s: %w", inc.Service, inc.Commit, err)
	}
	s, ok := svc.Scenarios[sc]
	if !ok {
		return "", domain.Errorf(domain.CodeInvalid, "service %s has no scenario %q", inc.Service, sc)
	}
	input, err := formInput(r, s.Input)
	if err != nil {
		return "", err
	}
	req := apitypes.StartRunRequest{Scenario: sc, Input: input, Check: r.PostForm.Get("check") != ""}
	var acc apitypes.Accepted
	if err := u.callAPI(r.Context(), r, http.MethodPost, pathTo("/v1/incarnations/", name, "/runs"), req, &acc); err != nil {
		return "", err
	}
	return pathTo(Prefix+"/runs/", acc.ApplyID), nil
}

// formInput converts the form's fields "in.<name>" to typed input values.
// An empty field is left out (the scenario's default, or its "required"
// error, applies); list and map fields hold JSON. Error messages never
// repeat a secret's value.
func formInput(r *http.Request, specs dsl.Inputs) (map[string]any, error) {
	out := map[string]any{}
	for _, in := range specs {
		raw := r.PostForm.Get("in." + in.Name)
		if in.Type == dsl.InputBoolean {
			// A checkbox: present means true; the hidden "seen" field
			// tells an unchecked box from a form without the field.
			if r.PostForm.Has("seen." + in.Name) {
				out[in.Name] = raw != ""
			}
			continue
		}
		if !in.Secret {
			raw = strings.TrimSpace(raw)
		}
		if raw == "" {
			continue
		}
		shown := strconv.Quote(raw)
		if in.Secret {
			shown = "(secret)"
		}
		switch in.Type {
		case dsl.InputNumber:
			f, err := strconv.ParseFloat(raw, 64)
			if err != nil {
				return nil, domain.Errorf(domain.CodeInvalid, "input %s: %s is not a number", in.Name, shown)
			}
			out[in.Name] = f
		case dsl.InputInteger:
			n, err := strconv.ParseInt(raw, 10, 64)
			if err != nil {
				return nil, domain.Errorf(domain.CodeInvalid, "input %s: %s is not a whole number", in.Name, shown)
			}
			out[in.Name] = n
		case dsl.InputList, dsl.InputMap:
			var v any
			if err := json.Unmarshal([]byte(raw), &v); err != nil {
				return nil, domain.Errorf(domain.CodeInvalid, "input %s: not valid JSON: %v", in.Name, jsonErr(err, in.Secret))
			}
			_, isList := v.([]any)
			_, isMap := v.(map[string]any)
			if in.Type == dsl.InputList && !isList {
				return nil, domain.Errorf(domain.CodeInvalid, "input %s: must be a JSON list such as [\"a\", \"b\"]", in.Name)
			}
			if in.Type == dsl.InputMap && !isMap {
				return nil, domain.Errorf(domain.CodeInvalid, "input %s: must be a JSON object such as {\"key\": \"value\"}", in.Name)
			}
			out[in.Name] = v
		default:
			out[in.Name] = raw
		}
	}
	return out, nil
}

func jsonErr(err error, secret bool) string {
	if secret {
		return "syntax error"
	}
	return err.Error()
}
