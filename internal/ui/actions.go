package ui

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
)

// maxActionForm bounds the body of an action form.
const maxActionForm = 256 << 10

// doneMessages are the notices shown after an action succeeded, chosen by
// the "done" query parameter (nothing from the request is echoed).
var doneMessages = map[string]string{
	"unlocked":  "Unlocked. The reason is in the audit log.",
	"cancelled": "Cancel requested: running tasks finish, nothing new starts.",
	"accepted":  "Soul accepted.",
	"rejected":  "Soul rejected.",
	"deleted":   "Soul deleted.",
}

// actionFunc performs one action for a verified request (its context
// carries the session's Principal, which callAPI acts as); it returns
// where to send the browser next, or "" when it wrote the answer itself.
type actionFunc func(w http.ResponseWriter, r *http.Request) (string, error)

// action wraps an action handler: the session must be signed in, the
// request must come from this origin with the session's CSRF token, and
// the Archon must hold need on some scope (the API decides on the
// object, with the same authorizer).
func (u *UI) action(need auth.Permission, f actionFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := u.principal(r)
		if err != nil {
			if domain.ErrorCode(err) == domain.CodeUnauthorized {
				u.toLogin(w, r, err)
				return
			}
			u.renderError(w, r, nil, err)
			return
		}
		r = r.WithContext(auth.WithPrincipal(r.Context(), p))
		c, _ := r.Cookie(cookieName) // principal found it
		r.Body = http.MaxBytesReader(w, r.Body, maxActionForm)
		if err := r.ParseForm(); err != nil {
			u.renderActionError(w, r, &p, domain.Errorf(domain.CodeInvalid, "the form could not be read"))
			return
		}
		if err := checkCSRF(r, c.Value); err != nil {
			u.log.WarnContext(r.Context(), "ui: action refused", "path", r.URL.Path, "archon", p.ArchonID, "err", err)
			u.renderActionError(w, r, &p, err)
			return
		}
		if u.cfg.API == nil {
			u.renderActionError(w, r, &p, domain.Errorf(domain.CodeUnavailable, "this keeper's UI cannot perform actions"))
			return
		}
		if err := u.mayAnywhere(r, p, need); err != nil {
			u.renderActionError(w, r, &p, err)
			return
		}
		next, err := f(w, r)
		if err != nil {
			u.renderActionError(w, r, &p, err)
			return
		}
		if next != "" {
			http.Redirect(w, r, next, http.StatusSeeOther)
		}
	})
}

// renderActionError renders a refused or failed action. Unlike a page
// error, the message of a client error (bad input, forbidden, conflict) is
// shown: it tells the Archon what to change.
func (u *UI) renderActionError(w http.ResponseWriter, r *http.Request, p *auth.Principal, err error) {
	status := httpStatus(err)
	if status >= 500 && status != http.StatusServiceUnavailable {
		u.renderError(w, r, p, err)
		return
	}
	ev := errorView{Status: status, Heading: "The action was refused", Message: err.Error()}
	var de *domain.Error
	if errors.As(err, &de) {
		ev.Message = de.Message
	}
	if status == http.StatusServiceUnavailable {
		ev.Heading = "The action could not be done"
	}
	u.render(w, r, p, status, view{Template: "error", Title: ev.Heading, Data: ev})
}

// registerActions adds the action routes.
func (u *UI) registerActions(mux *http.ServeMux) {
	mux.Handle("POST "+Prefix+"/incarnations/{name}/unlock", u.action(auth.PermUnlock, u.unlock))
	mux.Handle("POST "+Prefix+"/incarnations/{name}/drift", u.action(auth.PermCheckRun, u.drift))
	mux.Handle("POST "+Prefix+"/incarnations/{name}/runs", u.action(auth.PermRun, u.startRun))
	mux.Handle("GET "+Prefix+"/incarnations/{name}/start", u.page(u.startForm))
	mux.Handle("POST "+Prefix+"/runs/{id}/cancel", u.action(auth.PermCancel, u.cancelRun))
	mux.Handle("POST "+Prefix+"/runs/{id}/resume", u.action(auth.PermResume, u.resumeRun))
	mux.Handle("POST "+Prefix+"/souls/{sid}/accept", u.action(auth.PermManageSouls, u.acceptSoul))
	mux.Handle("POST "+Prefix+"/souls/{sid}/reject", u.action(auth.PermManageSouls, u.rejectSoul))
	mux.Handle("POST "+Prefix+"/souls/{sid}/delete", u.action(auth.PermManageSouls, u.deleteSoul))
	mux.Handle("GET "+Prefix+"/join-tokens", u.page(u.joinTokenForm))
	mux.Handle("POST "+Prefix+"/join-tokens", u.action(auth.PermManageSouls, u.createJoinToken))
	u.registerMoreActions(mux)
}

func pathTo(parts ...string) string {
	for i, p := range parts {
		if i%2 == 1 {
			parts[i] = url.PathEscape(p)
		}
	}
	return strings.Join(parts, "")
}

func (u *UI) unlock(_ http.ResponseWriter, r *http.Request) (string, error) {
	name := r.PathValue("name")
	req := apitypes.UnlockRequest{Reason: strings.TrimSpace(r.PostForm.Get("reason"))}
	if err := u.callAPI(r.Context(), r, http.MethodPost, pathTo("/v1/incarnations/", name, "/unlock"), req, nil); err != nil {
		return "", err
	}
	return pathTo(Prefix+"/incarnations/", name, "?done=unlocked"), nil
}

