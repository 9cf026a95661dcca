package adminauth

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestGuard(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("done")) })
	for _, tc := range []struct {
		name, token, remote, auth string
		want                      int
	}{
		{"no token, loopback v4", "", "127.0.0.1:5000", "", 200},
		{"no token, loopback v6", "", "[::1]:5000", "", 200},
		{"no token, other host", "", "10.1.2.3:5000", "", 403},
		{"no token, other host sending one", "", "10.1.2.3:5000", "Bearer x", 403},
		{"token, none sent", "s3cret", "127.0.0.1:5000", "", 401},
		{"token, wrong", "s3cret", "10.1.2.3:5000", "Bearer s3cre", 403},
		{"token, not bearer", "s3cret", "10.1.2.3:5000", "Basic s3cret", 403},
		{"token, right", "s3cret", "10.1.2.3:5000", "Bearer s3cret", 200},
	} {
		r := httptest.NewRequest(http.MethodPost, "/leave", nil)
		r.RemoteAddr = tc.remote
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		w := httptest.NewRecorder()
		New(tc.token).Wrap(ok).ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s: %d %q, want %d", tc.name, w.Code, w.Body.String(), tc.want)
		}
		if w.Code == 401 && w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", tc.name)
		}
	}
}
