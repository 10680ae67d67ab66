package main

import (
	"bytes"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/cert"
)

func runCLI(args ...string) (string, error) {
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestCertCommandsMakeAWorkingNodeDirectory(t *testing.T) {
	ca, node := filepath.Join(t.TempDir(), "ca"), filepath.Join(t.TempDir(), "n1")
	for _, args := range [][]string{
		{"cert", "create-ca", "--certs-dir", ca},
		{"cert", "create-node", "--certs-dir", node, "--ca-dir", ca, "--host", "h1", "--addr", "10.0.0.1,db1.example"},
		{"cert", "create-client", "--certs-dir", node, "--ca-dir", ca, "--user", "alice"},
	} {
		if out, err := runCLI(args...); err != nil {
			t.Fatalf("kura %v: %v\n%s", args, err, out)
		}
	}
	s, err := cert.NewSource(cert.Files{Cert: filepath.Join(node, cert.NodeFile), Key: filepath.Join(node, cert.NodeKeyFile),
		CA: filepath.Join(node, cert.CAFile)}, cert.SourceOptions{})
	if err != nil {
		t.Fatalf("the node directory does not load as --tls-* files: %v", err)
	}
	if c := s.Certificate(); c.Subject.CommonName != "h1" || !slices.Contains(c.DNSNames, "db1.example") {
		t.Fatalf("node certificate %v %v", c.Subject, c.DNSNames)
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(node, cert.ClientFile("alice")), filepath.Join(node, cert.ClientKeyFile("alice"))); err != nil {
		t.Fatalf("client certificate: %v", err)
	}
	// Nothing is replaced without --overwrite.
	before, _ := os.ReadFile(filepath.Join(ca, cert.CAKeyFile))
	if _, err := runCLI("cert", "create-ca", "--certs-dir", ca); !errors.Is(err, cert.ErrExists) {
		t.Fatalf("create-ca over a CA: %v, want cert.ErrExists", err)
	}
	if after, _ := os.ReadFile(filepath.Join(ca, cert.CAKeyFile)); !bytes.Equal(before, after) {
		t.Fatal("a refused create-ca replaced ca.key")
	}
	if out, err := runCLI("cert", "create-node", "--certs-dir", node, "--ca-dir", ca, "--host", "h1", "--overwrite"); err != nil {
		t.Fatalf("create-node --overwrite: %v\n%s", err, out)
	}
	if _, err := runCLI("cert", "create-node", "--certs-dir", node, "--ca-dir", ca); err == nil {
		t.Fatal("create-node without --host succeeded")
	}
}
