// Package config reads the proxy's configuration file (JSON).
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/certusdb/certus/proxy/mysqlproto"
	"github.com/certusdb/certus/proxy/rules"
)

// ErrInvalid is returned (wrapped) for a configuration that does not
// validate.
var ErrInvalid = errors.New("invalid proxy configuration")

// User is a client account of the proxy.
type User struct {
	Name     string `json:"name"`
	Password string `json:"password"`
	// PasswordEnv names an environment variable that holds the password,
	// instead of Password: the file then holds no secret.
	PasswordEnv string `json:"password_env"`
	// BackendUser and BackendPassword are the account this user's
	// statements run as on the nodes. Default: Config.BackendUser when
	// set, else the user's own name and password (as ProxySQL does), so
	// the nodes' grants apply to the user. BackendPasswordEnv is as
	// PasswordEnv.
	BackendUser        string `json:"backend_user"`
	BackendPassword    string `json:"backend_password"`
	BackendPasswordEnv string `json:"backend_password_env"`
	// Plugin is the authentication plugin clients log in with:
	// mysql_native_password (default) or caching_sha2_password.
	Plugin string `json:"plugin"`
}

// Duration is a time.Duration written as a string ("100ms") in JSON.
type Duration time.Duration

// UnmarshalJSON parses "100ms" (or a number of nanoseconds).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return err
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Config is the proxy's configuration. Command-line flags override the
// addresses.
type Config struct {
	// Listen is the MySQL protocol address for clients.
	Listen string `json:"listen"`
	// AdminListen is the HTTP admin address ("" disables it).
	AdminListen string `json:"admin_listen"`
	// Cluster lists nodes' HTTP addresses (--http-addr) to learn the
	// cluster from.
	Cluster []string `json:"cluster"`
	// Users are the accounts clients log in with; there is no default
	// account, so a proxy without users does not start.
	Users []User `json:"users"`
	// BackendUser and BackendPassword, when BackendUser is set, are the
	// account every user without one of its own runs as on the nodes.
	// Default: none, each user logs in to the nodes as itself.
	// BackendPasswordEnv is as User.PasswordEnv.
	BackendUser        string `json:"backend_user"`
	BackendPassword    string `json:"backend_password"`
	BackendPasswordEnv string `json:"backend_password_env"`
	// MaxWriters is the size of the writer hostgroup (default 1).
	MaxWriters int `json:"max_writers"`
	// WriterIsAlsoReader puts writers in the reader hostgroup too
	// (default true).
	WriterIsAlsoReader *bool `json:"writer_is_also_reader"`
	// MaxTransactionsBehind takes a node out of the reader hostgroup when
	// its applied seqno trails the highest by more (default 100).
	MaxTransactionsBehind uint64 `json:"max_transactions_behind"`
	// MonitorInterval is how often each node's /status is polled (default
	// 100ms).
	MonitorInterval Duration `json:"monitor_interval"`
	// CausalReads makes a session's reads see its own earlier commits
	// (default true).
	CausalReads *bool `json:"causal_reads"`
	// CausalWait bounds how long a read waits on a reader for the
	// session's last commit before falling back to the writer (default 1s).
	CausalWait Duration `json:"causal_wait"`
	// FailoverWait bounds how long a statement waits for a writer (or
	// retries one that the node refused with 1047) before failing
	// (default 10s).
	FailoverWait Duration `json:"failover_wait"`
	// MaxIdlePerNode bounds idle pooled connections per node (default 64).
	MaxIdlePerNode int `json:"max_idle_per_node"`
	// MaxConnections bounds the client connections open at once, logged
	// in or not (default 151, as MySQL's max_connections): one more gets
	// error 1040 and is disconnected.
	MaxConnections int `json:"max_connections"`
	// MaxAllowedPacket bounds a logged-in client's packets, in bytes
	// (default 64 MiB, as MySQL's max_allowed_packet): a longer one gets
	// error 1153 and the connection is closed.
	MaxAllowedPacket int `json:"max_allowed_packet"`
	// ConnectTimeout bounds a client's login, from its connection to its
	// authentication (default 10s, as MySQL's connect_timeout).
	ConnectTimeout Duration `json:"connect_timeout"`
	// WaitTimeout ends a logged-in client's connection once it has sent no
	// command for this long (default 8h, as MySQL's wait_timeout).
	WaitTimeout Duration `json:"wait_timeout"`
	// SSL offers clients TLS (default true). SSLCert and SSLKey are its
	// certificate and key, SSLCA the CA that verifies client certificates;
	// without SSLCert a self-signed CA and certificate are made in
	// DataDir/tls. SIGHUP and POST /reload read the files again.
	SSL     *bool  `json:"ssl"`
	SSLCert string `json:"ssl_cert"`
	SSLKey  string `json:"ssl_key"`
	SSLCA   string `json:"ssl_ca"`
	// RequireSecureTransport refuses clients without TLS (error 3159), as
	// MySQL's require_secure_transport.
	RequireSecureTransport bool `json:"require_secure_transport"`
	// DataDir holds the TLS material the proxy makes for itself and
	// caching_sha2_password's RSA key (default: the configuration file's
	// directory).
	DataDir string `json:"data_dir"`
	// BackendTLS makes the proxy's connections to the nodes use TLS;
	// BackendSSLCA is the CA their certificates are verified with (none:
	// encrypted, not verified).
	BackendTLS   bool   `json:"backend_tls"`
	BackendSSLCA string `json:"backend_ssl_ca"`
	// Rules are the query rules, in order.
	Rules []rules.Spec `json:"rules"`
}

