package apitypes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// ErrorBody is the JSON body of every error response:
// {"error": {"code", "message", "details"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of ErrorBody. Code is a domain.Code value.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`
}

// Problem is one entry of the details of a 400 caused by an invalid service
// repository: where, which key and what is wrong. Text is the
// "file:line:col: message" rendering.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
	Key     string `json:"key,omitempty"`
	Message string `json:"message"`
	Text    string `json:"text"`
}

// Duration is a lifetime on the wire: a Go duration string ("90m", "24h")
// with an extra "d" unit for days ("30d"), or a number of seconds.
type Duration time.Duration

// ParseDuration parses the string form of Duration.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseFloat(n, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q: use 90m, 24h or 30d", s)
		}
		return time.Duration(days * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: use 90m, 24h or 30d", s)
	}
	return d, nil
}

// MarshalJSON renders d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON accepts a duration string or a number of seconds. An
// invalid one is a *json.UnmarshalTypeError, which encoding/json fills in
// with the field it was found in.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := ParseDuration(s)
		if err != nil {
			return &json.UnmarshalTypeError{Value: "string " + strconv.Quote(s), Type: reflect.TypeFor[Duration]()}
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[Duration]()}
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// CreateArchonRequest is the body of POST /v1/archons.
type CreateArchonRequest struct {
	Name string `json:"name"`
	Role string `json:"role"`
	// TTL of the archon's first token (default 30 days).
	TTL Duration `json:"ttl,omitempty"`
}

// CreatedArchon answers POST /v1/archons: the archon and its first token.
type CreatedArchon struct {
	Archon Archon      `json:"archon"`
	Token  IssuedToken `json:"token"`
}

// CreateTokenRequest is the body of POST /v1/tokens. ArchonID defaults to
// the caller; naming another archon needs the admin role.
type CreateTokenRequest struct {
	ArchonID    string   `json:"archon_id,omitempty"`
	TTL         Duration `json:"ttl,omitempty"`
	Description string   `json:"description,omitempty"`
}

// IssuedToken answers POST /v1/tokens. Token is shown once.
type IssuedToken struct {
	ID        string    `json:"id"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Whoami answers GET /v1/whoami: the caller as the Keeper sees it.
type Whoami struct {
	ArchonID  string    `json:"archon_id"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	TokenID   string    `json:"token_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// AuditQuery narrows GET /v1/audit.
type AuditQuery struct {
	ArchonID string
	Action   string
	Limit    int
}

// SoulQuery narrows GET /v1/souls: status, and covens the souls must all
// carry.
type SoulQuery struct {
	Status string
	Covens []string
}

// CovensRequest is the body of PUT /v1/souls/{sid}/covens.
type CovensRequest struct {
	Covens []string `json:"covens"`
}

// AcceptSoulRequest is the body of POST /v1/souls/{sid}/accept. Key, when
// given, is the fingerprint of the key the Archon expects the soul to hold
// (the soul logs it while pending): the Keeper refuses to accept a soul
// presenting another.
type AcceptSoulRequest struct {
	Covens []string `json:"covens"`
	Key    string   `json:"key,omitempty"`
}

// CreateJoinTokenRequest is the body of POST /v1/join-tokens.
type CreateJoinTokenRequest struct {
	Covens  []string `json:"covens"`
	TTL     Duration `json:"ttl,omitempty"`      // default 24h
	MaxUses int      `json:"max_uses,omitempty"` // souls that may join with it; 0 = no limit
}

// CreatedJoinToken answers POST /v1/join-tokens. Token (secret and the
// Keeper's certificate fingerprint) is shown once.
type CreatedJoinToken struct {
	ID        string    `json:"id"`
	Token     string    `json:"token"`
	Covens    []string  `json:"covens"`
	ExpiresAt time.Time `json:"expires_at"`
	MaxUses   int       `json:"max_uses,omitempty"`
}

// RegisterServiceRequest is the body of POST /v1/services.
type RegisterServiceRequest struct {
	Name string `json:"name"`
	Git  string `json:"git"`
	Ref  string `json:"ref"`
}

// UpdateServiceRequest is the body of PATCH /v1/services/{name}: a new ref
// (required) and optionally a new git URL.
type UpdateServiceRequest struct {
	Ref string `json:"ref"`
	Git string `json:"git,omitempty"`
}

// Health answers /healthz and /readyz.
type Health struct {
	Status string `json:"status"`
}

// jsonKind names the JSON value b for an UnmarshalTypeError, as
// encoding/json does ("array", "bool", …).
func jsonKind(b []byte) string {
	switch b = bytes.TrimSpace(b); {
	case len(b) == 0:
		return "value"
	case b[0] == '[':
		return "array"
	case b[0] == '{':
		return "object"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	case b[0] == 'n':
		return "null"
	}
	return "value " + string(b)
}

// RekeySoulRequest is the body of POST /v1/souls/{sid}/rekey: the soul's
// new Ed25519 public key, as PEM ("PUBLIC KEY") or the base64 of its 32
// bytes.
type RekeySoulRequest struct {
	Key string `json:"key"`
}

// DeletedSoul is the answer of DELETE /v1/souls/{sid}: the incarnations
// the soul was removed from.
type DeletedSoul struct {
	SID          string   `json:"sid"`
	Deleted      bool     `json:"deleted"`
	Incarnations []string `json:"incarnations"`
}
