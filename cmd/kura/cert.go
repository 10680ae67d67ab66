package main

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kuradb/kura/internal/cert"
	"github.com/kuradb/kura/internal/membership"
)

// newCertCmd is `kura cert`: a development CA and the node and client certificates it
// signs, in CockroachDB's style (cockroach cert create-ca, create-node, create-client).
func newCertCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cert",
		Short: "Create a CA, node certificates and client certificates for TLS (docs/design/security.md)",
		Long: `cert creates a development certificate authority and the certificates it signs (ECDSA
P-256). A node certificate (OU kura-node, CN the node's --host label) serves clients and the
internode port and dials other nodes: start the node with --tls-cert-file DIR/node.crt
--tls-key-file DIR/node.key --tls-ca-cert-file DIR/ca.crt. A client certificate (OU
kura-client, CN the user) authenticates a client such as redis-cli --tls --cert. Existing
files are never replaced without --overwrite.`,
	}
	var certsDir, caDir string
	var overwrite bool
	flags := func(c *cobra.Command) *cobra.Command {
		c.Flags().StringVar(&certsDir, "certs-dir", "", "directory to write the certificate and key to (required)")
		c.Flags().BoolVar(&overwrite, "overwrite", false, "replace existing files")
		c.MarkFlagRequired("certs-dir")
		return c
	}
	withCA := func(c *cobra.Command) *cobra.Command {
		c.Flags().StringVar(&caDir, "ca-dir", "", "directory holding ca.crt and ca.key (default: --certs-dir); its ca.crt is copied to --certs-dir when that has none")
		return flags(c)
	}
	opts := func() cert.Options { return cert.Options{Overwrite: overwrite} }
	cmd.AddCommand(flags(&cobra.Command{
		Use:   "create-ca",
		Short: "Create a CA: ca.crt and ca.key (keep ca.key off the nodes)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := cert.CreateCA(certsDir, opts()); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "wrote %s and %s\n", filepath.Join(certsDir, cert.CAFile), filepath.Join(certsDir, cert.CAKeyFile))
			return nil
		},
	}))
	var host string
	var addrs []string
	createNode := withCA(&cobra.Command{
		Use:   "create-node",
		Short: "Create a node certificate: node.crt and node.key, for --host and the addresses clients and nodes dial",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := copyBundle(certsDir, caDir); err != nil {
				return err
			}
			if err := cert.CreateNode(certsDir, cmp.Or(caDir, certsDir), host, addrs, opts()); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "wrote %s and %s for host %s\n", filepath.Join(certsDir, cert.NodeFile), filepath.Join(certsDir, cert.NodeKeyFile), host)
			return nil
		},
	})
	createNode.Flags().StringVar(&host, "host", "", "the node's host label (its --host): the certificate's CN, which peers check against their ring (required)")
	createNode.Flags().StringSliceVar(&addrs, "addr", nil, "IP addresses and DNS names the node is reached at, comma-separated (localhost and --host are always included)")
	createNode.MarkFlagRequired("host")
	cmd.AddCommand(createNode)
	var user string
	createClient := withCA(&cobra.Command{
		Use:   "create-client",
		Short: "Create a client certificate: client.USER.crt and client.USER.key",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := copyBundle(certsDir, caDir); err != nil {
				return err
			}
			if err := cert.CreateClient(certsDir, cmp.Or(caDir, certsDir), user, opts()); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "wrote %s and %s for user %s\n", filepath.Join(certsDir, cert.ClientFile(user)), filepath.Join(certsDir, cert.ClientKeyFile(user)), user)
			return nil
		},
	})
	createClient.Flags().StringVar(&user, "user", "", "the user the certificate authenticates: its CN (required)")
	createClient.MarkFlagRequired("user")
	cmd.AddCommand(createClient)
	cmd.AddCommand(flags(&cobra.Command{
		Use:   "create-gossip-key",
		Short: "Create a gossip keyring file, gossip.keys, holding one new random key (for --gossip-keyring-file)",
		Long: `create-gossip-key writes gossip.keys: one random 32-byte AES-256 key, base64, for
--gossip-keyring-file on every node of a cluster. To roll a key on a running cluster, append
a new key (kura cert create-gossip-key --certs-dir elsewhere gives one) as a second line on
every node, then move it to the first line on every node, then delete the old line on every
node; nodes re-read the file within seconds.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			path := filepath.Join(certsDir, gossipKeyFile)
			if _, err := os.Stat(path); err == nil && !overwrite {
				return fmt.Errorf("cert: %s exists (--overwrite replaces it)", path)
			}
			if err := os.MkdirAll(certsDir, 0o755); err != nil {
				return fmt.Errorf("cert: %w", err)
			}
			if err := os.WriteFile(path, []byte(membership.NewKey()+"\n"), 0o600); err != nil {
				return fmt.Errorf("cert: %w", err)
			}
			fmt.Fprintf(c.OutOrStdout(), "wrote %s\n", path)
			return nil
		},
	}))
	return cmd
}

// gossipKeyFile is the keyring file kura cert create-gossip-key writes.
const gossipKeyFile = "gossip.keys"

// copyBundle copies caDir's ca.crt to certsDir when they differ and certsDir has none,
// so that a node's directory holds what --tls-ca-cert-file names.
func copyBundle(certsDir, caDir string) error {
	if caDir == "" || filepath.Clean(caDir) == filepath.Clean(certsDir) {
		return nil
	}
	dst := filepath.Join(certsDir, cert.CAFile)
	if _, err := os.Stat(dst); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	data, err := os.ReadFile(filepath.Join(caDir, cert.CAFile))
	if err != nil {
		return fmt.Errorf("cert: %w", err)
	}
	if err := os.MkdirAll(certsDir, 0o755); err != nil {
		return fmt.Errorf("cert: %w", err)
	}
	return os.WriteFile(dst, data, 0o644)
}
