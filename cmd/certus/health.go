package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func healthCmd() *cobra.Command {
	var httpAddr string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Exit 0 if a node is Synced and Primary (its /health), 1 otherwise",
		Long: `Ask a node's /health (HAProxy's check) and print its state. The exit
status is 0 when the node is Synced, Primary and in service, 1 otherwise:
a container health check for images that hold no other program.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			c := &http.Client{Timeout: timeout}
			resp, err := c.Get("http://" + httpAddr + "/health")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
			state := strings.TrimSpace(string(body))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("node %s is not ready: %s (%s)", httpAddr, state, resp.Status)
			}
			fmt.Println(state)
			return nil
		},
	}
	cmd.Flags().StringVar(&httpAddr, "http-addr", "127.0.0.1:8080", "HTTP address (--http-addr) of the node")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	return cmd
}
