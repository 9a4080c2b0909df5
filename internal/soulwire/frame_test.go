package soulwire_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/soulstack/soulstack/internal/soulwire"
	pb "github.com/soulstack/soulstack/proto/soulstack/v1"
)

// FuzzReadFrame: any input is a frame, a clear error, or needs more
// bytes; a payload never exceeds the limit, and a frame read is exactly
// its header plus its length field's bytes.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 2, 8, 1})
	f.Add([]byte{0x40, 0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{0x80, 0, 0, 0, 15, 'g', 'r', 'p', 'c', '-', 's', 't', 'a', 't', 'u', 's', ':', ' ', '0', '\n'})
	f.Add([]byte{0x7f, 0, 0, 0, 0})
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{1, 0, 0, 1, 0, 0})
	const max = 1 << 10
	f.Fuzz(func(t *testing.T, in []byte) {
		var hdr [soulwire.HeaderLen]byte
		r := bytes.NewReader(in)
		flag, p, err := soulwire.ReadFrame(r, &hdr, max)
		if err != nil {
			if p != nil {
				t.Fatal("a payload with an error")
			}
			known := errors.Is(err, soulwire.ErrBadFlag) || errors.Is(err, soulwire.ErrFrameTooLarge) ||
				errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
			if !known {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		defer soulwire.PutBuf(p)
		if len(*p) > max || flag != in[0] || len(in)-r.Len() != soulwire.HeaderLen+len(*p) {
			t.Fatalf("frame 0x%02x of %d bytes from %d input bytes (%d left)", flag, len(*p), len(in), r.Len())
		}
		if flag == soulwire.FlagMessage {
			var m pb.SoulMessage
			_ = soulwire.Unmarshal(flag, *p, &m, max, false)
		}
		if flag == soulwire.FlagTrailer {
			_ = soulwire.ParseTrailer(*p)
		}
	})
}

// A message round-trips through a frame, compressed from the threshold
// on; a compressed frame is refused where it is not allowed, and one that
// inflates beyond the limit is refused.
func TestMarshalFrameRoundTrip(t *testing.T) {
	for _, size := range []int{0, 100, soulwire.CompressMinBytes + 10, 300 << 10} {
		in := &pb.KeeperMessage{Msg: &pb.KeeperMessage_Pending{Pending: &pb.Pending{Reason: strings.Repeat("p", size)}}}
		p, err := soulwire.MarshalFrame(in, 1<<20, soulwire.CompressMinBytes)
		if err != nil {
			t.Fatal(err)
		}
		var hdr [soulwire.HeaderLen]byte
		flag, payload, err := soulwire.ReadFrame(bytes.NewReader(*p), &hdr, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		wantFlag := soulwire.FlagMessage
		if size >= soulwire.CompressMinBytes {
			wantFlag = soulwire.FlagCompressed
		}
		if flag != wantFlag {
			t.Fatalf("size %d: flag 0x%02x, want 0x%02x", size, flag, wantFlag)
		}
		out := new(pb.KeeperMessage)
		if err := soulwire.Unmarshal(flag, *payload, out, 1<<20, true); err != nil || out.GetPending().GetReason() != in.GetPending().GetReason() {
			t.Fatalf("size %d: %v", size, err)
		}
		if flag == soulwire.FlagCompressed {
			if err := soulwire.Unmarshal(flag, *payload, out, 1<<20, false); !errors.Is(err, soulwire.ErrCompressed) {
				t.Fatalf("a compressed frame where none is allowed: %v", err)
			}
			if err := soulwire.Unmarshal(flag, *payload, out, size/2, true); !errors.Is(err, soulwire.ErrFrameTooLarge) {
				t.Fatalf("a frame inflating beyond the limit: %v", err)
			}
		}
		soulwire.PutBuf(payload)
		soulwire.PutBuf(p)
	}
	if _, err := soulwire.MarshalFrame(&pb.KeeperMessage{Msg: &pb.KeeperMessage_Pending{Pending: &pb.Pending{Reason: strings.Repeat("p", 2000)}}}, 1000, 0); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("a message over the send limit: %v", err)
	}
}

// Trailers carry a status code and message as the Connect route does.
func TestTrailerRoundTrip(t *testing.T) {
	if err := soulwire.ParseTrailer(soulwire.Trailer(nil)[soulwire.HeaderLen:]); err != nil {
		t.Fatalf("status OK: %v", err)
	}
	msg := "too many failed hellos: 100% \"sure\"\nnext line, ünïcode"
	err := soulwire.ParseTrailer(soulwire.Trailer(connect.NewError(connect.CodeResourceExhausted, errors.New(msg)))[soulwire.HeaderLen:])
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeResourceExhausted || ce.Message() != msg {
		t.Fatalf("trailer round trip: %v", err)
	}
	if err := soulwire.ParseTrailer(soulwire.Trailer(errors.New("plain"))[soulwire.HeaderLen:]); connect.CodeOf(err) != connect.CodeUnknown || !strings.Contains(err.Error(), "plain") {
		t.Fatalf("a plain error: %v", err)
	}
	if err := soulwire.ParseTrailer([]byte("grpc-message: x\r\n")); connect.CodeOf(err) != connect.CodeInternal {
		t.Fatalf("no status: %v", err)
	}
}

// The readers give a frame's buffer back to the pool right after
// Unmarshal: the decoded message must not alias it (protobuf-go copies
// bytes and strings unless told otherwise).
func TestUnmarshalDoesNotAliasThePayload(t *testing.T) {
	in := &pb.SoulMessage{Msg: &pb.SoulMessage_Log{Log: &pb.LogLine{TaskId: "task-1", Text: "hello"}}}
	p, err := soulwire.MarshalFrame(in, 1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	payload := (*p)[soulwire.HeaderLen:]
	out := new(pb.SoulMessage)
	if err := soulwire.Unmarshal(soulwire.FlagMessage, payload, out, 1<<20, false); err != nil {
		t.Fatal(err)
	}
	for i := range payload {
		payload[i] = 'X'
	}
	if out.GetLog().GetTaskId() != "task-1" || out.GetLog().GetText() != "hello" {
		t.Fatalf("the decoded message changed with its buffer: %v", out)
	}
	hello := &pb.SoulMessage{Msg: &pb.SoulMessage_Hello{Hello: &pb.Hello{Sid: "s", PublicKey: bytes.Repeat([]byte{7}, 32)}}}
	p, _ = soulwire.MarshalFrame(hello, 1<<20, 0)
	payload = (*p)[soulwire.HeaderLen:]
	if err := soulwire.Unmarshal(soulwire.FlagMessage, payload, out, 1<<20, false); err != nil {
		t.Fatal(err)
	}
	for i := range payload {
		payload[i] = 0
	}
	if !bytes.Equal(out.GetHello().GetPublicKey(), bytes.Repeat([]byte{7}, 32)) {
		t.Fatal("the decoded bytes field changed with its buffer")
	}
}