// Load reads the file at path (or only the defaults when path is "").
func Load(path string) (*Config, error) {
	c := &Config{}
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, c); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
		}
	}
	if err := c.passwordsFromEnv(); err != nil {
		return nil, err
	}
	c.fill()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// passwordsFromEnv reads the passwords named by *_env fields.
func (c *Config) passwordsFromEnv() error {
	if err := fromEnv(&c.BackendPassword, c.BackendPasswordEnv, "backend_password"); err != nil {
		return err
	}
	for i := range c.Users {
		u := &c.Users[i]
		if err := fromEnv(&u.Password, u.PasswordEnv, "user "+u.Name+": password"); err != nil {
			return err
		}
		if err := fromEnv(&u.BackendPassword, u.BackendPasswordEnv, "user "+u.Name+": backend_password"); err != nil {
			return err
		}
	}
	return nil
}

// fromEnv sets *password from the environment variable env, when env is
// not "": a variable that is not set, or a password given both ways, is
// an error.
func fromEnv(password *string, env, what string) error {
	if env == "" {
		return nil
	}
	if *password != "" {
		return fmt.Errorf("%w: %s given both in the file and in %s", ErrInvalid, what, env)
	}
	v, ok := os.LookupEnv(env)
	if !ok {
		return fmt.Errorf("%w: %s: environment variable %s is not set", ErrInvalid, what, env)
	}
	*password = v
	return nil
}

func (c *Config) fill() {
	t := true
	if c.SSL == nil {
		c.SSL = &t
	}
	if c.MaxWriters == 0 {
		c.MaxWriters = 1
	}
	if c.WriterIsAlsoReader == nil {
		c.WriterIsAlsoReader = &t
	}
	if c.MaxTransactionsBehind == 0 {
		c.MaxTransactionsBehind = 100
	}
	if c.MonitorInterval == 0 {
		c.MonitorInterval = Duration(100 * time.Millisecond)
	}
	if c.CausalReads == nil {
		c.CausalReads = &t
	}
	if c.CausalWait == 0 {
		c.CausalWait = Duration(time.Second)
	}
	if c.FailoverWait == 0 {
		c.FailoverWait = Duration(10 * time.Second)
	}
	if c.MaxIdlePerNode == 0 {
		c.MaxIdlePerNode = 64
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = 151
	}
	if c.MaxAllowedPacket == 0 {
		c.MaxAllowedPacket = mysqlproto.DefaultMaxPayload
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = Duration(10 * time.Second)
	}
	if c.WaitTimeout == 0 {
		c.WaitTimeout = Duration(8 * time.Hour)
	}
}

// Backend returns the account (name, password) client user u runs as on
// the nodes.
func (c *Config) Backend(u User) (name, password string) {
	switch {
	case u.BackendUser != "":
		return u.BackendUser, u.BackendPassword
	case c.BackendUser != "":
		return c.BackendUser, c.BackendPassword
	}
	return u.Name, u.Password
}

// Validate checks the configuration, including compiling its rules.
func (c *Config) Validate() error {
	if c.MaxWriters < 0 {
		return fmt.Errorf("%w: max_writers %d", ErrInvalid, c.MaxWriters)
	}
	if c.MonitorInterval < Duration(time.Millisecond) {
		return fmt.Errorf("%w: monitor_interval %v", ErrInvalid, time.Duration(c.MonitorInterval))
	}
	if c.MaxConnections < 1 {
		return fmt.Errorf("%w: max_connections %d", ErrInvalid, c.MaxConnections)
	}
	if c.MaxAllowedPacket < 1<<10 || c.MaxAllowedPacket > 1<<30 {
		return fmt.Errorf("%w: max_allowed_packet %d (from 1024 to 1073741824, as in MySQL)", ErrInvalid, c.MaxAllowedPacket)
	}
	if c.ConnectTimeout < 0 || c.WaitTimeout < 0 {
		return fmt.Errorf("%w: connect_timeout %v, wait_timeout %v", ErrInvalid, time.Duration(c.ConnectTimeout), time.Duration(c.WaitTimeout))
	}
	if (c.SSLCert == "") != (c.SSLKey == "") {
		return fmt.Errorf("%w: ssl_cert and ssl_key go together", ErrInvalid)
	}
	if c.RequireSecureTransport && c.SSL != nil && !*c.SSL {
		return fmt.Errorf("%w: require_secure_transport without ssl", ErrInvalid)
	}
	if len(c.Users) == 0 {
		return fmt.Errorf("%w: no users: list the accounts clients log in with in the configuration file's \"users\" (the proxy has no default account)", ErrInvalid)
	}
	seen := map[string]bool{}
	for _, u := range c.Users {
		if u.Name == "" {
			return fmt.Errorf("%w: a user without a name", ErrInvalid)
		}
		if seen[u.Name] {
			return fmt.Errorf("%w: user %q listed twice", ErrInvalid, u.Name)
		}
		if u.Plugin != "" && u.Plugin != mysqlproto.NativePassword && u.Plugin != mysqlproto.CachingSha2 {
			return fmt.Errorf("%w: user %q: plugin %q (%s or %s)", ErrInvalid, u.Name, u.Plugin, mysqlproto.NativePassword, mysqlproto.CachingSha2)
		}
		seen[u.Name] = true
	}
	if _, err := rules.Compile(c.Rules); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}
