// Package notify sends notifications out of the Keeper (SPEC §17):
// webhooks (JSON, HMAC-SHA256 signed with the endpoint's sealed secret,
// in a generic or a Slack-compatible shape) and email over SMTP with
// STARTTLS. Every notification is queued in the store first and retried
// with exponential backoff; one that runs out of attempts is dead (the
// dead-letter list). Secret values are masked in every payload.
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/smtp"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/rules"
	"github.com/soulstack/soulstack/internal/store"
)

// Endpoint kinds.
const (
	KindWebhook = "webhook"
	KindSlack   = "slack"
	KindEmail   = "email"
)

// Kinds lists the endpoint kinds.
var Kinds = []string{KindEmail, KindSlack, KindWebhook}

// Headers of a webhook request.
const (
	HeaderSignature = "X-Soulstack-Signature" // sha256=<hex HMAC of "<timestamp>.<body>">
	HeaderTimestamp = "X-Soulstack-Timestamp" // Unix seconds
	HeaderDelivery  = "X-Soulstack-Delivery"  // the delivery id
)

// DefaultMaxAttempts is how often a delivery is tried before it is dead.
const DefaultMaxAttempts = 6

// Sealer seals and opens endpoint secrets and lists the secret values to
// mask (internal/secrets).
type Sealer interface {
	SealEndpoint(name, value string) ([]byte, error)
	OpenEndpoint(name string, sealed []byte) (string, error)
	Values(ctx context.Context) ([]string, error)
}

// Config configures a Notifier.
type Config struct {
	Store  store.Store
	Sealer Sealer
	Client *http.Client
	Logger *slog.Logger
	Now    func() time.Time
	// Backoff is the wait after the first failed attempt; it doubles
	// per attempt up to an hour. 0 means 10s.
	Backoff time.Duration
	// Poll is how often due deliveries are looked for; 0 means 1s.
	Poll time.Duration
}

// Notifier queues and delivers notifications.
type Notifier struct {
	cfg  Config
	log  *slog.Logger
	kick chan struct{}
	mu   sync.Mutex
}

// New builds a Notifier.
func New(cfg Config) *Notifier {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 10 * time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	return &Notifier{cfg: cfg, log: cfg.Logger, kick: make(chan struct{}, 1)}
}

// Validate checks an endpoint before it is stored.
func Validate(e store.NotifyEndpoint) error {
	if e.Name == "" || strings.ContainsAny(e.Name, "/ ") {
		return domain.Errorf(domain.CodeInvalid, "endpoint name %q must be non-empty without / or spaces", e.Name)
	}
	if !slices.Contains(Kinds, e.Kind) {
		return domain.Errorf(domain.CodeInvalid, "endpoint kind %q is not one of %s", e.Kind, strings.Join(Kinds, ", "))
	}
	if e.Kind == KindEmail {
		if s, _ := e.Config["smtp"].(string); s == "" {
			return domain.Errorf(domain.CodeInvalid, "an email endpoint needs config.smtp (host:port of the SMTP server)")
		}
		if len(toList(e.Config["to"])) == 0 {
			return domain.Errorf(domain.CodeInvalid, "an email endpoint needs config.to (a list of addresses)")
		}
		if s, _ := e.Config["from"].(string); s == "" {
			return domain.Errorf(domain.CodeInvalid, "an email endpoint needs config.from")
		}
		return nil
	}
	u, err := url.Parse(e.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return domain.Errorf(domain.CodeInvalid, "endpoint url %q must be an http:// or https:// URL", e.URL)
	}
	return nil
}

func toList(v any) []string {
	var out []string
	switch x := v.(type) {
	case []any:
		for _, it := range x {
			if s, ok := it.(string); ok && s != "" {
				out = append(out, s)
			}
		}
	case []string:
		out = x
	case string:
		if x != "" {
			out = []string{x}
		}
	}
	return out
}

