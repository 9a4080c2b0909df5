package cli

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/tlsutil"
)

// presentError makes an error of a command ready for cmdutil.Code: API
// errors get their details rendered (validation problems one per line as
// file:line:col: message) and their exit code (400, 413 and 422 → 2,
// anything else → 1); an unreachable Keeper says so plainly.
func presentError(err error) error {
	if err == nil {
		return nil
	}
	var ee *cmdutil.ExitError
	if errors.As(err, &ee) && !isAPIError(ee.Err) {
		return err
	}
	var ae *apiclient.APIError
	if errors.As(err, &ae) {
		code := cmdutil.ExitFailed
		if ae.Status == http.StatusBadRequest || ae.Status == http.StatusRequestEntityTooLarge || ae.Status == http.StatusUnprocessableEntity {
			code = cmdutil.ExitUsage
		}
		if ee != nil {
			code = ee.Code
		}
		return &cmdutil.ExitError{Code: code, Err: errors.New(describeAPIError(ae))}
	}
	if flagGroupError(err) {
		return cmdutil.Usage(err)
	}
	var de *domain.Error
	if errors.As(err, &de) && de.Code == domain.CodeUnavailable && untrusted(de.Err) {
		// Reached, but its certificate is not the one trusted: "is it
		// running?" would send the user looking in the wrong place.
		host := strings.TrimSuffix(de.Message, " unreachable")
		return cmdutil.Failed(fmt.Errorf("%s answered, but its TLS certificate is not trusted (%v); pin the keeper CA with --fingerprint (keeper init prints it) or trust it with --ca-file, or use soulctl login --fingerprint", host, de.Err))
	}
	if errors.As(err, &de) && de.Code == domain.CodeUnavailable {
		msg := de.Message
		if de.Err != nil {
			msg += " (" + de.Err.Error() + ")"
		}
		return cmdutil.Failed(errors.New(msg + "; is it running? check --keeper or soulctl login"))
	}
	return err
}

// untrusted reports whether err is a failed verification of the
// keeper's TLS certificate (unknown CA, wrong host name, pinned
// fingerprint mismatch).
func untrusted(err error) bool {
	var cve *tls.CertificateVerificationError
	var uae x509.UnknownAuthorityError
	var he x509.HostnameError
	var cie x509.CertificateInvalidError
	return errors.As(err, &cve) || errors.As(err, &uae) || errors.As(err, &he) || errors.As(err, &cie) ||
		errors.Is(err, tlsutil.ErrFingerprintMismatch)
}

// flagGroupError reports cobra's flag-group violations (exclusive or
// required-together flags), which are usage errors.
func flagGroupError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"if any flags in the group", "at least one of the flags in the group", "none of the others can be"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

func isAPIError(err error) bool {
	var ae *apiclient.APIError
	return errors.As(err, &ae)
}

// describeAPIError renders an API error for people: the message, the status
// in brackets, and the details below it.
func describeAPIError(ae *apiclient.APIError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s [%d %s]", ae.Message, ae.Status, ae.Code)
	if ps := ae.Problems(); len(ps) > 0 {
		for _, p := range ps {
			b.WriteString("\n" + problemLine(p))
		}
		return b.String()
	}
	if d := detailsText(ae.Details); d != "" && !strings.Contains(ae.Message, d) {
		b.WriteString("\n" + d)
	}
	return b.String()
}

// problemLine is one validation problem as file:line:col: message.
func problemLine(p apitypes.Problem) string {
	if p.Text != "" {
		return p.Text
	}
	pos := p.File
	if p.Line > 0 {
		pos += fmt.Sprintf(":%d", p.Line)
		if p.Col > 0 {
			pos += fmt.Sprintf(":%d", p.Col)
		}
	}
	if p.Key != "" {
		return fmt.Sprintf("%s: %s: %s", pos, p.Key, p.Message)
	}
	return fmt.Sprintf("%s: %s", pos, p.Message)
}

// detailsText renders other details: a list of strings one per line, an
// object as key: value lines, anything else as JSON.
func detailsText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	switch x := v.(type) {
	case string:
		return x
	case []any:
		lines := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok {
				lines = append(lines, s)
			} else {
				lines = append(lines, compactJSON(e))
			}
		}
		return strings.Join(lines, "\n")
	case map[string]any:
		lines := make([]string, 0, len(x))
		for _, k := range sortedKeys(x) {
			val := x[k]
			if s, ok := val.(string); ok {
				lines = append(lines, k+": "+s)
			} else {
				lines = append(lines, k+": "+compactJSON(val))
			}
		}
		return strings.Join(lines, "\n")
	default:
		return string(raw)
	}
}
