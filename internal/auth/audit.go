package auth

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/soulstack/soulstack/internal/store"
)

// Masked replaces every secret value in logs, audit entries and responses.
const Masked = "****"

// sensitive are the key fragments whose values are always masked
// (case-insensitive substring match: "join_token", "db_password", …).
var sensitive = []string{"secret", "password", "passwd", "token", "private_key", "credential"}

// IsSensitiveKey reports whether values under key must be masked.
func IsSensitiveKey(key string) bool {
	k := strings.ToLower(key)
	for _, s := range sensitive {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// Mask returns a deep copy of v in which the value of every map key that
// looks sensitive (IsSensitiveKey) is replaced by Masked, and the password
// of every URL-looking string ("https://user:pw@host/…") is masked too.
func Mask(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if IsSensitiveKey(k) {
				out[k] = Masked
				continue
			}
			out[k] = Mask(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Mask(e)
		}
		return out
	case string:
		return RedactURL(x)
	default:
		return v
	}
}

// MaskMap is Mask for the common case of a JSON object (nil stays nil).
func MaskMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return Mask(m).(map[string]any)
}

// RedactURL masks the password of a URL with user info; any other string is
// returned unchanged.
func RedactURL(s string) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, has := u.User.Password(); !has {
		return s
	}
	u.User = url.UserPassword(u.User.Username(), "MASKED")
	return strings.Replace(u.String(), ":MASKED@", ":"+Masked+"@", 1)
}

// Record appends an audit entry for a call p made: action is
// "METHOD /pattern" (or a system event name), target the object acted on,
// summary the request summary, masked here so no caller can forget.
func (a *Authority) Record(ctx context.Context, p Principal, action, target string, summary map[string]any) error {
	e := store.AuditEntry{
		Time:     a.now().UTC(),
		ArchonID: p.ArchonID,
		Action:   action,
		Target:   target,
		Summary:  MaskMap(summary),
	}
	// The entry names the token the call was made with (its id, never the
	// token), set after masking: an id is not a secret.
	if p.TokenID != "" {
		if e.Summary == nil {
			e.Summary = map[string]any{}
		}
		e.Summary["token_id"] = p.TokenID
	}
	if err := a.st.AppendAudit(ctx, e); err != nil {
		return fmt.Errorf("appending audit entry %q: %w", action, err)
	}
	return nil
}

// Audit lists audit entries, newest first.
func (a *Authority) Audit(ctx context.Context, f store.AuditFilter) ([]store.AuditEntry, error) {
	es, err := a.st.ListAudit(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("listing audit: %w", err)
	}
	return es, nil
}
