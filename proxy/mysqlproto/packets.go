package mysqlproto

import (
	"encoding/binary"
	"fmt"
)

// Capability flags (CLIENT_*) the proxy uses.
const (
	CapLongPassword     uint32 = 1
	CapLongFlag         uint32 = 1 << 2
	CapConnectWithDB    uint32 = 1 << 3
	CapLocalFiles       uint32 = 1 << 7
	CapProtocol41       uint32 = 1 << 9
	CapSSL              uint32 = 1 << 11
	CapTransactions     uint32 = 1 << 13
	CapSecureConnection uint32 = 1 << 15
	CapMultiStatements  uint32 = 1 << 16
	CapMultiResults     uint32 = 1 << 17
	CapPSMultiResults   uint32 = 1 << 18
	CapPluginAuth       uint32 = 1 << 19
	CapConnectAttrs     uint32 = 1 << 20
	CapPluginAuthLenenc uint32 = 1 << 21
	CapSessionTrack     uint32 = 1 << 23
	CapDeprecateEOF     uint32 = 1 << 24
)

// Server status flags (SERVER_*) of OK and EOF packets.
const (
	StatusInTrans             uint16 = 0x0001
	StatusAutocommit          uint16 = 0x0002
	StatusMoreResults         uint16 = 0x0008
	StatusSessionStateChanged uint16 = 0x4000
)

// Commands (COM_*).
const (
	ComQuit             byte = 0x01
	ComInitDB           byte = 0x02
	ComQuery            byte = 0x03
	ComFieldList        byte = 0x04
	ComPing             byte = 0x0e
	ComStmtPrepare      byte = 0x16
	ComStmtExecute      byte = 0x17
	ComStmtSendLongData byte = 0x18
	ComStmtClose        byte = 0x19
	ComStmtReset        byte = 0x1a
	ComSetOption        byte = 0x1b
	ComResetConnection  byte = 0x1f
)

// Packet headers.
const (
	HeaderOK          byte = 0x00
	HeaderLocalInFile byte = 0xfb
	HeaderEOF         byte = 0xfe
	HeaderErr         byte = 0xff
)

// Session state change types of the OK packet's session-state block.
const (
	SessionTrackSchema byte = 0x01
	SessionTrackGTIDs  byte = 0x03
)

// ReadLenEnc reads a length-encoded integer at b[pos:]. null reports the
// NULL marker (0xfb). ok is false when b is too short or the first byte
// is not a valid length prefix.
func ReadLenEnc(b []byte, pos int) (v uint64, null bool, next int, ok bool) {
	if pos < 0 || pos >= len(b) {
		return 0, false, pos, false
	}
	switch c := b[pos]; {
	case c < 0xfb:
		return uint64(c), false, pos + 1, true
	case c == 0xfb:
		return 0, true, pos + 1, true
	case c == 0xfc:
		if pos+3 > len(b) {
			return 0, false, pos, false
		}
		return uint64(binary.LittleEndian.Uint16(b[pos+1:])), false, pos + 3, true
	case c == 0xfd:
		if pos+4 > len(b) {
			return 0, false, pos, false
		}
		return uint64(b[pos+1]) | uint64(b[pos+2])<<8 | uint64(b[pos+3])<<16, false, pos + 4, true
	case c == 0xfe:
		if pos+9 > len(b) {
			return 0, false, pos, false
		}
		return binary.LittleEndian.Uint64(b[pos+1:]), false, pos + 9, true
	}
	return 0, false, pos, false
}

// ReadLenEncString reads a length-encoded string at b[pos:].
func ReadLenEncString(b []byte, pos int) (s []byte, next int, ok bool) {
	n, _, p, ok := ReadLenEnc(b, pos)
	if !ok || n > uint64(len(b)-p) {
		return nil, pos, false
	}
	return b[p : p+int(n)], p + int(n), true
}

// ReadNullString reads a NUL-terminated string at b[pos:].
func ReadNullString(b []byte, pos int) (s []byte, next int, ok bool) {
	if pos < 0 {
		return nil, pos, false
	}
	for i := pos; i < len(b); i++ {
		if b[i] == 0 {
			return b[pos:i], i + 1, true
		}
	}
	return nil, pos, false
}

// AppendLenEnc appends v as a length-encoded integer.
func AppendLenEnc(b []byte, v uint64) []byte {
	switch {
	case v < 0xfb:
		return append(b, byte(v))
	case v <= 0xffff:
		return append(b, 0xfc, byte(v), byte(v>>8))
	case v <= 0xffffff:
		return append(b, 0xfd, byte(v), byte(v>>8), byte(v>>16))
	}
	b = append(b, 0xfe)
	return binary.LittleEndian.AppendUint64(b, v)
}

