package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

// defaultDownloadMax bounds a download held in memory before it is
// written (max_size changes it).
const defaultDownloadMax = 256 << 20

func init() {
	register("core.file.downloaded", module.Schema{
		Summary: "Download a URL to a file; with sha256, only when the file does not already have that checksum",
		Params: fileParams(map[string]module.Param{
			"url":      str(true, "http or https URL to download"),
			"sha256":   str(false, "expected SHA-256 of the content, hex (required unless force: true): a file that has it is not downloaded again, a download that does not is refused"),
			"force":    {Type: module.TypeBool, Default: false, Description: "without sha256: download on every run and replace the file when the content differs"},
			"timeout":  {Type: module.TypeString, Default: "60s", Description: "bound of the whole download, e.g. 30s, 5m"},
			"max_size": {Type: module.TypeInt, Default: int64(defaultDownloadMax), Description: "largest download accepted, in bytes"},
			"makedirs": {Type: module.TypeBool, Default: false, Description: "create missing parent directories (0755)"},
			"validate": validateParam,
			"backup":   backupParam,
		}),
		Output: withFields(fileOutput, map[string]module.Field{
			"url":        outputField(module.TypeString, "the URL"),
			"downloaded": outputField(module.TypeBool, "the URL was fetched in this run"),
		}),
	}, fileDownloaded)
}

// fileDownloaded is get_url: with a pinned sha256 a file that already has
// it is left alone (its owner and mode still converge) and nothing is
// fetched; otherwise the URL is fetched (bounded in size and time), checked
// against the pin and converged like file.present. Check mode never
// fetches.
func fileDownloaded(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	rawURL, pin, force := a.str("url"), strings.ToLower(a.str("sha256")), a.boolean("force", false)
	timeoutStr := a.str("timeout")
	maxSize, hasMax := a.integer("max_size")
	w, err := parseFileWant(a)
	if err != nil {
		return domain.Result{}, err
	}
	if !hasMax {
		maxSize = defaultDownloadMax
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return domain.Result{}, fmt.Errorf("param \"url\": %q is not an http or https URL", rawURL)
	}
	if pin == "" && !force {
		return domain.Result{}, errors.New("param \"sha256\" is required unless force: true (without it the file is downloaded again on every run)")
	}
	if pin != "" && (len(pin) != 64 || strings.Trim(pin, "0123456789abcdef") != "") {
		return domain.Result{}, fmt.Errorf("param \"sha256\": %q is not 64 hex digits", pin)
	}
	timeout := 60 * time.Second
	if timeoutStr != "" {
		if timeout, err = time.ParseDuration(timeoutStr); err != nil || timeout <= 0 {
			return domain.Result{}, fmt.Errorf("param \"timeout\": %q is not a positive duration like 30s", timeoutStr)
		}
	}
	if maxSize <= 0 {
		return domain.Result{}, fmt.Errorf("param \"max_size\" must be positive")
	}
	if pin != "" {
		have, err := fileSHA256(env, w)
		if err != nil {
			return domain.Result{}, err
		}
		if have == pin {
			// Only owner and mode may still differ.
			res, err := ensureFile(ctx, env, w)
			return withURL(res, rawURL, false), err
		}
	}
	if env.Check {
		msg := "would download " + rawURL + " to " + w.path
		return domain.Result{Changed: true, Msg: msg, Diff: fmt.Sprintf("--- %s\n+++ %s (from %s)\n", w.path, w.path, rawURL),
			Data: map[string]any{"path": w.path, "url": rawURL, "downloaded": false}}, nil
	}
	body, err := download(ctx, env, rawURL, timeout, maxSize)
	if err != nil {
		return domain.Result{}, err
	}
	if pin != "" {
		sum := sha256.Sum256(body)
		if got := hex.EncodeToString(sum[:]); got != pin {
			return domain.Result{}, fmt.Errorf("%s has sha256 %s, not the pinned %s; %s was left as it was", rawURL, got, pin, w.path)
		}
	}
	w.content, w.hasContent = body, true
	res, err := ensureFile(ctx, env, w)
	return withURL(res, rawURL, true), err
}

func withURL(res domain.Result, u string, downloaded bool) domain.Result {
	if res.Data != nil {
		res.Data["url"], res.Data["downloaded"] = u, downloaded
	}
	return res
}

// fileSHA256 is the checksum of the regular file at w.path, "" when there
// is none (or something else is there: ensureFile then says what).
func fileSHA256(env *module.Env, w fileWant) (string, error) {
	t, err := fsOf(env).Open(w.path, safefs.Options{Follow: w.follow})
	if err != nil {
		return "", nil
	}
	defer t.Close()
	fi, ok, err := t.Lstat()
	if err != nil || !ok || !fi.IsRegular() {
		return "", nil
	}
	f, err := t.OpenRead()
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", w.path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// download fetches u, refusing a status other than 200 and a body over max.
func download(ctx context.Context, env *module.Env, u string, timeout time.Duration, max int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", u, err)
	}
	client := env.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("downloading %s: HTTP status %s", u, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", u, err)
	}
	if int64(len(body)) > max {
		return nil, fmt.Errorf("downloading %s: larger than max_size %d bytes; nothing was written", u, max)
	}
	return body, nil
}
