package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/certusdb/certus/internal/execcomment"
)

// versionText is what `certus version` and `certus --version` print: the
// module version (or the VCS revision of a build from a checkout), the
// MySQL version the server reports, and how the binary was built.
func versionText() string {
	version, revision, modified, cgo := "(devel)", "", false, "off"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			case "CGO_ENABLED":
				if s.Value == "1" {
					cgo = "on"
				}
			}
		}
	}
	if revision != "" {
		version += " " + revision[:min(12, len(revision))]
		if modified {
			version += "+modified"
		}
	}
	return fmt.Sprintf("certus %s (MySQL %s-Certus protocol), %s %s/%s, cgo %s\n",
		version, execcomment.VersionText(), runtime.Version(), runtime.GOOS, runtime.GOARCH, cgo)
}

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary and how it was built",
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Print(versionText()) },
	}
}
