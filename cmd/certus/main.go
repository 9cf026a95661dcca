// Command certus is the Certus database: a MySQL-compatible, multi-primary,
// synchronously replicated SQL cluster with a consistency-aware proxy.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "certus",
		Short:         "Certus: a multi-primary, synchronously replicated MySQL-compatible cluster",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionText(),
	}
	root.SetVersionTemplate("{{.Version}}")
	root.AddCommand(nodeCmd(), demoCmd(), checksumCmd(), simCmd(), benchCmd(), versionCmd())
	root.AddCommand(proxyCmd(), arbitratorCmd(), leaveCmd(), leadCmd(), removeCmd(), healthCmd(), certCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "certus:", err)
		os.Exit(1)
	}
}
