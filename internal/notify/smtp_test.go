package notify

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/soulstack/soulstack/internal/rules"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/tlsutil"
)

// mail is one message a test SMTP server accepted.
type mail struct {
	from    string
	to      []string
	data    string
	tls     bool
	authed  string // the user who authenticated, "" when none
	authTLS bool   // authentication happened inside TLS
}

// smtpServer is a real SMTP server (emersion/go-smtp) on loopback that
// keeps what it accepted.
type smtpServer struct {
	addr string
	mu   sync.Mutex
	got  []mail
}

type smtpSession struct {
	srv  *smtpServer
	conn *smtp.Conn
	cur  mail
}

func (s *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *smtpSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != "keeper" || pass != "smtp-pass-1" {
			return errors.New("bad credentials")
		}
		_, s.cur.authTLS = s.conn.TLSConnectionState()
		s.cur.authed = user
		return nil
	}), nil
}

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error { s.cur.from = from; return nil }
func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.to = append(s.cur.to, to)
	return nil
}
func (s *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.data = string(b)
	_, s.cur.tls = s.conn.TLSConnectionState()
	s.srv.mu.Lock()
	s.srv.got = append(s.srv.got, s.cur)
	s.srv.mu.Unlock()
	return nil
}
func (s *smtpSession) Reset()        { s.cur = mail{authed: s.cur.authed, authTLS: s.cur.authTLS} }
func (s *smtpSession) Logout() error { return nil }

// startSMTP runs a server on 127.0.0.1; with m, it offers STARTTLS with
// m's server certificate (and refuses AUTH before it).
func startSMTP(t *testing.T, m *tlsutil.Material) *smtpServer {
	t.Helper()
	ss := &smtpServer{}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &smtpSession{srv: ss, conn: c}, nil
	}))
	srv.Domain = "mx.test"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	if m != nil {
		tc, err := m.ServerTLSConfig()
		if err != nil {
			t.Fatal(err)
		}
		tc.NextProtos = nil
		srv.TLSConfig = tc
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ss.addr = l.Addr().String()
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return ss
}

func (s *smtpServer) mails() []mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]mail(nil), s.got...)
}

// TestEmailOverSTARTTLS sends a rule's notification through the queue to
// a real SMTP server offering STARTTLS with a certificate of a test CA:
// the message arrives inside TLS, authenticated inside TLS with the
// endpoint's sealed password, to every recipient, and carries neither a
// secret-store value (masked) nor the SMTP password. Without the CA the
// certificate is refused, and nothing is sent.
func TestEmailOverSTARTTLS(t *testing.T) {
	ctx := context.Background()
	st, sec := setup(t)
	m, err := tlsutil.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, m.CACertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startSMTP(t, m)
	if err := sec.Set(ctx, "db_password", "hunter2-secret", "a1"); err != nil {
		t.Fatal(err)
	}
	sealed, err := sec.SealEndpoint("oncall", "smtp-pass-1")
	if err != nil {
		t.Fatal(err)
	}
	ep := store.NotifyEndpoint{Name: "oncall", Kind: KindEmail, Sealed: sealed, Owner: "a1", Config: map[string]any{
		"smtp": srv.addr, "from": "keeper@soulstack.test", "to": []any{"ops@soulstack.test", "lead@soulstack.test"},
		"username": "keeper", "ca_file": caFile}}
	if err := Validate(ep); err != nil {
		t.Fatal(err)
	}
	if err := st.PutEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	nf := New(Config{Store: st, Sealer: sec})
	n := rules.Notification{Rule: "heal/page", Subject: "heal: restarting the daemon did not help",
		Message: "run r-1 ended failed: connect db with hunter2-secret refused", Event: map[string]any{"sid": "h1", "status": "failed"}, At: time.Now()}
	if err := nf.Notify(ctx, []string{"oncall"}, n, 3); err != nil {
		t.Fatal(err)
	}
	nf.DeliverDue(ctx)
	got := srv.mails()
	if len(got) != 1 {
		ds, _ := st.ListDeliveries(ctx, "", 0)
		t.Fatalf("the server got %d mails; deliveries %+v", len(got), ds)
	}
	g := got[0]
	if !g.tls || !g.authTLS || g.authed != "keeper" {
		t.Errorf("mail sent with TLS %v, authenticated as %q inside TLS %v", g.tls, g.authed, g.authTLS)
	}
	if g.from != "keeper@soulstack.test" || strings.Join(g.to, ",") != "ops@soulstack.test,lead@soulstack.test" {
		t.Errorf("envelope from %q to %v", g.from, g.to)
	}
	if !strings.Contains(g.data, "Subject: heal: restarting the daemon did not help\r\n") ||
		!strings.Contains(g.data, "connect db with **** refused") || !strings.Contains(g.data, `"sid": "h1"`) {
		t.Errorf("mail:\n%s", g.data)
	}
	for _, secret := range []string{"hunter2-secret", "smtp-pass-1"} {
		if strings.Contains(g.data, secret) {
			t.Errorf("the mail carries the secret %q:\n%s", secret, g.data)
		}
	}
	if ds, _ := st.ListDeliveries(ctx, store.DeliveryDelivered, 0); len(ds) != 1 || ds[0].FiringID != 3 {
		t.Errorf("deliveries: %+v", ds)
	}

	// The same server's certificate without its CA: refused, not sent.
	ep.Name, ep.Sealed, ep.Config = "untrusted", nil, map[string]any{"smtp": srv.addr, "from": "keeper@soulstack.test", "to": "ops@soulstack.test"}
	if err := st.PutEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	if err := nf.Test(ctx, "untrusted"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a certificate of an unknown CA: %v", err)
	}
	if n := len(srv.mails()); n != 1 {
		t.Errorf("the server got %d mails, want still 1", n)
	}
}

