package gateway

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"connectrpc.com/connect"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/jointoken"
	"github.com/soulstack/soulstack/internal/store"
	"github.com/soulstack/soulstack/internal/version"
	pb "github.com/soulstack/soulstack/proto/soulstack/v1"
)

// maxSIDLen is the longest SID accepted (a DNS name).
const maxSIDLen = 253

// errTooManyFailures refuses a hello from a source over its budget.
var errTooManyFailures = errors.New("too many failed hellos from this address; try again later")

// maxVersionLen is the longest version a hello may carry.
const maxVersionLen = 128

// keeperVersion is the version souls are checked against.
func (g *Gateway) keeperVersion() string {
	if g.cfg.Version != "" {
		return g.cfg.Version
	}
	return version.Version()
}

// service implements soulstackv1connect.SoulServiceHandler.
type service struct{ g *Gateway }

// Connect runs one soul's stream over the Connect route.
func (sv *service) Connect(ctx context.Context, stream *connect.BidiStream[pb.SoulMessage, pb.KeeperMessage]) error {
	st := newConnectStream(ctx, stream, sv.g.sendBound())
	defer st.endIO()
	return sv.g.serveStream(ctx, st)
}

// serveStream runs one soul's stream, whatever its transport: handshake,
// onboarding, then the session. The error it returns ends the stream
// with its Connect code and message.
func (g *Gateway) serveStream(ctx context.Context, stream soulStream) error {
	select {
	case <-g.ready:
	default:
		return connect.NewError(connect.CodeUnavailable, errors.New("keeper is starting"))
	}
	g.mu.RLock()
	stopping := g.stopping
	if !stopping {
		g.handlers.Add(1)
	}
	g.mu.RUnlock()
	if stopping {
		return connect.NewError(connect.CodeUnavailable, errStopping)
	}
	defer g.handlers.Done()
	// admit's frame (hello, onboarding) is gone while the session runs:
	// an idle soul's reader keeps a small stack.
	s, covens, log, err := g.admit(ctx, stream)
	if s == nil {
		return err
	}
	return s.serve(ctx, covens, log)
}

// admit runs the handshake and onboarding: an accepted soul's new
// session, its covens and logger, or (session nil) the end of the stream.
func (g *Gateway) admit(ctx context.Context, stream soulStream) (*session, []string, *slog.Logger, error) {
	// Failed hellos cost their source (L1): beyond its budget, a source's
	// hellos are refused before anything is written, unless they prove
	// the key bound to an accepted SID (N1).
	peer := stream.Peer()
	src := sourceKey(peer)
	limited := g.hellos.limited(src, time.Now())
	hello, err := g.handshake(stream, src)
	if err != nil {
		return nil, nil, nil, err
	}
	if limited {
		bound, err := g.provesBoundKey(ctx, hello)
		if err != nil {
			g.log.Error("reading soul of a rate-limited hello", "sid", hello.Sid, "err", err)
			return nil, nil, nil, connect.NewError(connect.CodeUnavailable, errors.New("onboarding: store unavailable"))
		}
		if !bound {
			g.hellos.refused(src, hello.Sid, time.Now())
			g.log.Debug("hello refused: too many failed hellos from this source", "source", src, "sid", hello.Sid)
			return nil, nil, nil, connect.NewError(connect.CodeResourceExhausted, errTooManyFailures)
		}
	}
	log := g.log.With("sid", hello.Sid, "peer", peer, "transport", transportName(stream))
	out, err := g.onboard(ctx, hello, peer)
	if err != nil {
		log.Error("onboarding soul", "err", err)
		return nil, nil, nil, connect.NewError(connect.CodeUnavailable, fmt.Errorf("onboarding: %w", err))
	}
	switch {
	case out.rejected != nil:
		if out.rejected.Reason == pb.Rejected_REASON_REJECTED {
			g.hellos.failed(src, "soul.rejected", hello.Sid, time.Now())
		}
		log.Info("soul refused", "reason", out.rejected.Reason.String(), "msg", out.rejected.Message)
		return nil, nil, nil, sendClose(stream, &pb.KeeperMessage{Msg: &pb.KeeperMessage_Rejected{Rejected: out.rejected}})
	case out.pending != "":
		log.Info("soul pending", "reason", out.pending)
		return nil, nil, nil, sendClose(stream, &pb.KeeperMessage{Msg: &pb.KeeperMessage_Pending{Pending: &pb.Pending{Reason: out.pending}}})
	}
	stream.LiftLimit()
	return newSession(g, hello.Sid, stream), out.covens, log, nil
}

