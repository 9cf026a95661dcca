// Package adminauth guards the HTTP endpoints of a node or a proxy that
// change the cluster or show its internals (/leave, /lead,
// /members/remove, /reload, /debug/...). With a token configured a request
// must carry it as "Authorization: Bearer TOKEN"; without one only
// clients on loopback are served, so that an HTTP port reachable from the
// network cannot be used to remove members or read profiles.
package adminauth

import (
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
)

// EnvToken is the environment variable the token may come from (instead
// of a file named on the command line).
const EnvToken = "CERTUS_ADMIN_TOKEN"

// Guard checks requests against one token ("" : loopback clients only).
type Guard struct {
	token []byte
}

// New returns a guard for token.
func New(token string) *Guard { return &Guard{token: []byte(token)} }

// Mode says, for the startup log, who the guarded endpoints serve.
func (g *Guard) Mode() string {
	if len(g.token) > 0 {
		return "bearer token"
	}
	return "loopback clients only (no admin token configured)"
}

// Wrap serves h only to requests the guard admits; others get 401 (no
// token sent) or 403 (a wrong token, or not on loopback without a token).
func (g *Guard) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code, msg := g.check(r); code != 0 {
			if code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="certus admin"`)
			}
			http.Error(w, msg, code)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// check returns the refusal for r (code 0: admitted).
func (g *Guard) check(r *http.Request) (int, string) {
	if len(g.token) == 0 {
		if loopback(r.RemoteAddr) {
			return 0, ""
		}
		return http.StatusForbidden, "admin endpoint: no admin token is configured (--admin-token-file or " + EnvToken + "), so only clients on loopback are served"
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return http.StatusUnauthorized, "admin endpoint: send the admin token as \"Authorization: Bearer TOKEN\""
	}
	sent, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(sent), g.token) != 1 {
		return http.StatusForbidden, "admin endpoint: wrong admin token"
	}
	return 0, ""
}

// loopback reports whether a request's remote address is on loopback.
func loopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Authorize adds token to a request a client sends ("" adds nothing).
func Authorize(r *http.Request, token string) {
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
}
