package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/certusdb/certus/internal/pki"
)

func certCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cert",
		Short: "Make a CA and the certificates it signs, for peer and client TLS",
		Long: `Make a certificate authority and certificates it signs. A member's certificate
is valid as a server and as a client, so the same files serve its peer
connections (--peer-cert, --peer-key, --peer-ca) and its SQL port (--ssl-cert,
--ssl-key, --ssl-ca):

  certus cert ca --dir ca
  certus cert issue --ca-dir ca --name n1 --host 10.0.0.1,db1.example.com --out n1-tls
  certus node --peer-cert n1-tls/n1-cert.pem --peer-key n1-tls/n1-key.pem --peer-ca ca/ca.pem ...

Keep ca/ca-key.pem away from the nodes: whoever holds it can make members.`,
	}
	var dir string
	ca := &cobra.Command{
		Use:   "ca",
		Short: "Make a CA (ca.pem, ca-key.pem) in --dir, or keep the one there",
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := pki.NewCA(dir, "Certus CA"); err != nil {
				return err
			}
			fmt.Printf("CA: %s (its key %s)\n", filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem"))
			return nil
		},
	}
	ca.Flags().StringVar(&dir, "dir", "", "directory of the CA")
	_ = ca.MarkFlagRequired("dir")

	var caDir, name, hosts, out string
	issue := &cobra.Command{
		Use:   "issue",
		Short: "Issue a member's certificate (<out>/<name>-cert.pem, <name>-key.pem) signed by the CA of --ca-dir",
		RunE: func(cmd *cobra.Command, args []string) error {
			ca, err := pki.LoadCA(caDir)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o700); err != nil {
				return err
			}
			cert, key := filepath.Join(out, name+"-cert.pem"), filepath.Join(out, name+"-key.pem")
			if err := ca.Issue(cert, key, name, splitList(hosts)); err != nil {
				return err
			}
			fmt.Printf("certificate: %s\nkey: %s\nCA: %s\n", cert, key, filepath.Join(caDir, "ca.pem"))
			return nil
		},
	}
	f := issue.Flags()
	f.StringVar(&caDir, "ca-dir", "", "directory of the CA (certus cert ca)")
	f.StringVar(&name, "name", "", "the member's name (the certificate's common name)")
	f.StringVar(&hosts, "host", "", "comma-separated host names and addresses the certificate is valid for (default: the name, localhost, 127.0.0.1, ::1)")
	f.StringVar(&out, "out", ".", "directory to write the certificate and key to")
	_ = issue.MarkFlagRequired("ca-dir")
	_ = issue.MarkFlagRequired("name")
	cmd.AddCommand(ca, issue)
	return cmd
}