// provesBoundKey reports whether hello, whose key proof verified, comes
// from an accepted soul with the key bound to its SID: such a soul is
// served whatever its source address did.
func (g *Gateway) provesBoundKey(ctx context.Context, hello *pb.Hello) (bool, error) {
	known, err := g.cfg.Store.GetSoul(ctx, hello.Sid)
	if errors.Is(err, domain.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	switch known.Status {
	case store.SoulPending, store.SoulRejected:
		return false, nil
	}
	return bytes.Equal(known.PublicKey, hello.PublicKey), nil
}

// sendClose sends a final message; the stream ends when the handler
// returns.
func sendClose(stream soulStream, m *pb.KeeperMessage) error {
	if err := stream.Send(m); err != nil {
		return fmt.Errorf("sending %T: %w", m.Msg, err)
	}
	return nil
}

// handshake reads hello, challenges the soul and verifies its proof, all
// within HandshakeTimeout. A failed proof is answered with a rejection.
func (g *Gateway) handshake(stream soulStream, src string) (*pb.Hello, error) {
	if err := stream.SetReadDeadline(time.Now().Add(g.cfg.HandshakeTimeout)); err != nil {
		g.rcWarn.Do(func() {
			g.log.Warn("the HTTP server hides read deadlines from the soul stream (a middleware without Unwrap?): silent souls, souls that stop reading and keeper shutdown cannot cut streams", "err", err)
		})
	} else {
		defer func() { _ = stream.SetReadDeadline(time.Time{}) }()
	}
	msg, err := stream.Receive()
	if err != nil {
		g.hellos.failed(src, "soul.no_hello", "", time.Now())
		return nil, fmt.Errorf("reading hello: %w", err)
	}
	hello := msg.GetHello()
	if err := validateHello(hello); err != nil {
		g.hellos.failed(src, "soul.bad_hello", "", time.Now())
		_ = sendClose(stream, rejectedMsg(pb.Rejected_REASON_PROTOCOL, err.Error()))
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	if ok, why := version.Compatible(g.keeperVersion(), hello.Version); !ok {
		g.log.Warn("soul of an incompatible version refused", "sid", hello.Sid, "soul_version", hello.Version, "peer", stream.Peer())
		_ = sendClose(stream, rejectedMsg(pb.Rejected_REASON_VERSION, why))
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New(why))
	}
	if busy, retry, why := g.busy(); busy {
		g.log.Debug("soul refused as busy", "sid", hello.Sid, "retry_after", retry, "why", why)
		_ = sendClose(stream, busyMsg(retry, why))
		return nil, connect.NewError(connect.CodeResourceExhausted, errors.New(why))
	}
	nonce := make([]byte, 32)
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("making challenge: %w", err)
	}
	if err := stream.Send(&pb.KeeperMessage{Msg: &pb.KeeperMessage_Challenge{Challenge: &pb.Challenge{Nonce: nonce}}}); err != nil {
		return nil, fmt.Errorf("sending challenge: %w", err)
	}
	msg, err = stream.Receive()
	if err != nil {
		g.hellos.failed(src, "soul.no_proof", hello.Sid, time.Now())
		return nil, fmt.Errorf("reading proof: %w", err)
	}
	proof := msg.GetProof()
	if proof == nil || !ed25519.Verify(ed25519.PublicKey(hello.PublicKey), pb.ProofPayload(nonce, hello.Sid, g.fp), proof.Signature) {
		if g.hellos.failed(src, "soul.bad_proof", hello.Sid, time.Now()) {
			g.log.Warn("soul failed its key proof", "sid", hello.Sid, "peer", stream.Peer())
		}
		_ = sendClose(stream, rejectedMsg(pb.Rejected_REASON_BAD_PROOF,
			"the proof does not verify: the soul must sign with the key it presents, for this keeper's certificate fingerprint"))
		return nil, connect.NewError(connect.CodePermissionDenied, errors.New("bad proof"))
	}
	return hello, nil
}

