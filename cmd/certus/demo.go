package main

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/certusdb/certus/internal/pki"
)

func demoCmd() *cobra.Command {
	var dataDir, host string
	var basePort, proxyPort int
	var nodes int
	var syncCommit, withTLS bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a local 3-node cluster in the foreground",
		Long: `Run a local cluster of --nodes certus processes on loopback and a certus proxy
in front of them (--proxy-port, its HTTP admin one port below; 0: no proxy),
print how to connect, and stop them cleanly on Ctrl-C. Data goes to a
temporary directory (removed on exit) unless --data-dir is given (kept, and
reused next time). With --tls the nodes' peer connections are mutual TLS and
their SQL ports offer TLS, with certificates from a CA made in <data-dir>/tls.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			if !withTLS && !loopbackHost(host) {
				return fmt.Errorf("--host %s is not a loopback address: add --tls, or the nodes' peer ports would be open to anyone who reaches them", host)
			}
			keep := dataDir != ""
			if !keep {
				if dataDir, err = os.MkdirTemp("", "certus-demo-"); err != nil {
					return err
				}
				defer os.RemoveAll(dataDir)
			}
			type proc struct {
				name, sql, http, peer string
				cmd                   *exec.Cmd
			}
			var procs []*proc
			for i := 1; i <= nodes; i++ {
				p := &proc{
					name: fmt.Sprintf("node%d", i),
					sql:  net.JoinHostPort(host, strconv.Itoa(basePort+i-1)),
					http: net.JoinHostPort(host, strconv.Itoa(basePort+100+i-1)),
					peer: net.JoinHostPort(host, strconv.Itoa(basePort+200+i-1)),
				}
				if err := portsFree("--base-port", p.sql, p.http, p.peer); err != nil {
					return err
				}
				procs = append(procs, p)
			}
			var proxyAddr, proxyAdmin string
			if proxyPort != 0 {
				proxyAddr = net.JoinHostPort(host, strconv.Itoa(proxyPort))
				proxyAdmin = net.JoinHostPort(host, strconv.Itoa(proxyPort-1))
				if err := portsFree("--proxy-port", proxyAddr, proxyAdmin); err != nil {
					return err
				}
			}
			var wg sync.WaitGroup
			stopAll := func() {
				for _, p := range procs {
					if p.cmd != nil && p.cmd.Process != nil {
						_ = p.cmd.Process.Signal(syscall.SIGTERM)
					}
				}
				wg.Wait()
			}
			// A kept data dir that already holds the cluster restarts it:
			// a member alone is no majority, so every node starts before
			// any is waited for. A new cluster grows one node at a time.
			restart := false
			if _, err := os.Stat(filepath.Join(dataDir, procs[0].name, "db")); err == nil {
				restart = true
			}
			waitSynced := func(p *proc) error {
				if err := waitHealthy(p.http, 60*time.Second); err != nil {
					stopAll()
					return fmt.Errorf("%s did not become Synced: %w", p.name, err)
				}
				return nil
			}
			// start runs certus with args as p, its output prefixed with
			// p's name
			start := func(p *proc, args ...string) error {
				c := exec.Command(self, args...)
				out, _ := c.StdoutPipe()
				c.Stderr = c.Stdout
				if err := c.Start(); err != nil {
					stopAll()
					return err
				}
				p.cmd = c
				wg.Add(1)
				go func(p *proc, r io.Reader) {
					defer wg.Done()
					s := bufio.NewScanner(r)
					for s.Scan() {
						fmt.Fprintf(os.Stderr, "[%s] %s\n", p.name, s.Text())
					}
					_ = p.cmd.Wait()
				}(p, out)
				return nil
			}
			caDir := filepath.Join(dataDir, "tls")
			var https []string
			for i, p := range procs {
				a := []string{"node", "--name", p.name, "--data-dir", filepath.Join(dataDir, p.name),
					"--sql-addr", p.sql, "--http-addr", p.http, "--peer-addr", p.peer,
					"--sync-commit=" + strconv.FormatBool(syncCommit)}
				if withTLS {
					tlsArgs, err := demoCert(caDir, p.name, host)
					if err != nil {
						return err
					}
					a = append(a, tlsArgs...)
				}
				if i > 0 {
					a = append(a, "--join", procs[0].peer)
				}
				https = append(https, p.http)
				if err := start(p, a...); err != nil {
					return err
				}
				if restart {
					continue
				}
				if err := waitSynced(p); err != nil {
					return err
				}
			}
			if restart {
				for _, p := range procs {
					if err := waitSynced(p); err != nil {
						return err
					}
				}
			}
			nodeProcs := procs
			// the proxy's root account has a password of its own (the
			// nodes admit root from loopback only, the proxy's clients
			// come from wherever --host lets them)
			var proxyPassword string
			if proxyAddr != "" {
				px := &proc{name: "proxy", sql: proxyAddr, http: proxyAdmin}
				procs = append(procs, px)
				cfgPath := filepath.Join(dataDir, "proxy.json")
				if proxyPassword, err = writeDemoProxyConfig(cfgPath); err != nil {
					stopAll()
					return err
				}
				if err := start(px, "proxy", "--listen", proxyAddr, "--admin-listen", proxyAdmin,
					"--cluster", strings.Join(https, ","), "--config", cfgPath); err != nil {
					return err
				}
				if err := waitProxy(proxyAdmin, len(nodeProcs), 30*time.Second); err != nil {
					stopAll()
					return err
				}
			}
			fmt.Printf("\nCertus demo cluster is up: %d nodes, data in %s\n\n", nodes, dataDir)
			for i, p := range procs {
				h, port, _ := net.SplitHostPort(p.sql)
				login := "-u root"
				if p.name == "proxy" {
					login += " -p" + proxyPassword
				}
				if withTLS && i < len(nodeProcs) {
					login += " --ssl-ca " + filepath.Join(caDir, "ca.pem")
				}
				fmt.Printf("  %-5s  mysql -h %s -P %s %s      (http://%s/status)\n", p.name, h, port, login, p.http)
			}
			if withTLS {
				fmt.Printf("\nPeer connections are mutual TLS; CA and certificates in %s.\n", caDir)
			}
			fmt.Printf("\nEvery node takes reads and writes. Try: SET SESSION wsrep_sync_wait=1 for causal reads.\n")
			if proxyAddr != "" {
				fmt.Printf("The proxy sends writes to one node and spreads reads over all, each session's\nreads seeing its own commits (http://%s/backends lists the nodes).\n", proxyAdmin)
			}
			fmt.Printf("Press Ctrl-C to stop.\n\n")
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
			<-sig
			fmt.Fprintln(os.Stderr, "stopping the cluster...")
			stopAll()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data-dir", "", "keep the nodes' data under this directory (default: a temporary one)")
	f.StringVar(&host, "host", "127.0.0.1", "address to listen on")
	f.IntVar(&basePort, "base-port", 3307, "first node's SQL port; HTTP ports are +100, peer ports +200")
	f.IntVar(&proxyPort, "proxy-port", 6033, "the proxy's SQL port, its HTTP admin port one below (0: no proxy)")
	f.IntVar(&nodes, "nodes", 3, "number of nodes")
	f.BoolVar(&syncCommit, "sync-commit", true, "fsync the log at each commit")
	f.BoolVar(&withTLS, "tls", false, "run the nodes with peer TLS and client TLS, from a CA made in <data-dir>/tls")
	return cmd
}

// demoCert issues the certificate of demo node name from the CA of caDir
// (both made if missing) and returns the node's TLS flags: the same
// certificate serves its peers and its SQL port.
func demoCert(caDir, name, host string) ([]string, error) {
	ca, err := pki.NewCA(caDir, "Certus demo CA")
	if err != nil {
		return nil, err
	}
	cert, key := filepath.Join(caDir, name+"-cert.pem"), filepath.Join(caDir, name+"-key.pem")
	if _, err := os.Stat(cert); err != nil {
		if err := ca.Issue(cert, key, name, []string{host, "localhost", "127.0.0.1", "::1"}); err != nil {
			return nil, err
		}
	}
	caFile := filepath.Join(caDir, "ca.pem")
	return []string{"--peer-cert", cert, "--peer-key", key, "--peer-ca", caFile, "--ssl-cert", cert, "--ssl-key", key, "--ssl-ca", caFile}, nil
}

// loopbackHost says whether host is a loopback address or localhost.
func loopbackHost(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// portsFree fails if one of addrs cannot be listened on; flag names the
// option that moves them.
func portsFree(flag string, addrs ...string) error {
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return fmt.Errorf("port %s is busy (choose another %s): %w", a, flag, err)
		}
		ln.Close()
	}
	return nil
}

// writeDemoProxyConfig writes the demo proxy's configuration to path: a
// root account with a new random password, which it returns, that runs
// as the nodes' root.
func writeDemoProxyConfig(path string) (string, error) {
	b := make([]byte, 9)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	password := base64.RawURLEncoding.EncodeToString(b)
	cfg, err := json.Marshal(map[string]any{"users": []map[string]string{{"name": "root", "password": password, "backend_user": "root"}}})
	if err != nil {
		return "", err
	}
	return password, os.WriteFile(path, cfg, 0o600)
}

// waitProxy polls the proxy's admin /status at addr until it has a writer
// and the given number of readers.
func waitProxy(addr string, readers int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		var st struct {
			Writers []string `json:"writers"`
			Readers []string `json:"readers"`
		}
		if resp, err := http.Get("http://" + addr + "/status"); err == nil {
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err == nil && len(st.Writers) > 0 && len(st.Readers) >= readers {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the proxy at %s found no writer and %d readers after %v", addr, readers, timeout)
}

// waitHealthy polls http://addr/health until it answers 200.
func waitHealthy(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("no 200 from http://%s/health after %v", addr, timeout)
}
