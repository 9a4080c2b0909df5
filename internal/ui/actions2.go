package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/checker"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// More actions (issue 20): create an incarnation, edit a soul's covens,
// execute a procedure with its public vars, add and delete schedules.
// Like the others they go through u.action (session, CSRF, Origin, role)
// and the Operator API, which authorises, validates and audits again.

func init() {
	doneMessages["covens"] = "Covens saved."
	doneMessages["scheduled"] = "Schedule added."
	doneMessages["unscheduled"] = "Schedule deleted."
}

// registerMoreActions adds the routes of this file.
func (u *UI) registerMoreActions(mux *http.ServeMux) {
	mux.Handle("GET "+Prefix+"/incarnations/new", u.page(u.newIncarnationForm))
	mux.Handle("POST "+Prefix+"/incarnations", u.action(auth.PermCreateIncarnation, u.createIncarnation))
	mux.Handle("POST "+Prefix+"/souls/{sid}/covens", u.action(auth.PermManageSouls, u.setCovens))
	mux.Handle("POST "+Prefix+"/procedures/{name}/execute", u.action(auth.PermExecuteProcedures, u.executeProcedure))
	mux.Handle("POST "+Prefix+"/schedules", u.action(auth.PermManageProcedures, u.addSchedule))
	mux.Handle("POST "+Prefix+"/schedules/{id}/delete", u.action(auth.PermManageProcedures, u.deleteSchedule))
}

func (u *UI) setCovens(_ http.ResponseWriter, r *http.Request) (string, error) {
	sid := r.PathValue("sid")
	req := apitypes.CovensRequest{Covens: splitCovens(r.PostForm.Get("covens"))}
	if err := u.callAPI(r.Context(), r, http.MethodPut, pathTo("/v1/souls/", sid, "/covens"), req, nil); err != nil {
		return "", err
	}
	return pathTo(Prefix+"/souls/", sid, "?done=covens"), nil
}

// newIncarnationView is the data of the create-incarnation page: the
// form, and once a service and covens are chosen, the souls they match
// (previewed, a page of them) and the create scenario's input form.
type newIncarnationView struct {
	Act      actions
	Services []store.Service
	Name     string
	Service  string
	Covens   string
	Preview  bool
	Matching int          // accepted souls carrying every coven
	Souls    []store.Soul // the first previewShown of them
	Fields   []inputField
	NoCreate bool // the service has no create scenario
}

// previewShown is how many matching souls the preview lists.
const previewShown = 20

func (u *UI) newIncarnationForm(r *http.Request) (view, error) {
	ctx := r.Context()
	q := r.URL.Query()
	nv := newIncarnationView{Act: u.actionsFor(r), Name: strings.TrimSpace(q.Get("name")),
		Service: q.Get("service"), Covens: strings.TrimSpace(q.Get("covens"))}
	svcs, err := u.store.ListServices(ctx)
	if err != nil {
		return view{}, fmt.Errorf("listing services: %w", err)
	}
	nv.Services = svcs
	if nv.Service != "" {
		svc, err := u.store.GetService(ctx, nv.Service)
		if err != nil {
			return view{}, lookupErr(err, "service", nv.Service)
		}
		nv.Preview = true
		if covens := splitCovens(nv.Covens); len(covens) > 0 {
			// Members are the accepted souls with every coven.
			for _, st := range []string{store.SoulConnected, store.SoulDisconnected} {
				page, err := u.store.PageSouls(ctx, store.SoulQuery{Status: st, Covens: covens, Limit: previewShown, Count: true})
				if err != nil {
					return view{}, fmt.Errorf("previewing members: %w", err)
				}
				nv.Matching += page.Total
				nv.Souls = append(nv.Souls, page.Souls...)
			}
			slices.SortFunc(nv.Souls, func(a, b store.Soul) int { return strings.Compare(a.SID, b.SID) })
			nv.Souls = nv.Souls[:min(len(nv.Souls), previewShown)]
		}
		if u.cfg.Services != nil {
			d, err := u.cfg.Services.Open(ctx, svc.Name, svc.Commit)
			if err != nil {
				return view{}, fmt.Errorf("opening service %s at %s: %w", svc.Name, svc.Commit, err)
			}
			create, ok := d.Scenarios["create"]
			if !ok {
				nv.NoCreate = true
			} else {
				for _, in := range create.Input {
					nv.Fields = append(nv.Fields, fieldOf(in))
				}
			}
		}
	}
	return view{Template: "newincarnation", Title: "New incarnation", Nav: "incarnations", Data: nv}, nil
}

func (u *UI) createIncarnation(_ http.ResponseWriter, r *http.Request) (string, error) {
	ctx := r.Context()
	name, service := strings.TrimSpace(r.PostForm.Get("name")), r.PostForm.Get("service")
	if name == "" || service == "" {
		return "", domain.Errorf(domain.CodeInvalid, "give the incarnation a name and choose a service")
	}
	svc, err := u.store.GetService(ctx, service)
	if err != nil {
		return "", lookupErr(err, "service", service)
	}
	req := apitypes.CreateIncarnationRequest{Name: name, Service: service, Covens: splitCovens(r.PostForm.Get("covens"))}
	if u.cfg.Services != nil {
		d, err := u.cfg.Services.Open(ctx, svc.Name, svc.Commit)
		if err != nil {
			return "", fmt.Errorf("opening service %s at %s: %w", svc.Name, svc.Commit, err)
		}
		if create, ok := d.Scenarios["create"]; ok {
			if req.Input, err = formInput(r, create.Input); err != nil {
				return "", err
			}
		}
	}
	var acc apitypes.Accepted
	if err := u.callAPI(ctx, r, http.MethodPost, "/v1/incarnations", req, &acc); err != nil {
		return "", err
	}
	return pathTo(Prefix+"/runs/", acc.ApplyID), nil
}

