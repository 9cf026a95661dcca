package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/certusdb/certus/internal/adminauth"
)

// adminClient is the HTTP address of a node and the admin token its
// endpoints may require.
type adminClient struct {
	httpAddr string
	token    *secret
}

// addAdminClient registers --http-addr (with usage addrUsage) and the
// admin token's options on cmd.
func addAdminClient(cmd *cobra.Command, addrUsage string) *adminClient {
	a := &adminClient{}
	cmd.Flags().StringVar(&a.httpAddr, "http-addr", "127.0.0.1:8080", addrUsage)
	a.token = addSecret(cmd.Flags(), "", "admin-token-file", adminauth.EnvToken, "admin token of the node's HTTP port (the node's --admin-token-file)")
	return a
}

// post POSTs to the node's HTTP admin endpoint path and prints its answer.
func (a *adminClient) post(path string) error {
	token, err := a.token.get()
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+a.httpAddr+path, nil)
	if err != nil {
		return err
	}
	adminauth.Authorize(req, token)
	c := &http.Client{Timeout: 40 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	msg := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, msg)
	}
	fmt.Println(msg)
	return nil
}

func leaveCmd() *cobra.Command {
	var node *adminClient
	cmd := &cobra.Command{
		Use:   "leave",
		Short: "Remove a running node from its cluster cleanly; the node then stops",
		Long: `Remove a running node from its cluster: it hands leadership over if it
leads, its removal goes through the cluster's total order, and the node
stops. The others keep their quorum (the cluster shrinks by one). To join
again, start the node with an empty data dir and --join.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return node.post("/leave")
		},
	}
	node = addAdminClient(cmd, "HTTP address of the node that leaves")
	return cmd
}

func leadCmd() *cobra.Command {
	var node *adminClient
	cmd := &cobra.Command{
		Use:   "lead",
		Short: "Make a running node the cluster's leader",
		Long: `Make a running node the cluster's raft leader: the leader brings the
node's log up to its own and hands leadership over, without an election
timeout. Every node takes writes, but the others forward their write-sets
to the leader, so a cluster whose writes go to one node (a proxy's single
writer) commits with one hop less when that node leads. Also moves the
leader off a node before maintenance. Waits until the node leads (at most
30 s).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return node.post("/lead")
		},
	}
	node = addAdminClient(cmd, "HTTP address of the node to lead")
	return cmd
}

func removeCmd() *cobra.Command {
	var node *adminClient
	var name string
	cmd := &cobra.Command{
		Use:   "remove",
		Short: "Remove a member that is gone for good, through any running member",
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" {
				return fmt.Errorf("--name is required")
			}
			return node.post("/members/remove?name=" + url.QueryEscape(name))
		},
	}
	node = addAdminClient(cmd, "HTTP address of any running member")
	cmd.Flags().StringVar(&name, "name", "", "name (or id) of the member to remove")
	return cmd
}
