package ui

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/soulstack/soulstack/internal/auth"
	"github.com/soulstack/soulstack/internal/domain"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// view is what a page handler returns: the page template to render, the
// page title, the navigation entry to highlight and the page's data.
type view struct {
	Template string
	Title    string
	Nav      string
	Data     any
}

// layoutData is what the layout template sees.
type layoutData struct {
	view
	Principal  *auth.Principal
	ArchonName string
	Flash      string // the notice of an action that just succeeded
	CSRF       string // the session's CSRF token (the sign-out form)
}

// pages holds one parsed template set per page: the layout and partials
// plus the page's own file, which defines "content".
type pages struct {
	byName map[string]*template.Template
}

// sharedTemplates are parsed into every page.
var sharedTemplates = []string{"templates/layout.html", "templates/partials.html", "templates/health_panel.html"}

// parsePages parses every page template with the layout and partials. A
// page file may also define fragments rendered on their own (the live parts
// of the run and task pages).
func parsePages(funcs template.FuncMap) (*pages, error) {
	base, err := template.New("layout").Funcs(funcs).ParseFS(templateFS, sharedTemplates...)
	if err != nil {
		return nil, fmt.Errorf("parsing ui layout: %w", err)
	}
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("listing ui templates: %w", err)
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, f := range files {
		if isShared(f) {
			continue
		}
		t, err := base.Clone()
		if err != nil {
			return nil, fmt.Errorf("cloning ui layout: %w", err)
		}
		if _, err := t.ParseFS(templateFS, f); err != nil {
			return nil, fmt.Errorf("parsing ui template %s: %w", f, err)
		}
		p.byName[strings.TrimSuffix(path.Base(f), ".html")] = t
	}
	return p, nil
}

func isShared(f string) bool {
	for _, s := range sharedTemplates {
		if s == f {
			return true
		}
	}
	return false
}

// execute renders template name of page into a buffer, so a template error
// never leaves a half-written page.
func (p *pages) execute(page, name string, data any) ([]byte, error) {
	t, ok := p.byName[page]
	if !ok {
		return nil, fmt.Errorf("ui: no page template %q", page)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return nil, fmt.Errorf("rendering ui page %s: %w", page, err)
	}
	return buf.Bytes(), nil
}

// render writes a whole page.
func (u *UI) render(w http.ResponseWriter, r *http.Request, p *auth.Principal, status int, v view) {
	ld := layoutData{view: v, Principal: p, Flash: doneMessages[r.URL.Query().Get("done")]}
	if p != nil {
		if c, err := r.Cookie(cookieName); err == nil {
			ld.CSRF = csrfToken(c.Value)
		}
		ld.ArchonName = p.ArchonID
		// The name is a courtesy: a store hiccup must not fail the page.
		if a, err := u.store.GetArchon(r.Context(), p.ArchonID); err == nil && a.Name != "" {
			ld.ArchonName = a.Name
		}
	}
	body, err := u.pages.execute(v.Template, "layout", ld)
	if err != nil {
		u.log.ErrorContext(r.Context(), "ui render failed", "path", r.URL.Path, "err", err)
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(body)
}

// renderFragment writes one named template of a page on its own (the live
// parts the page script swaps in).
func (u *UI) renderFragment(w http.ResponseWriter, page, name string, data any) error {
	body, err := u.pages.execute(page, name, data)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, err = w.Write(body)
	return err
}

// errorView is the data of the error page.
type errorView struct {
	Status  int
	Heading string
	Message string
}

// renderError renders err as a friendly page with the status its domain
// code maps to. Internal errors are logged and not shown.
func (u *UI) renderError(w http.ResponseWriter, r *http.Request, p *auth.Principal, err error) {
	status := httpStatus(err)
	ev := errorView{Status: status}
	switch status {
	case http.StatusNotFound:
		ev.Heading = "Not found"
		ev.Message = "There is nothing here. It may have been deleted, or the link is wrong."
		var de *domain.Error
		if errors.As(err, &de) && de != domain.ErrNotFound && de.Message != "not found" {
			ev.Message = de.Message
		}
	case http.StatusServiceUnavailable:
		ev.Heading = "Keeper store unavailable"
		ev.Message = "The keeper cannot reach its database right now. Try again in a moment."
		u.log.WarnContext(r.Context(), "ui: store unavailable", "path", r.URL.Path, "err", err)
	default:
		ev.Heading = "Something went wrong"
		ev.Message = "The page could not be built. The error has been logged on the keeper."
		u.log.ErrorContext(r.Context(), "ui page failed", "path", r.URL.Path, "err", err)
	}
	u.render(w, r, p, status, view{Template: "error", Title: ev.Heading, Data: ev})
}

// httpStatus maps a domain code to the status of a UI response.
func httpStatus(err error) int {
	if errors.Is(err, domain.ErrNotFound) {
		return http.StatusNotFound
	}
	switch domain.ErrorCode(err) {
	case domain.CodeNotFound:
		return http.StatusNotFound
	case domain.CodeUnauthorized:
		return http.StatusUnauthorized
	case domain.CodeForbidden:
		return http.StatusForbidden
	case domain.CodeInvalid:
		return http.StatusBadRequest
	case domain.CodeConflict:
		return http.StatusConflict
	case domain.CodeUnprocessable:
		return http.StatusUnprocessableEntity
	case domain.CodeUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// static serves the embedded CSS and script. They change only with the
// binary, so a short public cache is safe.
func (u *UI) static() http.Handler {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the embedded directory exists at build time
	}
	files := http.StripPrefix(Prefix+"/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		files.ServeHTTP(w, r)
	})
}

// notFound is the page of an unknown /ui path.
func (u *UI) notFound(r *http.Request) (view, error) {
	return view{}, domain.Errorf(domain.CodeNotFound, "There is no page at %s.", r.URL.Path)
}
