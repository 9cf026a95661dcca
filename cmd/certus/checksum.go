package main

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/spf13/cobra"
)

func checksumCmd() *cobra.Command {
	var addrs, user, password string
	var wait time.Duration
	var verify bool
	cmd := &cobra.Command{
		Use:   "checksum --sql-addr HOST:PORT[,HOST:PORT...]",
		Short: "Compare the state digest of nodes at the same seqno",
		Long: `Print each node's digest of all replicated state (rows, index entries,
catalog) at its applied seqno. With several nodes it waits (up to --wait)
until they reach the same seqno and exits non-zero if their digests differ.
--verify recomputes each digest from a snapshot instead of trusting the
incrementally maintained one.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var dbs []*sql.DB
			list := strings.Split(addrs, ",")
			for _, a := range list {
				db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/?timeout=5s", user, password, strings.TrimSpace(a)))
				if err != nil {
					return err
				}
				defer db.Close()
				dbs = append(dbs, db)
			}
			fn := "CERTUS_STATE_DIGEST()"
			if verify {
				fn = "CERTUS_VERIFY_DIGEST()"
			}
			deadline := time.Now().Add(wait)
			for {
				results := make([]string, len(dbs))
				seqnos := make([]uint64, len(dbs))
				for i, db := range dbs {
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					err := db.QueryRowContext(ctx, "SELECT "+fn).Scan(&results[i])
					cancel()
					if err != nil {
						return fmt.Errorf("%s: %w", list[i], err)
					}
					seqnos[i], _ = strconv.ParseUint(strings.SplitN(results[i], ":", 2)[0], 10, 64)
				}
				same := true
				for _, s := range seqnos[1:] {
					same = same && s == seqnos[0]
				}
				if !same && time.Now().Before(deadline) {
					time.Sleep(200 * time.Millisecond)
					continue
				}
				bad := false
				for i, r := range results {
					fmt.Printf("%-22s %s\n", list[i], r)
					if strings.Contains(r, "MISMATCH") {
						bad = true
					}
				}
				if !same {
					return fmt.Errorf("nodes did not reach the same seqno within %v", wait)
				}
				for _, r := range results[1:] {
					if digestPart(r) != digestPart(results[0]) {
						bad = true
					}
				}
				if bad {
					return fmt.Errorf("digests differ")
				}
				if len(results) == 1 {
					fmt.Println("OK: the digest matches the node's data") // nothing to compare it with
					if !verify {
						fmt.Println("(one node: give several addresses to compare them, --verify to recompute the digest from the data)")
					}
					return nil
				}
				fmt.Printf("OK: identical state on %d nodes\n", len(results))
				return nil
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&addrs, "sql-addr", "127.0.0.1:3307", "comma-separated MySQL addresses of the nodes")
	f.StringVar(&user, "user", "root", "user")
	f.StringVar(&password, "password", "", "password")
	f.DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the nodes to reach the same seqno")
	f.BoolVar(&verify, "verify", false, "recompute digests from snapshots")
	return cmd
}

// digestPart returns "seqno:digest" of a digest result.
func digestPart(r string) string {
	p := strings.SplitN(r, ":", 3)
	if len(p) < 2 {
		return r
	}
	return p[0] + ":" + p[1]
}