// TestEmailRefusesServerWithoutSTARTTLS: a server that does not offer
// STARTTLS gets nothing (the delivery fails and is retried, the error
// says how to allow clear text), unless the endpoint says starttls:
// false.
func TestEmailRefusesServerWithoutSTARTTLS(t *testing.T) {
	ctx := context.Background()
	st, sec := setup(t)
	srv := startSMTP(t, nil)
	cfg := map[string]any{"smtp": srv.addr, "from": "keeper@soulstack.test", "to": []any{"ops@soulstack.test"}}
	if err := st.PutEndpoint(ctx, store.NotifyEndpoint{Name: "plain", Kind: KindEmail, Owner: "a1", Config: cfg}); err != nil {
		t.Fatal(err)
	}
	nf := New(Config{Store: st, Sealer: sec})
	if err := nf.Notify(ctx, []string{"plain"}, rules.Notification{Rule: "r", Subject: "s"}, 0); err != nil {
		t.Fatal(err)
	}
	nf.DeliverDue(ctx)
	if n := len(srv.mails()); n != 0 {
		t.Fatalf("a server without STARTTLS got %d mails", n)
	}
	ds, _ := st.ListDeliveries(ctx, store.DeliveryPending, 0)
	if len(ds) != 1 || !strings.Contains(ds[0].LastError, "does not offer STARTTLS") || !strings.Contains(ds[0].LastError, "starttls: false") {
		t.Fatalf("deliveries: %+v", ds)
	}

	clear := map[string]any{"smtp": srv.addr, "from": "keeper@soulstack.test", "to": []any{"ops@soulstack.test"}, "starttls": false}
	if err := st.PutEndpoint(ctx, store.NotifyEndpoint{Name: "clear", Kind: KindEmail, Owner: "a1", Config: clear}); err != nil {
		t.Fatal(err)
	}
	if err := nf.Test(ctx, "clear"); err != nil {
		t.Fatal(err)
	}
	got := srv.mails()
	if len(got) != 1 || got[0].tls || !strings.Contains(got[0].data, "Subject: Soul Stack test notification") {
		t.Fatalf("with starttls: false: %+v", got)
	}
}