// AppendLenEncString appends s as a length-encoded string.
func AppendLenEncString(b []byte, s []byte) []byte {
	return append(AppendLenEnc(b, uint64(len(s))), s...)
}

// OK is the content of an OK packet, or of the EOF/OK that ends a result
// set.
type OK struct {
	AffectedRows uint64
	LastInsertID uint64
	Status       uint16
	Warnings     uint16
	Info         string
	// SessionState is the raw session-state block (CLIENT_SESSION_TRACK).
	SessionState []byte
}

// ParseOK parses an OK packet (header 0x00, or 0xfe when it ends a result
// set under CLIENT_DEPRECATE_EOF) sent to a peer with capabilities caps.
func ParseOK(p []byte, caps uint32) (OK, error) {
	var ok OK
	if len(p) < 1 || (p[0] != HeaderOK && p[0] != HeaderEOF) {
		return ok, fmt.Errorf("%w: not an OK packet", ErrMalformed)
	}
	var good bool
	pos := 1
	if ok.AffectedRows, _, pos, good = ReadLenEnc(p, pos); !good {
		return ok, fmt.Errorf("%w: OK affected rows", ErrMalformed)
	}
	if ok.LastInsertID, _, pos, good = ReadLenEnc(p, pos); !good {
		return ok, fmt.Errorf("%w: OK last insert id", ErrMalformed)
	}
	if pos+4 > len(p) {
		// some servers end an OK after the ids; status is unknown
		return ok, nil
	}
	ok.Status = binary.LittleEndian.Uint16(p[pos:])
	ok.Warnings = binary.LittleEndian.Uint16(p[pos+2:])
	pos += 4
	if pos >= len(p) {
		return ok, nil
	}
	if caps&CapSessionTrack == 0 {
		ok.Info = string(p[pos:])
		return ok, nil
	}
	info, pos, good := ReadLenEncString(p, pos)
	if !good {
		return ok, fmt.Errorf("%w: OK info", ErrMalformed)
	}
	ok.Info = string(info)
	if ok.Status&StatusSessionStateChanged != 0 && pos < len(p) {
		st, _, good := ReadLenEncString(p, pos)
		if !good {
			return ok, fmt.Errorf("%w: OK session state", ErrMalformed)
		}
		ok.SessionState = st
	}
	return ok, nil
}

// AppendOK appends an OK packet with the given header (0x00, or 0xfe to
// end a result set) in the format of a peer with capabilities caps.
func AppendOK(b []byte, header byte, ok OK, caps uint32) []byte {
	b = append(b, header)
	b = AppendLenEnc(b, ok.AffectedRows)
	b = AppendLenEnc(b, ok.LastInsertID)
	status := ok.Status
	if caps&CapSessionTrack == 0 || len(ok.SessionState) == 0 {
		status &^= StatusSessionStateChanged
	}
	b = binary.LittleEndian.AppendUint16(b, status)
	b = binary.LittleEndian.AppendUint16(b, ok.Warnings)
	if caps&CapSessionTrack == 0 {
		return append(b, ok.Info...)
	}
	b = AppendLenEncString(b, []byte(ok.Info))
	if status&StatusSessionStateChanged != 0 {
		b = AppendLenEncString(b, ok.SessionState)
	}
	return b
}

// IsEOF reports whether p is a classic EOF packet.
func IsEOF(p []byte) bool { return len(p) > 0 && len(p) < 9 && p[0] == HeaderEOF }

// IsResultEnd reports whether p ends the rows of a result set sent to a
// peer with capabilities caps (an EOF, or an OK with header 0xfe).
func IsResultEnd(p []byte, caps uint32) bool {
	if caps&CapDeprecateEOF != 0 {
		return len(p) > 0 && len(p) < maxChunk && p[0] == HeaderEOF
	}
	return IsEOF(p)
}

// ParseResultEnd parses the packet that ends a result set (EOF, or OK
// with header 0xfe under CLIENT_DEPRECATE_EOF) into an OK.
func ParseResultEnd(p []byte, caps uint32) (OK, error) {
	if caps&CapDeprecateEOF != 0 {
		return ParseOK(p, caps)
	}
	if !IsEOF(p) {
		return OK{}, fmt.Errorf("%w: not an EOF packet", ErrMalformed)
	}
	var ok OK
	if len(p) >= 5 {
		ok.Warnings = binary.LittleEndian.Uint16(p[1:])
		ok.Status = binary.LittleEndian.Uint16(p[3:])
	}
	return ok, nil
}

// AppendEOF appends a classic EOF packet.
func AppendEOF(b []byte, warnings, status uint16) []byte {
	b = append(b, HeaderEOF)
	b = binary.LittleEndian.AppendUint16(b, warnings)
	return binary.LittleEndian.AppendUint16(b, status&^StatusSessionStateChanged)
}