// varField is one public var of a procedure in the execute and schedule
// forms.
type varField struct {
	Name     string
	Type     string
	Secret   bool
	Required bool // no default: the launch must set it
	Default  string
	JSON     bool // arrays and objects are typed as JSON
}

// procedureVars lists the public vars of a procedure's source for the
// forms; a source that no longer parses gives none (the page still
// shows it, and the API explains the problem on launch).
func procedureVars(p store.Procedure) []varField {
	proc, err := checker.ParseProcedure(p.Name, []byte(p.Source))
	if err != nil {
		return nil
	}
	var out []varField
	for _, v := range proc.Vars {
		if !v.Public {
			continue
		}
		f := varField{Name: v.Name, Type: string(v.Type), Secret: v.Secret,
			Required: !v.HasDefault && v.DefaultSecret == "",
			JSON:     v.Type.IsArray() || v.Type == checker.TypeObject}
		if v.HasDefault && !v.Secret {
			if s, ok := v.Default.(string); ok {
				f.Default = s
			} else if b, err := json.Marshal(v.Default); err == nil {
				f.Default = string(b)
			}
		}
		out = append(out, f)
	}
	return out
}

// formVars reads the forms' "var.<name>" fields as typed values: strings
// as typed, numbers and booleans parsed, arrays and objects (and a
// scalar's fan-out array, "[…]") as JSON. An empty field is left out
// (the default applies). Messages never repeat a secret's value.
func formVars(r *http.Request, fields []varField) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range fields {
		raw := r.PostForm.Get("var." + f.Name)
		if !f.Secret {
			raw = strings.TrimSpace(raw)
		}
		if raw == "" {
			continue
		}
		shown := strconv.Quote(raw)
		if f.Secret {
			shown = "(secret)"
		}
		if f.JSON || strings.HasPrefix(raw, "[") && !f.Secret {
			var v any
			if err := json.Unmarshal([]byte(raw), &v); err != nil {
				return nil, domain.Errorf(domain.CodeInvalid, "var %s: not valid JSON: %v", f.Name, jsonErr(err, f.Secret))
			}
			out[f.Name] = v
			continue
		}
		switch checker.VarType(f.Type) {
		case checker.TypeNumber:
			n, err := strconv.ParseFloat(raw, 64)
			if err != nil {
				return nil, domain.Errorf(domain.CodeInvalid, "var %s: %s is not a number", f.Name, shown)
			}
			out[f.Name] = n
		case checker.TypeBoolean:
			b, err := strconv.ParseBool(raw)
			if err != nil {
				return nil, domain.Errorf(domain.CodeInvalid, "var %s: %s is not true or false", f.Name, shown)
			}
			out[f.Name] = b
		default:
			out[f.Name] = raw
		}
	}
	return out, nil
}

// procedureFields reads a procedure and its public vars for an action.
func (u *UI) procedureFields(r *http.Request, name string) ([]varField, error) {
	p, err := u.store.GetProcedure(r.Context(), name)
	if err != nil {
		return nil, lookupErr(err, "procedure", name)
	}
	return procedureVars(p), nil
}

func (u *UI) executeProcedure(_ http.ResponseWriter, r *http.Request) (string, error) {
	name := r.PathValue("name")
	fields, err := u.procedureFields(r, name)
	if err != nil {
		return "", err
	}
	vars, err := formVars(r, fields)
	if err != nil {
		return "", err
	}
	var resp apitypes.ExecuteResponse
	if err := u.callAPI(r.Context(), r, http.MethodPost, pathTo("/v1/procedures/", name, "/execute"),
		apitypes.ExecuteRequest{Vars: vars}, &resp); err != nil {
		return "", err
	}
	if len(resp.TaskIDs) == 1 {
		return pathTo(Prefix+"/tasks/", resp.TaskIDs[0]), nil
	}
	return Prefix + "/tasks?procedure=" + url.QueryEscape(name), nil
}

func (u *UI) addSchedule(_ http.ResponseWriter, r *http.Request) (string, error) {
	name := strings.TrimSpace(r.PostForm.Get("procedure"))
	fields, err := u.procedureFields(r, name)
	if err != nil {
		return "", err
	}
	vars, err := formVars(r, fields)
	if err != nil {
		return "", err
	}
	req := apitypes.CreateScheduleRequest{Procedure: name, Vars: vars, Cron: strings.TrimSpace(r.PostForm.Get("cron"))}
	if err := u.callAPI(r.Context(), r, http.MethodPost, "/v1/schedules", req, nil); err != nil {
		return "", err
	}
	return Prefix + "/schedules?done=scheduled", nil
}

func (u *UI) deleteSchedule(_ http.ResponseWriter, r *http.Request) (string, error) {
	id := r.PathValue("id")
	if err := u.callAPI(r.Context(), r, http.MethodDelete, pathTo("/v1/schedules/", id), nil, nil); err != nil {
		return "", err
	}
	return Prefix + "/schedules?done=unscheduled", nil
}
