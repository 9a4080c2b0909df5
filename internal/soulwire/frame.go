// Package soulwire is the lean soul stream's wire format (SPEC §3): a soul
// that offers the ALPN protocol Proto on the keeper's TLS port exchanges
// gRPC-Web framed protobuf messages directly over the TLS connection — no
// HTTP/2 — so a connected soul costs the keeper one reader goroutine and
// small buffers.
//
// A frame is one flag byte, a 4-byte big-endian payload length and the
// payload. Flags: FlagMessage (a protobuf message), FlagCompressed (a
// gzip-compressed one; keeper → soul only), FlagPing and FlagPong (8-byte
// liveness probes) and FlagTrailer (end of stream, gRPC-Web trailers text
// carrying the status code and message).
package soulwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Proto is the ALPN protocol id of the lean soul stream.
const Proto = "soulstack/1"

// Frame flags.
const (
	FlagMessage    byte = 0x00
	FlagCompressed byte = 0x01
	FlagPing       byte = 0x40
	FlagPong       byte = 0x41
	FlagTrailer    byte = 0x80
)

// HeaderLen is the length of a frame header.
const HeaderLen = 5

// PingLen is the payload length of ping and pong frames.
const PingLen = 8

// maxTrailerLen bounds a trailer frame's payload.
const maxTrailerLen = 16 << 10

// Errors of ReadFrame.
var (
	// ErrFrameTooLarge means a frame's length field exceeds the limit; the
	// payload was not read (nor allocated).
	ErrFrameTooLarge = errors.New("soulwire: frame larger than allowed")
	// ErrBadFlag means a frame's flag byte is none of the known flags.
	ErrBadFlag = errors.New("soulwire: unknown frame flag")
)

// ReadHeader reads a frame header into hdr and returns its flag and
// payload length. An unknown flag is ErrBadFlag; a ping or pong whose
// length is not PingLen, or a trailer longer than 16 KiB, is
// ErrFrameTooLarge.
func ReadHeader(r io.Reader, hdr *[HeaderLen]byte) (flag byte, n int, err error) {
	// io.ReadFull by hand: an idle soul's reader waits in this loop, and
	// every frame less on its stack keeps the stack small.
	for got := 0; got < HeaderLen; {
		m, err := r.Read(hdr[got:])
		got += m
		if err != nil {
			if got == HeaderLen {
				break
			}
			if errors.Is(err, io.EOF) && got > 0 {
				err = io.ErrUnexpectedEOF
			}
			return 0, 0, err
		}
	}
	return ParseHeader(hdr)
}

// ParseHeader checks and decodes a frame header read into hdr, as
// ReadHeader does.
func ParseHeader(hdr *[HeaderLen]byte) (flag byte, n int, err error) {
	flag = hdr[0]
	length := binary.BigEndian.Uint32(hdr[1:])
	switch flag {
	case FlagMessage, FlagCompressed:
	case FlagPing, FlagPong:
		if length != PingLen {
			return flag, 0, fmt.Errorf("%w: a ping or pong frame of %d bytes (want %d)", ErrFrameTooLarge, length, PingLen)
		}
	case FlagTrailer:
		if length > maxTrailerLen {
			return flag, 0, fmt.Errorf("%w: a trailer frame of %d bytes", ErrFrameTooLarge, length)
		}
	default:
		return flag, 0, fmt.Errorf("%w 0x%02x", ErrBadFlag, flag)
	}
	if uint64(length) > uint64(maxInt) {
		return flag, 0, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, length)
	}
	return flag, int(length), nil
}

const maxInt = int(^uint(0) >> 1)

// ReadFrame reads one frame whose payload may be at most max bytes: the
// length is checked before anything is allocated. The payload is in a
// pooled buffer the caller gives back with PutBuf once it is decoded.
func ReadFrame(r io.Reader, hdr *[HeaderLen]byte, max int) (flag byte, payload *[]byte, err error) {
	flag, n, err := ReadHeader(r, hdr)
	if err != nil {
		return flag, nil, err
	}
	if n > max {
		return flag, nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrFrameTooLarge, n, max)
	}
	p := GetBuf(n)
	if _, err := io.ReadFull(r, *p); err != nil {
		PutBuf(p)
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return flag, nil, fmt.Errorf("soulwire: reading a %d-byte frame: %w", n, err)
	}
	return flag, p, nil
}

// PutHeader writes a frame header for flag and a payload of n bytes into
// b[:HeaderLen].
func PutHeader(b []byte, flag byte, n int) {
	b[0] = flag
	binary.BigEndian.PutUint32(b[1:HeaderLen], uint32(n))
}

// ControlFrame is a whole ping or pong frame (flag FlagPing or FlagPong)
// carrying payload, which is PingLen bytes (a shorter one is zero-padded).
func ControlFrame(flag byte, payload []byte) [HeaderLen + PingLen]byte {
	var b [HeaderLen + PingLen]byte
	PutHeader(b[:], flag, PingLen)
	copy(b[HeaderLen:], payload)
	return b
}

// sizeClasses are the pooled buffer capacities; larger buffers are
// allocated and dropped.
var sizeClasses = [...]int{256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20}

var pools [len(sizeClasses)]sync.Pool

// GetBuf returns a buffer of length n from the pool of its size class.
func GetBuf(n int) *[]byte {
	for i, c := range sizeClasses {
		if n <= c {
			if p, ok := pools[i].Get().(*[]byte); ok {
				*p = (*p)[:n]
				return p
			}
			b := make([]byte, n, c)
			return &b
		}
	}
	b := make([]byte, n)
	return &b
}

// PutBuf gives a buffer from GetBuf back (nil is ignored).
func PutBuf(p *[]byte) {
	if p == nil {
		return
	}
	c := cap(*p)
	for i, sc := range sizeClasses {
		if c == sc {
			*p = (*p)[:0]
			pools[i].Put(p)
			return
		}
	}
}
