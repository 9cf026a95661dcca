package sqlengine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/certusdb/certus/internal/clientconn"
	"github.com/certusdb/certus/sqlengine/internal/sqlvalue"
)

// The limits on client connections, as MySQL's variables set them:
// max_connections, connect_timeout, max_allowed_packet, wait_timeout,
// interactive_timeout, net_read_timeout, net_write_timeout and
// max_user_connections. internal/clientconn keeps those it can see in the
// bytes; the handler checks, at login, what needs the user.

// defaultMaxPacket is MySQL 8.0's max_allowed_packet (go-mysql-server's
// default is 1 GiB, which let one statement take gigabytes of memory).
const defaultMaxPacket = 64 << 20

// maxAllowedPacket is the global max_allowed_packet, read for every packet
// a client sends.
var maxAllowedPacket atomic.Int64

// maxPacketVar is max_allowed_packet with MySQL's default; its global
// value is kept in maxAllowedPacket.
func maxPacketVar() sql.SystemVariable {
	maxAllowedPacket.Store(defaultMaxPacket)
	return &sql.MysqlSystemVariable{Name: "max_allowed_packet", Scope: sql.GetMysqlScope(sql.SystemVariableScope_Both), Dynamic: true,
		Type: types.NewSystemIntType("max_allowed_packet", 1024, 1<<30, false), Default: int64(defaultMaxPacket),
		NotifyChanged: func(_ *sql.Context, scope sql.SystemVariableScope, v sql.SystemVarValue) error {
			if ms, global := scope.(*sql.MysqlScope); global && ms.Type == sql.SystemVariableScope_Global {
				n, _ := sqlvalue.AsInt(v.Val)
				maxAllowedPacket.Store(n)
			}
			return nil
		}}
}

// globalInt is a global integer variable's value (0 if unset).
func globalInt(name string) int64 {
	_, v, ok := sql.SystemVariables.GetGlobal(name)
	if !ok {
		return 0
	}
	n, _ := sqlvalue.AsInt(v)
	return n
}

// globalSeconds is a global variable that counts seconds.
func globalSeconds(name string) func() time.Duration {
	return func() time.Duration { return time.Duration(globalInt(name)) * time.Second }
}

// clientLimits are the limits of the server's client connections, and
// their TLS.
func clientLimits(cfg ServerConfig) clientconn.Limits {
	lim := clientconn.Limits{
		MaxConnections: func() int { return int(globalInt("max_connections")) },
		ConnectTimeout: globalSeconds("connect_timeout"),
		MaxPacket:      func() int { return int(maxAllowedPacket.Load()) },
		IdleTimeout:    globalSeconds("wait_timeout"),
		ReadTimeout:    globalSeconds("net_read_timeout"),
		WriteTimeout:   globalSeconds("net_write_timeout"),
		RequireSecure:  func() bool { return globalInt("require_secure_transport") != 0 },
		RSAKey:         cfg.RSAKey,
		Logger:         cfg.Logger,
	}
	if cfg.TLS != nil {
		lim.TLS = cfg.TLS.Config
	}
	return lim
}

// guardOf returns the connection guard under a protocol connection, if
// any.
func guardOf(c *mysql.Conn) *clientconn.Conn {
	if tc := trackConnOf(c); tc != nil {
		g, _ := tc.Conn.(*clientconn.Conn)
		return g
	}
	return nil
}

// admitted checks, once c's user is logged in, what MySQL checks then:
// past max_connections only a user with SUPER or CONNECTION_ADMIN may take
// the one connection kept for administrators (1040), and no user may hold
// more than max_user_connections (1203). It sets the connection's idle
// timeout from the session's wait_timeout (interactive_timeout for a
// client that said it is interactive).
func (h *Handler) admitted(c *mysql.Conn) error {
	s := h.session(c)
	if s == nil || h.listener == nil {
		return nil
	}
	ctx := context.Background()
	// c is not counted yet: the login's OK has not gone out
	if max := globalInt("max_connections"); max > 0 {
		if n := int64(h.listener.LoggedIn()); n > max || n == max &&
			!h.holds(ctx, s, sql.PrivilegeType_Super) && !h.holdsDynamic(ctx, s, "connection_admin") {
			return mysql.NewSQLError(mysql.ERConCount, "08004", "Too many connections")
		}
	}
	if max := globalInt("max_user_connections"); max > 0 && h.userConnections(c.User) >= max {
		return mysql.NewSQLError(mysql.ERTooManyUserConnections, "42000", "User %s already has more than 'max_user_connections' active connections", c.User)
	}
	h.mu.Lock()
	h.loginUsers[c.ConnectionID] = c.User
	h.mu.Unlock()
	g := guardOf(c)
	if err := h.secureEnough(ctx, s, g); err != nil {
		return err
	}
	if g != nil {
		name := "wait_timeout"
		if g.Interactive() {
			name = "interactive_timeout"
		}
		g.SetIdleTimeout(sessionSeconds(s, name))
		if name != "wait_timeout" {
			// MySQL's session wait_timeout starts as interactive_timeout
			// for such a client
			_ = s.SetSessionVariable(sql.NewEmptyContext(), "wait_timeout", int64(sessionSeconds(s, name)/time.Second))
		}
	}
	return nil
}

// sessionSeconds is a session variable counting seconds.
func sessionSeconds(s *Session, name string) time.Duration {
	v, err := s.GetSessionVariable(nil, name)
	if err != nil {
		return 0
	}
	n, _ := sqlvalue.AsInt(v)
	return time.Duration(n) * time.Second
}

// userConnections counts the admitted connections of user.
func (h *Handler) userConnections(user string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := int64(0)
	for _, u := range h.loginUsers {
		if u == user {
			n++
		}
	}
	return n
}

// idleTimeoutChanged gives c's guard its session's wait_timeout after a
// SET that may have changed it.
func (h *Handler) idleTimeoutChanged(c *mysql.Conn, s *Session) {
	if g := guardOf(c); g != nil && s != nil {
		g.SetIdleTimeout(sessionSeconds(s, "wait_timeout"))
	}
}
