// Package mysqlproto implements the MySQL client/server wire protocol that
// the proxy speaks on both sides: packet framing, length-encoded values,
// OK/ERR/EOF packets, the connection handshake and password scrambles.
// Every parser is length-checked and returns an error on short or
// malformed input instead of panicking.
package mysqlproto

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"
)

// maxChunk is the largest payload one wire packet carries; a payload of
// this size or more continues in the next packet.
const maxChunk = 1<<24 - 1

// DefaultMaxPayload bounds a logical payload read from a peer (the proxy's
// max_allowed_packet).
const DefaultMaxPayload = 64 << 20

// ErrPacketTooLarge is returned when a peer sends a payload larger than
// the connection's MaxPayload.
var ErrPacketTooLarge = errors.New("mysqlproto: packet too large")

// ErrMalformed is returned (wrapped) when a packet does not parse.
var ErrMalformed = errors.New("mysqlproto: malformed packet")

// Conn frames MySQL packets over a network connection. Reads and writes
// keep the sequence id: ReadPacket continues from the id it read, so a
// response written after it carries the next id; ResetSeq starts a new
// command.
type Conn struct {
	net.Conn
	r          *bufio.Reader
	w          *bufio.Writer
	cw         *countingWriter
	seq        uint8
	MaxPayload int
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// NewConn wraps nc.
func NewConn(nc net.Conn) *Conn {
	cw := &countingWriter{w: nc}
	return &Conn{Conn: nc, r: bufio.NewReaderSize(nc, 16<<10), w: bufio.NewWriterSize(cw, 16<<10), cw: cw, MaxPayload: DefaultMaxPayload}
}

// StartTLS runs a TLS handshake over the connection, as the server when
// server is set, and frames packets over TLS from then on; the sequence
// id goes on. Bytes already read ahead from the peer are the start of the
// handshake. Embedded Conn becomes the *tls.Conn.
func (c *Conn) StartTLS(cfg *tls.Config, server bool) error {
	if err := c.Flush(); err != nil {
		return err
	}
	raw := &readAhead{Conn: c.Conn, r: c.r}
	var tc *tls.Conn
	if server {
		tc = tls.Server(raw, cfg)
	} else {
		tc = tls.Client(raw, cfg)
	}
	if err := tc.Handshake(); err != nil {
		return err
	}
	c.Conn = tc
	c.r = bufio.NewReaderSize(tc, 16<<10)
	c.cw.w = tc
	return nil
}

// readAhead is a connection whose reads go through the reader that may
// hold bytes read ahead from it.
type readAhead struct {
	net.Conn
	r *bufio.Reader
}

func (a *readAhead) Read(p []byte) (int, error) { return a.r.Read(p) }

// ResetSeq sets the next sequence id to 0 (a new command).
func (c *Conn) ResetSeq() { c.seq = 0 }

// ReadPacket reads one logical payload (joining continuation packets).
// The sequence id of the last packet read plus one becomes the id of the
// next packet written. A payload whose announced length takes it past
// MaxPayload is refused with ErrPacketTooLarge before it is read.
func (c *Conn) ReadPacket() ([]byte, error) {
	var payload []byte
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
			return nil, err
		}
		n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		c.seq = hdr[3] + 1
		if len(payload)+n > c.MaxPayload {
			return nil, ErrPacketTooLarge
		}
		var err error
		if payload, err = c.readAppend(payload, n); err != nil {
			return nil, err
		}
		if n < maxChunk {
			return payload, nil
		}
	}
}

// readStep is how much of a payload ReadPacket allocates before the bytes
// arrive.
const readStep = 64 << 10

// readAppend reads n more bytes of a payload into p. Past readStep the
// buffer grows as the bytes arrive, at most doubling, rather than by the
// length the peer announced: a peer that announces 16 MiB and sends a few
// bytes costs a few bytes, not 16 MiB.
func (c *Conn) readAppend(p []byte, n int) ([]byte, error) {
	for {
		k := min(n, max(readStep, len(p)))
		start := len(p)
		p = slices.Grow(p, k)[:start+k]
		if _, err := io.ReadFull(c.r, p[start:]); err != nil {
			return nil, err
		}
		if n -= k; n == 0 {
			return p, nil
		}
	}
}

// WritePacket buffers one logical payload, split into wire packets as
// needed. Call Flush to send.
func (c *Conn) WritePacket(p []byte) error {
	for {
		n := len(p)
		if n > maxChunk {
			n = maxChunk
		}
		hdr := header(n, c.seq)
		c.seq++
		if _, err := c.w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := c.w.Write(p[:n]); err != nil {
			return err
		}
		p = p[n:]
		if n < maxChunk {
			return nil
		}
	}
}

// header is the wire header of a packet of n payload bytes.
func header(n int, seq uint8) [4]byte { return [4]byte{byte(n), byte(n >> 8), byte(n >> 16), seq} }

// AppendPacket appends payload, shorter than 16 MiB, as one wire packet
// with sequence id seq: a packet sent without a Conn.
func AppendPacket(b []byte, seq uint8, payload []byte) []byte {
	h := header(len(payload), seq)
	return append(append(b, h[:]...), payload...)
}

// Flush sends buffered packets.
func (c *Conn) Flush() error { return c.w.Flush() }

// Sent returns how many bytes have reached the network so far; a caller
// compares it before and after an operation to learn whether anything
// left the buffer.
func (c *Conn) Sent() int64 { return c.cw.n }

// Buffered returns how many bytes have been received but not yet read.
func (c *Conn) Buffered() int { return c.r.Buffered() }

// DiscardBuffered drops packets buffered but not yet flushed.
func (c *Conn) DiscardBuffered() { c.w.Reset(c.cw) }

// WriteErr writes an ERR packet and flushes.
func (c *Conn) WriteErr(e *Error) error {
	if err := c.WritePacket(AppendErr(nil, e)); err != nil {
		return err
	}
	return c.Flush()
}

// SetDeadlineIn sets a read/write deadline d from now (0 clears it).
func (c *Conn) SetDeadlineIn(d time.Duration) {
	if d == 0 {
		_ = c.Conn.SetDeadline(time.Time{})
		return
	}
	_ = c.Conn.SetDeadline(time.Now().Add(d))
}

// Error is a MySQL error: an ERR packet's code, SQLSTATE and message.
type Error struct {
	Code    uint16
	State   string
	Message string
}

// Error implements error.
func (e *Error) Error() string { return fmt.Sprintf("Error %d (%s): %s", e.Code, e.State, e.Message) }

// NewError returns an Error with a formatted message.
func NewError(code uint16, state, format string, args ...any) *Error {
	return &Error{Code: code, State: state, Message: fmt.Sprintf(format, args...)}
}