// Notify queues n for each endpoint (implements the rules' notify action).
func (nf *Notifier) Notify(ctx context.Context, endpoints []string, n rules.Notification, firingID int64) error {
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	for _, name := range endpoints {
		if _, err := nf.cfg.Store.GetEndpoint(ctx, name); err != nil {
			return fmt.Errorf("notification endpoint %s: %w", name, err)
		}
		if _, err := nf.cfg.Store.AddDelivery(ctx, store.Delivery{Endpoint: name, FiringID: firingID, Payload: b, NextAt: nf.cfg.Now()}); err != nil {
			return err
		}
	}
	select {
	case nf.kick <- struct{}{}:
	default:
	}
	return nil
}

// Run delivers due notifications until ctx ends.
func (nf *Notifier) Run(ctx context.Context) {
	t := time.NewTicker(nf.cfg.Poll)
	defer t.Stop()
	for {
		nf.DeliverDue(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-nf.kick:
		}
	}
}

// DeliverDue tries every due delivery once.
func (nf *Notifier) DeliverDue(ctx context.Context) {
	nf.mu.Lock()
	defer nf.mu.Unlock()
	due, err := nf.cfg.Store.DueDeliveries(ctx, nf.cfg.Now(), 100)
	if err != nil {
		nf.log.Warn("listing due notifications", "err", err)
		return
	}
	for _, d := range due {
		nf.attempt(ctx, d)
	}
}

func (nf *Notifier) attempt(ctx context.Context, d store.Delivery) {
	var n rules.Notification
	err := json.Unmarshal(d.Payload, &n)
	var e store.NotifyEndpoint
	if err == nil {
		e, err = nf.cfg.Store.GetEndpoint(ctx, d.Endpoint)
	}
	if err == nil {
		err = nf.send(ctx, e, n, d.ID)
	}
	d.Attempts++
	max := DefaultMaxAttempts
	if v, ok := e.Config["max_attempts"].(float64); ok && v >= 1 {
		max = int(v)
	}
	switch {
	case err == nil:
		d.Status, d.LastError = store.DeliveryDelivered, ""
	case d.Attempts >= max:
		d.Status, d.LastError = store.DeliveryDead, err.Error()
		nf.log.Warn("a notification ran out of attempts: dead letter", "endpoint", d.Endpoint, "delivery", d.ID, "err", err)
	default:
		d.LastError = err.Error()
		wait := nf.cfg.Backoff << (d.Attempts - 1)
		if wait > time.Hour || wait <= 0 {
			wait = time.Hour
		}
		d.NextAt = nf.cfg.Now().Add(wait)
	}
	if err := nf.cfg.Store.UpdateDelivery(context.WithoutCancel(ctx), d); err != nil {
		nf.log.Error("recording a notification attempt", "delivery", d.ID, "err", err)
	}
}

// Test sends a test notification to endpoint name at once (one attempt,
// not queued): soulctl notify test NAME.
func (nf *Notifier) Test(ctx context.Context, name string) error {
	e, err := nf.cfg.Store.GetEndpoint(ctx, name)
	if err != nil {
		return err
	}
	n := rules.Notification{Rule: "test", Subject: "Soul Stack test notification", Message: "This is a test notification from soulctl notify test " + name + ".",
		Event: map[string]any{"kind": "test"}, At: nf.cfg.Now().UTC()}
	if err := nf.send(ctx, e, n, 0); err != nil {
		return domain.Errorf(domain.CodeUnavailable, "endpoint %s: %v", name, err)
	}
	return nil
}

// mask replaces every secret value in b.
func (nf *Notifier) mask(ctx context.Context, b []byte) ([]byte, error) {
	if nf.cfg.Sealer == nil {
		return b, nil
	}
	vals, err := nf.cfg.Sealer.Values(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the secret values to mask: %w", err)
	}
	for _, v := range vals {
		if len(v) >= 4 {
			b = bytes.ReplaceAll(b, []byte(v), []byte("****"))
		}
	}
	return b, nil
}

