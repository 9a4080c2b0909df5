package install

import (
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"text/template"

	"github.com/soulstack/soulstack/internal/version"
	"github.com/soulstack/soulstack/packaging"
)

//go:embed install.sh.tmpl
var scriptText string

var scriptTmpl = template.Must(template.New("install.sh").Funcs(template.FuncMap{"sq": shellQuote}).Parse(scriptText))

// HeaderSHA256 carries the hex SHA-256 of a served soul binary.
const HeaderSHA256 = "X-Soulstack-Sha256"

// Server serves GET /install.sh and GET /v1/soul/binary: what a new host
// needs to become a soul of this Keeper. Both are public (a host has no
// credentials yet); neither reveals fleet data.
type Server struct {
	// Binaries finds the soul binaries served.
	Binaries *SoulBinaries
	// TLSPin is curl's --pinnedpubkey of the Keeper's certificate, baked
	// into the script for its download ("" = none).
	TLSPin string
	// Fingerprint is the SHA-256 fingerprint of the Keeper's CA, which a
	// soul installed without a join token pins: the script came over the
	// connection its user pinned ("" = such installs are refused).
	Fingerprint string
	// KeeperURL is the URL put into the script; "" means https:// and the
	// Host the script was asked from.
	KeeperURL string
	// Logger receives refusals; nil discards them.
	Logger *slog.Logger
}

func (s *Server) log() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// ServeScript answers GET /install.sh: the POSIX sh installer with this
// Keeper's URL, pin and the SHA-256 of each soul binary it has.
func (s *Server) ServeScript(w http.ResponseWriter, r *http.Request) {
	b, err := s.Script(s.keeperURL(r))
	if err != nil {
		s.log().Error("rendering install.sh", "err", err)
		http.Error(w, "install.sh: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/x-shellscript; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

func (s *Server) keeperURL(r *http.Request) string {
	if s.KeeperURL != "" {
		return strings.TrimRight(s.KeeperURL, "/")
	}
	return "https://" + r.Host
}

// Script renders install.sh for a Keeper at keeperURL. An architecture
// without a soul binary gets an empty SHA-256, which the script turns into
// a clear refusal on such a host.
func (s *Server) Script(keeperURL string) ([]byte, error) {
	unit, err := packaging.Files.ReadFile("soul.service")
	if err != nil {
		return nil, err
	}
	initScript, err := packaging.Files.ReadFile("soul.init")
	if err != nil {
		return nil, err
	}
	sums := map[string]string{"amd64": "", "arm64": ""}
	for arch := range sums {
		if b, err := s.Binaries.Find("linux", arch); err == nil {
			sums[arch] = b.SHA256
		} else if !errors.Is(err, ErrNoBinary) {
			return nil, err
		}
	}
	var sb strings.Builder
	err = scriptTmpl.Execute(&sb, map[string]any{
		"KeeperURL": keeperURL, "TLSPin": s.TLSPin, "Fingerprint": s.Fingerprint, "Version": version.Version(), "SHA256": sums,
		"Unit": withNewline(string(unit)), "Init": withNewline(string(initScript)),
	})
	if err != nil {
		return nil, fmt.Errorf("rendering install.sh: %w", err)
	}
	return []byte(sb.String()), nil
}

// ServeBinary answers GET /v1/soul/binary?os=linux&arch=amd64|arm64 with
// the soul binary and its SHA-256 in HeaderSHA256; 404 with the reason
// when the Keeper has none for that platform.
func (s *Server) ServeBinary(w http.ResponseWriter, r *http.Request) {
	goos, arch := r.URL.Query().Get("os"), r.URL.Query().Get("arch")
	if goos == "" {
		goos = "linux"
	}
	if arch == "" {
		http.Error(w, "soul binary: give ?os=linux&arch=amd64|arm64", http.StatusBadRequest)
		return
	}
	b, err := s.Binaries.Find(goos, arch)
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, ErrNoBinary) {
			code = http.StatusNotFound
		}
		s.log().Warn("soul binary not served", "os", goos, "arch", arch, "err", err)
		http.Error(w, err.Error(), code)
		return
	}
	f, err := os.Open(b.Path)
	if err != nil {
		http.Error(w, "soul binary: "+err.Error(), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	w.Header().Set(HeaderSHA256, b.SHA256)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="soul-`+goos+"-"+arch+`"`)
	http.ServeContent(w, r, "", b.ModTime, f)
}

func withNewline(s string) string {
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

// shellQuote single-quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
