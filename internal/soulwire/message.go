package soulwire

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
)

// CompressMinBytes is the size from which the keeper gzips a message, as
// the Connect route does (connect.WithCompressMinBytes(4096)).
const CompressMinBytes = 4096

// ErrCompressed refuses a compressed frame where only plain ones are
// allowed (everything a soul sends: a small compressed hello could
// inflate to the read limit).
var ErrCompressed = errors.New("soulwire: compressed messages are not accepted here")

// MarshalFrame encodes m as one frame — gzip-compressed (FlagCompressed)
// when compressMin > 0 and the message is at least compressMin bytes —
// into a pooled buffer to write with one Write and give back with PutBuf.
// A message larger than max bytes is refused.
func MarshalFrame(m proto.Message, max, compressMin int) (*[]byte, error) {
	size := proto.Size(m)
	if size > max {
		return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("message size %d exceeds the limit %d", size, max))
	}
	p := GetBuf(HeaderLen + size)
	b, err := proto.MarshalOptions{}.MarshalAppend((*p)[:HeaderLen], m)
	if err != nil {
		PutBuf(p)
		return nil, fmt.Errorf("soulwire: encoding %T: %w", m, err)
	}
	*p = b
	if compressMin <= 0 || size < compressMin {
		PutHeader(b, FlagMessage, len(b)-HeaderLen)
		return p, nil
	}
	z := GetBuf(HeaderLen + size/2)
	w := &appendWriter{b: (*z)[:HeaderLen]}
	gz := gzipWriters.Get().(*gzip.Writer)
	gz.Reset(w)
	_, err = gz.Write(b[HeaderLen:])
	if err == nil {
		err = gz.Close()
	}
	gzipWriters.Put(gz)
	PutBuf(p)
	if err != nil {
		PutBuf(z)
		return nil, fmt.Errorf("soulwire: compressing %T: %w", m, err)
	}
	*z = w.b
	PutHeader(w.b, FlagCompressed, len(w.b)-HeaderLen)
	return z, nil
}

var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(io.Discard) }}

type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// Unmarshal decodes a message frame's payload into m: FlagMessage as is,
// FlagCompressed (when compressed is allowed) inflated to at most max
// bytes. proto.Unmarshal copies bytes and strings, so the payload may be
// reused afterwards.
func Unmarshal(flag byte, payload []byte, m proto.Message, max int, compressed bool) error {
	switch flag {
	case FlagMessage:
	case FlagCompressed:
		if !compressed {
			return ErrCompressed
		}
		zr, err := gzip.NewReader(bytes.NewReader(payload))
		if err != nil {
			return fmt.Errorf("soulwire: inflating a message: %w", err)
		}
		var out bytes.Buffer
		n, err := io.Copy(&out, io.LimitReader(zr, int64(max)+1))
		if err != nil {
			return fmt.Errorf("soulwire: inflating a message: %w", err)
		}
		if n > int64(max) {
			return fmt.Errorf("%w: a compressed message inflates beyond %d bytes", ErrFrameTooLarge, max)
		}
		payload = out.Bytes()
	default:
		return fmt.Errorf("soulwire: frame 0x%02x is not a message", flag)
	}
	if err := proto.Unmarshal(payload, m); err != nil {
		return fmt.Errorf("soulwire: decoding %T: %w", m, err)
	}
	return nil
}

// Trailer encodes the end-of-stream frame for err (nil is status OK): the
// gRPC status code and percent-encoded message of connect.CodeOf(err), as
// gRPC-Web trailers.
func Trailer(err error) []byte {
	code, msg := connect.Code(0), ""
	if err != nil {
		code = connect.CodeOf(err)
		var ce *connect.Error
		if errors.As(err, &ce) {
			msg = ce.Message()
		} else {
			msg = err.Error()
		}
	}
	var sb strings.Builder
	sb.Grow(HeaderLen + 40 + len(msg))
	sb.WriteString("\x80\x00\x00\x00\x00grpc-status: ")
	sb.WriteString(strconv.Itoa(int(code)))
	sb.WriteString("\r\ngrpc-message: ")
	sb.WriteString(percentEncode(msg))
	sb.WriteString("\r\n")
	b := []byte(sb.String())
	PutHeader(b, FlagTrailer, len(b)-HeaderLen)
	return b
}

// ParseTrailer decodes a trailer frame's payload into the error it
// carries: nil for status OK, else a *connect.Error with the code and
// message the keeper ended the stream with.
func ParseTrailer(payload []byte) error {
	code, msg := -1, ""
	for _, line := range strings.Split(string(payload), "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "grpc-status":
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 || n > 16 {
				return connect.NewError(connect.CodeInternal, fmt.Errorf("the keeper ended the stream with an invalid status %q", strings.TrimSpace(v)))
			}
			code = n
		case "grpc-message":
			m, err := url.PathUnescape(strings.TrimSpace(v))
			if err != nil {
				m = strings.TrimSpace(v)
			}
			msg = m
		}
	}
	switch code {
	case -1:
		return connect.NewError(connect.CodeInternal, errors.New("the keeper ended the stream without a status"))
	case 0:
		return nil
	}
	return connect.NewError(connect.Code(code), errors.New(msg))
}

// percentEncode escapes a gRPC status message: bytes outside printable
// ASCII, and '%', become %XX.
func percentEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c <= 0x7e && c != '%' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