func (u *UI) drift(_ http.ResponseWriter, r *http.Request) (string, error) {
	name := r.PathValue("name")
	var acc apitypes.Accepted
	req := apitypes.DriftRequest{Scenario: strings.TrimSpace(r.PostForm.Get("scenario"))}
	if err := u.callAPI(r.Context(), r, http.MethodPost, pathTo("/v1/incarnations/", name, "/drift"), req, &acc); err != nil {
		return "", err
	}
	return pathTo(Prefix+"/runs/", acc.ApplyID), nil
}

func (u *UI) cancelRun(_ http.ResponseWriter, r *http.Request) (string, error) {
	id := r.PathValue("id")
	if err := u.callAPI(r.Context(), r, http.MethodPost, pathTo("/v1/runs/", id, "/cancel"), nil, nil); err != nil {
		return "", err
	}
	return pathTo(Prefix+"/runs/", id, "?done=cancelled"), nil
}

func (u *UI) resumeRun(_ http.ResponseWriter, r *http.Request) (string, error) {
	id := r.PathValue("id")
	var acc apitypes.Accepted
	req := apitypes.ResumeRequest{Reason: strings.TrimSpace(r.PostForm.Get("reason"))}
	if err := u.callAPI(r.Context(), r, http.MethodPost, pathTo("/v1/runs/", id, "/resume"), req, &acc); err != nil {
		return "", err
	}
	return pathTo(Prefix+"/runs/", acc.ApplyID), nil
}

// splitCovens reads a comma- or space-separated coven list.
func splitCovens(s string) []string {
	out := []string{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' }) {
		out = append(out, f)
	}
	return out
}

func (u *UI) acceptSoul(_ http.ResponseWriter, r *http.Request) (string, error) {
	sid := r.PathValue("sid")
	req := apitypes.AcceptSoulRequest{Covens: splitCovens(r.PostForm.Get("covens"))}
	if err := u.callAPI(r.Context(), r, http.MethodPost, pathTo("/v1/souls/", sid, "/accept"), req, nil); err != nil {
		return "", err
	}
	return pathTo(Prefix+"/souls/", sid, "?done=accepted"), nil
}

func (u *UI) rejectSoul(_ http.ResponseWriter, r *http.Request) (string, error) {
	sid := r.PathValue("sid")
	if err := u.callAPI(r.Context(), r, http.MethodPost, pathTo("/v1/souls/", sid, "/reject"), nil, nil); err != nil {
		return "", err
	}
	return pathTo(Prefix+"/souls/", sid, "?done=rejected"), nil
}

func (u *UI) deleteSoul(_ http.ResponseWriter, r *http.Request) (string, error) {
	sid := r.PathValue("sid")
	if r.PostForm.Get("confirm") != sid {
		return "", domain.Errorf(domain.CodeInvalid, "type the SID to confirm deleting the soul")
	}
	if err := u.callAPI(r.Context(), r, http.MethodDelete, pathTo("/v1/souls/", sid), nil, nil); err != nil {
		return "", err
	}
	return Prefix + "/souls?done=deleted", nil
}

// joinTokenView is the data of the join token page: the form, and once
// created, the token (shown this once).
type joinTokenView struct {
	Act     actions
	Created *apitypes.CreatedJoinToken
	Install string // the install.sh one-liner
}

func (u *UI) joinTokenForm(r *http.Request) (view, error) {
	return view{Template: "jointoken", Title: "Join token", Nav: "souls", Data: joinTokenView{Act: u.actionsFor(r)}}, nil
}

func (u *UI) createJoinToken(w http.ResponseWriter, r *http.Request) (string, error) {
	req := apitypes.CreateJoinTokenRequest{Covens: splitCovens(r.PostForm.Get("covens"))}
	if s := strings.TrimSpace(r.PostForm.Get("ttl")); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return "", domain.Errorf(domain.CodeInvalid, "ttl %q is not a duration such as 24h or 30m", s)
		}
		req.TTL = apitypes.Duration(d)
	}
	if s := strings.TrimSpace(r.PostForm.Get("max_uses")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return "", domain.Errorf(domain.CodeInvalid, "max uses %q is not a whole number", s)
		}
		req.MaxUses = n
	}
	var jt apitypes.CreatedJoinToken
	if err := u.callAPI(r.Context(), r, http.MethodPost, "/v1/join-tokens", req, &jt); err != nil {
		return "", err
	}
	p, _ := auth.FromContext(r.Context())
	jv := joinTokenView{Act: u.actionsFor(r), Created: &jt, Install: u.installLine(r, jt.Token)}
	u.render(w, r, &p, http.StatusCreated, view{Template: "jointoken", Title: "Join token created", Nav: "souls", Data: jv})
	return "", nil
}

// installLine is the command that installs a soul with a join token on a
// host (the keeper's install.sh, pinned to its certificate when known), as
// root: the token in sh's environment, never on a command line (every local
// user reads those in the process list), and a failed download failing the
// line.
func (u *UI) installLine(r *http.Request, token string) string {
	pin := ""
	if u.cfg.TLSPin != "" {
		pin = "--pinnedpubkey '" + u.cfg.TLSPin + "' "
	}
	return "{ curl -fsSL -k " + pin + "https://" + r.Host + "/install.sh || echo exit 1; } | SOUL_JOIN_TOKEN='" + token + "' sh"
}