// AppendResultEnd appends what ends a result set for a peer with
// capabilities caps.
func AppendResultEnd(b []byte, ok OK, caps uint32) []byte {
	if caps&CapDeprecateEOF != 0 {
		return AppendOK(b, HeaderEOF, ok, caps)
	}
	return AppendEOF(b, ok.Warnings, ok.Status)
}

// Column is what a column definition (Protocol::ColumnDefinition41)
// says of a column the proxy answers itself.
type Column struct {
	Name     string
	Type     byte   // TypeLongLong, ...
	Charset  uint16 // 63 (binary) for numbers
	Length   uint32 // display width
	Flags    uint16
	Decimals byte
}

// Column types and flags of the columns the proxy answers itself.
const (
	TypeLongLong byte   = 0x08
	FlagNotNull  uint16 = 1
	FlagBinary   uint16 = 128
)

// AppendColumn appends the definition of col (catalog "def", no schema
// or table).
func AppendColumn(b []byte, col Column) []byte {
	b = AppendLenEncString(b, []byte("def"))
	b = append(b, 0, 0, 0) // schema, table, original table
	b = AppendLenEncString(b, []byte(col.Name))
	b = append(b, 0, 0x0c) // original name; length of the fixed fields
	b = binary.LittleEndian.AppendUint16(b, col.Charset)
	b = binary.LittleEndian.AppendUint32(b, col.Length)
	b = append(b, col.Type)
	b = binary.LittleEndian.AppendUint16(b, col.Flags)
	return append(b, col.Decimals, 0, 0)
}

// ParseErr parses an ERR packet (protocol 4.1).
func ParseErr(p []byte) (*Error, error) {
	if len(p) < 3 || p[0] != HeaderErr {
		return nil, fmt.Errorf("%w: not an ERR packet", ErrMalformed)
	}
	e := &Error{Code: binary.LittleEndian.Uint16(p[1:]), State: "HY000"}
	rest := p[3:]
	if len(rest) >= 6 && rest[0] == '#' {
		e.State = string(rest[1:6])
		rest = rest[6:]
	}
	e.Message = string(rest)
	return e, nil
}

// AppendErr appends an ERR packet.
func AppendErr(b []byte, e *Error) []byte {
	b = append(b, HeaderErr)
	b = binary.LittleEndian.AppendUint16(b, e.Code)
	state := e.State
	if len(state) != 5 {
		state = "HY000"
	}
	b = append(b, '#')
	b = append(b, state...)
	return append(b, e.Message...)
}

// GTIDFromSessionState returns the GTID of a SESSION_TRACK_GTIDS entry in
// a session-state block, or "" when there is none.
func GTIDFromSessionState(st []byte) string {
	pos := 0
	for pos < len(st) {
		typ := st[pos]
		data, next, ok := ReadLenEncString(st, pos+1)
		if !ok {
			return ""
		}
		pos = next
		if typ != SessionTrackGTIDs || len(data) < 1 {
			continue
		}
		// data: encoding specification (1 byte), then a length-encoded GTID set
		g, _, ok := ReadLenEncString(data, 1)
		if ok {
			return string(g)
		}
	}
	return ""
}

// PrepareOK is the first packet of a COM_STMT_PREPARE response.
type PrepareOK struct {
	StmtID     uint32
	NumColumns uint16
	NumParams  uint16
	Warnings   uint16
}

// ParsePrepareOK parses the first packet of a COM_STMT_PREPARE response.
func ParsePrepareOK(p []byte) (PrepareOK, error) {
	if len(p) < 9 || p[0] != HeaderOK {
		return PrepareOK{}, fmt.Errorf("%w: prepare response", ErrMalformed)
	}
	r := PrepareOK{
		StmtID:     binary.LittleEndian.Uint32(p[1:]),
		NumColumns: binary.LittleEndian.Uint16(p[5:]),
		NumParams:  binary.LittleEndian.Uint16(p[7:]),
	}
	if len(p) >= 12 {
		r.Warnings = binary.LittleEndian.Uint16(p[10:])
	}
	return r, nil
}

// AppendPrepareOK appends the first packet of a COM_STMT_PREPARE response.
func AppendPrepareOK(b []byte, r PrepareOK) []byte {
	b = append(b, HeaderOK)
	b = binary.LittleEndian.AppendUint32(b, r.StmtID)
	b = binary.LittleEndian.AppendUint16(b, r.NumColumns)
	b = binary.LittleEndian.AppendUint16(b, r.NumParams)
	b = append(b, 0)
	return binary.LittleEndian.AppendUint16(b, r.Warnings)
}
