package sqlengine

import (
	"net"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/certusdb/certus/sqlengine/internal/mysqlexpr"
)

// USER() (and its synonyms SESSION_USER() and SYSTEM_USER()) names the
// user and the host the client connected from, as MySQL's does;
// CURRENT_USER() names the account, with its host pattern.
// go-mysql-server answered the account's host pattern for both, so a
// trigger that records USER() logged 'app@%' instead of 'app@10.0.0.7'.
func init() {
	wrap := func(ctx *sql.Context, inner sql.Function, args []sql.Expression) (sql.Expression, error) {
		e, err := inner.NewInstance(ctx, args)
		if u, ok := e.(function.User); ok && err == nil {
			return clientUser{u}, nil
		}
		return e, err
	}
	mysqlexpr.WrapBuiltIns(function.BuiltIns, map[string]mysqlexpr.BuiltInWrap{"user": wrap})
	for _, name := range []string{"session_user", "system_user"} { // not in go-mysql-server
		function.BuiltIns = append(function.BuiltIns, sql.NewFunction0(name, func(*sql.Context) sql.Expression {
			return clientUser{function.User{NoArgFunc: function.NoArgFunc{Name: name, SQLType: types.LongText}}}
		}))
	}
}

// clientUser is a call of USER().
type clientUser struct{ function.User }

// Eval implements sql.Expression.
func (u clientUser) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	s, ok := ctx.Session.(*Session)
	if !ok || s.clientHost == "" {
		return u.User.Eval(ctx, row)
	}
	return s.Client().User + "@" + s.clientHost, nil
}

// WithChildren implements sql.Expression.
func (u clientUser) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(u, len(children), 0)
	}
	return u, nil
}

// clientHostOf is the host a client at addr connected from, as MySQL
// names it: localhost for the loopback, else its address.
func clientHostOf(addr net.Addr) string {
	if addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "localhost" // a Unix socket
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return "localhost"
	}
	return host
}

// describeProcess gives process p of the process list what MySQL shows
// and go-mysql-server does not keep: its client's host and port (its
// host as USER() names it), not its account's host pattern, and its
// session's current database, not the one it connected with.
func (h *Handler) describeProcess(p *sql.Process) {
	h.mu.Lock()
	c, s := h.conns[p.Connection], h.sessions[p.Connection]
	h.mu.Unlock()
	if s != nil {
		p.Database = s.currentDatabase()
	}
	if c == nil {
		return
	}
	addr := c.RemoteAddr()
	p.Host = clientHostOf(addr)
	if _, port, err := net.SplitHostPort(addr.String()); err == nil {
		p.Host += ":" + port
	}
}