func validateHello(h *pb.Hello) error {
	if h == nil {
		return errors.New("the first message must be hello")
	}
	if !validSID(h.Sid) {
		return fmt.Errorf("invalid SID %q: use 1-%d letters, digits, '.', '-', '_'", h.Sid, maxSIDLen)
	}
	if len(h.PublicKey) != ed25519.PublicKeySize {
		return fmt.Errorf("public key must be %d bytes of Ed25519", ed25519.PublicKeySize)
	}
	if len(h.Version) > maxVersionLen {
		return fmt.Errorf("version is longer than %d bytes", maxVersionLen)
	}
	if len(h.Soulprint) > 0 {
		var m map[string]any
		if err := json.Unmarshal(h.Soulprint, &m); err != nil {
			return fmt.Errorf("soulprint is not a JSON object: %w", err)
		}
	}
	return nil
}

func validSID(s string) bool {
	if s == "" || len(s) > maxSIDLen {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

func rejectedMsg(reason pb.Rejected_Reason, msg string) *pb.KeeperMessage {
	return &pb.KeeperMessage{Msg: &pb.KeeperMessage_Rejected{Rejected: &pb.Rejected{Reason: reason, Message: msg}}}
}

// outcome is the onboarding decision: exactly one of rejected, pending
// (the reason) or accepted (covens, possibly empty) applies.
type outcome struct {
	rejected *pb.Rejected
	pending  string
	covens   []string
}

const (
	pendingFull     = "too many souls are waiting for acceptance; this one is not registered yet and will try again"
	pendingWaiting  = "waiting for an Archon to accept this soul"
	pendingBadToken = "; waiting for an Archon to accept this soul"
)

// onboard decides, from the store, what a soul that proved its key is:
// registered and accepted through a join token, pending, refused (rejected
// by an Archon, or another key bound to its SID — audited), or a known
// accepted soul coming back.
func (g *Gateway) onboard(ctx context.Context, h *pb.Hello, peer string) (outcome, error) {
	// Two hellos of one SID on this keeper must not both find it unknown
	// and both redeem a join token for it: the SID's lock orders them.
	// Across keepers sharing a database, register's insert-only CreateSoul
	// lets exactly one of them register the SID.
	l := g.sidLock(h.Sid)
	l.Lock()
	defer l.Unlock()
	st := g.cfg.Store
	now := time.Now()
	soulprint, _ := decodeSoulprint(h.Soulprint)
	known, err := st.GetSoul(ctx, h.Sid)
	if errors.Is(err, domain.ErrNotFound) {
		out, rerr := g.register(ctx, h, soulprint, peer, now)
		if !errors.Is(rerr, errRegistered) {
			return out, rerr
		}
		// Another keeper registered the SID since it was read: decide as
		// for a known soul, against the key that one bound.
		known, err = st.GetSoul(ctx, h.Sid)
	}
	if err != nil {
		return outcome{}, fmt.Errorf("reading soul %s: %w", h.Sid, err)
	}

	if known.Status == store.SoulRejected {
		return outcome{rejected: &pb.Rejected{Reason: pb.Rejected_REASON_REJECTED, Message: "an Archon rejected soul " + h.Sid + ": an admin lets this host join again with `soulctl souls delete " + h.Sid + "` (or accepts it: `soulctl souls accept " + h.Sid + "`)"}}, nil
	}
	if !bytes.Equal(known.PublicKey, h.PublicKey) {
		if out, ok, err := g.reclaimPending(ctx, known, h, soulprint, peer, now); ok || err != nil {
			return out, err
		}
		// The first mismatch of a source in a window is audited in full;
		// its next failures are counted into one soul.hello_failures
		// entry (L1: hellos need no credentials).
		if g.hellos.failed(sourceKey(peer), "soul.key_mismatch", h.Sid, now) {
			if err := st.AppendAudit(ctx, store.AuditEntry{
				Time: now, Action: "soul.key_mismatch", Target: h.Sid,
				Summary: map[string]any{
					"status":        known.Status,
					"bound_key":     domain.KeyFingerprint(known.PublicKey),
					"presented_key": domain.KeyFingerprint(h.PublicKey),
					"peer":          peer,
					"keeper_id":     g.cfg.KeeperID,
				},
			}); err != nil {
				return outcome{}, fmt.Errorf("auditing key mismatch of soul %s: %w", h.Sid, err)
			}
			g.log.Warn("refused a soul presenting another key than the one bound to its SID", "sid", h.Sid, "peer", peer)
		}
		return outcome{rejected: &pb.Rejected{Reason: pb.Rejected_REASON_KEY_MISMATCH,
			Message: "SID " + h.Sid + " is bound to another key; an admin moves it to this host's key with `soulctl souls rekey " + h.Sid + " --key-file <its public key>`, or forgets it with `soulctl souls delete " + h.Sid + "`"}}, nil
	}

	if soulprint != nil && !reflect.DeepEqual(soulprint, known.Soulprint) {
		if err := st.UpdateSoulprint(ctx, h.Sid, soulprint, now); err != nil {
			return outcome{}, fmt.Errorf("storing soulprint of %s: %w", h.Sid, err)
		}
	}
	if h.Version != "" && h.Version != known.Version {
		// The version alone: rewriting the record read above would undo
		// an Archon's accept or reject made since.
		if err := st.SetSoulVersion(ctx, h.Sid, h.Version); err != nil {
			return outcome{}, fmt.Errorf("storing version of %s: %w", h.Sid, err)
		}
	}
	if known.Status != store.SoulPending {
		return outcome{covens: known.Covens}, nil
	}
	tok, ok, why, err := g.useToken(ctx, h.JoinSecret, now)
	if err != nil {
		return outcome{}, err
	}
	if !ok {
		return outcome{pending: pendingReason(why)}, nil
	}
	if err := st.SetSoulCovens(ctx, h.Sid, tok.Covens); err != nil {
		return outcome{}, fmt.Errorf("applying join token covens to %s: %w", h.Sid, err)
	}
	g.log.Info("pending soul joined with a join token", "sid", h.Sid, "token", tok.ID, "covens", tok.Covens)
	return outcome{covens: tok.Covens}, nil
}

// errRegistered is register's answer when another keeper registered the
// SID between onboard's read and register's insert.
var errRegistered = errors.New("soul registered meanwhile")

// register records a soul the store does not know: accepted with the
// covens of its join token, or pending (unless too many are). It fails
// with errRegistered when the SID was registered meanwhile; nothing is
// overwritten then.
func (g *Gateway) register(ctx context.Context, h *pb.Hello, soulprint map[string]any, peer string, now time.Time) (outcome, error) {
	s := store.Soul{
		SID: h.Sid, PublicKey: h.PublicKey, Status: store.SoulPending, Covens: []string{},
		Soulprint: soulprint, Version: h.Version, LastSeen: now, CreatedAt: now,
	}
	tok, ok, why, err := g.useToken(ctx, h.JoinSecret, now)
	if err != nil {
		return outcome{}, err
	}
	if !ok {
		if full, err := g.pendingFull(ctx); err != nil || full {
			return outcome{pending: pendingFull}, err
		}
	}
	if ok {
		// Registered as disconnected; attach records it connected.
		s.Status, s.Covens, s.KeeperID = store.SoulDisconnected, tok.Covens, g.cfg.KeeperID
	}
	if err := g.cfg.Store.CreateSoul(ctx, s); err != nil {
		if domain.ErrorCode(err) == domain.CodeConflict {
			return outcome{}, errRegistered
		}
		return outcome{}, fmt.Errorf("registering soul %s: %w", h.Sid, err)
	}
	if ok {
		if err := g.auditJoin(ctx, h, tok, peer, now); err != nil {
			return outcome{}, err
		}
		g.log.Info("soul joined with a join token", "sid", h.Sid, "token", tok.ID, "covens", tok.Covens)
		return outcome{covens: tok.Covens}, nil
	}
	return outcome{pending: pendingReason(why)}, nil
}

// ActionSoulJoined is the audit action of a soul accepted through a join
// token: the entry names the token by its id, never its secret.
const ActionSoulJoined = "soul.joined"

// auditJoin records that soul h joined with join token tok.
func (g *Gateway) auditJoin(ctx context.Context, h *pb.Hello, tok store.JoinToken, peer string, now time.Time) error {
	err := g.cfg.Store.AppendAudit(ctx, store.AuditEntry{
		Time: now, Action: ActionSoulJoined, Target: h.Sid,
		Summary: map[string]any{
			"join_token":            tok.ID,
			"join_token_created_by": tok.CreatedBy,
			"covens":                tok.Covens,
			"key":                   domain.KeyFingerprint(h.PublicKey),
			"peer":                  peer,
			"keeper_id":             g.cfg.KeeperID,
		},
	})
	if err != nil {
		return fmt.Errorf("auditing the join of soul %s: %w", h.Sid, err)
	}
	return nil
}

// reclaimPending lets a soul presenting a valid join token take a SID
// that is only pending under another key. A pending record proves nothing
// (anyone who reaches the port can create one for any SID), and the key is
// bound on acceptance (SPEC §10.3); the join token is an Archon's
// acceptance. Without this, whoever said hello first with a host's name
// would lock the host out of joining with its token for good. ok is false
// when the soul is not pending or has no valid token: the key mismatch
// stands.
func (g *Gateway) reclaimPending(ctx context.Context, known store.Soul, h *pb.Hello, soulprint map[string]any, peer string, now time.Time) (outcome, bool, error) {
	if known.Status != store.SoulPending || len(h.JoinSecret) == 0 {
		return outcome{}, false, nil
	}
	tok, ok, _, err := g.useToken(ctx, h.JoinSecret, now)
	if err != nil || !ok {
		return outcome{}, false, err
	}
	st := g.cfg.Store
	if err := st.AppendAudit(ctx, store.AuditEntry{
		Time: now, Action: "soul.pending_key_replaced", Target: h.Sid,
		Summary: map[string]any{
			"pending_key":   domain.KeyFingerprint(known.PublicKey),
			"presented_key": domain.KeyFingerprint(h.PublicKey),
			"join_token":    tok.ID,
			"peer":          peer,
			"keeper_id":     g.cfg.KeeperID,
		},
	}); err != nil {
		return outcome{}, false, fmt.Errorf("auditing the key change of pending soul %s: %w", h.Sid, err)
	}
	s := store.Soul{
		SID: h.Sid, PublicKey: h.PublicKey, Status: store.SoulDisconnected, Covens: tok.Covens,
		Soulprint: soulprint, Version: h.Version, KeeperID: g.cfg.KeeperID, LastSeen: now, CreatedAt: known.CreatedAt,
	}
	// Only if it is still the pending record read: an Archon may have
	// decided on it, or another keeper replaced it, since.
	if err := st.ReplacePendingSoul(ctx, s, known.PublicKey); err != nil {
		return outcome{}, false, fmt.Errorf("registering soul %s: %w", h.Sid, err)
	}
	g.log.Warn("a soul with a join token took over a SID pending under another key", "sid", h.Sid, "token", tok.ID, "peer", peer)
	return outcome{covens: tok.Covens}, true, nil
}

// pendingFull reports whether MaxPending souls are pending already.
func (g *Gateway) pendingFull(ctx context.Context) (bool, error) {
	if g.cfg.MaxPending < 0 {
		return false, nil
	}
	souls, err := g.cfg.Store.ListSouls(ctx, store.SoulFilter{Status: store.SoulPending})
	if err != nil {
		return false, fmt.Errorf("counting pending souls: %w", err)
	}
	if len(souls) < g.cfg.MaxPending {
		return false, nil
	}
	g.log.Warn("refusing to register another pending soul: too many are pending; accept or reject them", "pending", len(souls), "max", g.cfg.MaxPending)
	return true, nil
}

// useToken redeems a join secret; ok is false for no secret or an unknown,
// expired, revoked or used-up token, and why then says which ("" for no
// secret).
func (g *Gateway) useToken(ctx context.Context, secret []byte, now time.Time) (tok store.JoinToken, ok bool, why string, err error) {
	if len(secret) == 0 {
		return store.JoinToken{}, false, "", nil
	}
	tok, err = g.cfg.Store.UseJoinToken(ctx, jointoken.Hash(secret), now)
	if err != nil {
		if code := domain.ErrorCode(err); code == domain.CodeNotFound || code == domain.CodeConflict || code == domain.CodeInvalid {
			why = "the join token is not usable"
			var de *domain.Error
			if errors.As(err, &de) && de.Message != "" {
				why = "the " + de.Message
			}
			return store.JoinToken{}, false, why, nil
		}
		return store.JoinToken{}, false, "", fmt.Errorf("redeeming join token: %w", err)
	}
	if tok.Covens == nil {
		tok.Covens = []string{}
	}
	return tok, true, "", nil
}

// pendingReason is what a pending soul is told: why its join token did
// not let it in, if it gave one.
func pendingReason(why string) string {
	if why != "" {
		return why + pendingBadToken
	}
	return pendingWaiting
}

func decodeSoulprint(b []byte) (map[string]any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decoding soulprint: %w", err)
	}
	return m, nil
}