// Payload renders n in the endpoint kind's shape (before masking).
func Payload(kind string, n rules.Notification, deliveryID int64) ([]byte, error) {
	if kind == KindSlack {
		text := n.Subject
		if n.Message != "" {
			text += "\n" + n.Message
		}
		return json.Marshal(map[string]any{"text": text})
	}
	return json.Marshal(map[string]any{"delivery": deliveryID, "rule": n.Rule, "subject": n.Subject, "message": n.Message, "event": n.Event, "at": n.At})
}

func (nf *Notifier) send(ctx context.Context, e store.NotifyEndpoint, n rules.Notification, id int64) error {
	secret := ""
	if len(e.Sealed) > 0 && nf.cfg.Sealer != nil {
		s, err := nf.cfg.Sealer.OpenEndpoint(e.Name, e.Sealed)
		if err != nil {
			return err
		}
		secret = s
	}
	if e.Kind == KindEmail {
		return nf.sendMail(ctx, e, n, secret)
	}
	body, err := Payload(e.Kind, n, id)
	if err != nil {
		return err
	}
	if body, err = nf.mask(ctx, body); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	ts := strconv.FormatInt(nf.cfg.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "soulstack-keeper")
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderDelivery, strconv.FormatInt(id, 10))
	if secret != "" {
		req.Header.Set(HeaderSignature, Sign(secret, ts, body))
	}
	resp, err := nf.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return nil
}

// Sign is the webhook signature: sha256= and the hex HMAC-SHA256 of
// "<timestamp>.<body>" under the endpoint's secret.
func Sign(secret, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp + "."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a signature as a receiver would.
func Verify(secret, timestamp string, body []byte, signature string) bool {
	return hmac.Equal([]byte(Sign(secret, timestamp, body)), []byte(signature))
}

// sendMail sends n by SMTP: STARTTLS whenever the server offers it, and
// required unless config.starttls is false; the server's certificate is
// verified against the system roots, or against config.ca_file (a PEM
// file on the Keeper) when set; PLAIN auth with
// config.username and the sealed password when a username is set.
func (nf *Notifier) sendMail(ctx context.Context, e store.NotifyEndpoint, n rules.Notification, password string) error {
	addr, _ := e.Config["smtp"].(string)
	from, _ := e.Config["from"].(string)
	to := toList(e.Config["to"])
	user, _ := e.Config["username"].(string)
	requireTLS := true
	if v, ok := e.Config["starttls"].(bool); ok {
		requireTLS = v
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("config.smtp %q: %w", addr, err)
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return err
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); ok {
		tc := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
		if f, _ := e.Config["ca_file"].(string); f != "" {
			pem, err := os.ReadFile(f)
			if err != nil {
				return fmt.Errorf("config.ca_file: %w", err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return fmt.Errorf("config.ca_file %s holds no PEM certificate", f)
			}
		}
		if v, _ := e.Config["insecure_skip_verify"].(bool); v {
			tc.InsecureSkipVerify = true
		}
		if err := c.StartTLS(tc); err != nil {
			return fmt.Errorf("STARTTLS: %w", err)
		}
	} else if requireTLS {
		return fmt.Errorf("the SMTP server %s does not offer STARTTLS (set config.starttls: false to send in clear)", addr)
	}
	if user != "" {
		if err := c.Auth(smtp.PlainAuth("", user, password, host)); err != nil {
			return fmt.Errorf("SMTP auth: %w", err)
		}
	}
	if err := c.Mail(from); err != nil {
		return err
	}
	for _, rcpt := range to {
		if err := c.Rcpt(rcpt); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	evb, _ := json.MarshalIndent(n.Event, "", "  ")
	body := fmt.Sprintf("From: %s\r\nTo: %s\r\nSubject: %s\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n%s\r\n\r\nEvent:\r\n%s\r\n",
		from, strings.Join(to, ", "), strings.NewReplacer("\r", " ", "\n", " ").Replace(n.Subject), n.Message, evb)
	masked, err := nf.mask(ctx, []byte(body))
	if err != nil {
		w.Close()
		return err
	}
	if _, err := w.Write(masked); err != nil {
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}
