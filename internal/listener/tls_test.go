package listener_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/kuradb/kura/internal/cert"
	"github.com/kuradb/kura/internal/listener"
	"github.com/kuradb/kura/internal/transport"
)

// tlsNode is a node's certificate source, from a CA shared by the test.
func tlsNode(t *testing.T, caDir, host string) *cert.Source {
	t.Helper()
	dir := t.TempDir()
	if err := cert.CreateNode(dir, caDir, host, []string{"127.0.0.1"}, cert.Options{}); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(caDir, cert.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, cert.CAFile), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := cert.NewSource(cert.Files{Cert: filepath.Join(dir, cert.NodeFile), Key: filepath.Join(dir, cert.NodeKeyFile),
		CA: filepath.Join(dir, cert.CAFile)}, cert.SourceOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tlsInternode starts an echoing transport server behind a Mux behind a TLS listener, as
// a node with --tls-internode does, and returns the Mux.
func tlsInternode(t *testing.T, src *cert.Source) *listener.Mux {
	t.Helper()
	ln, err := listener.ListenTLS(listener.Nodes, "127.0.0.1:0", src.NodeServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	m := listener.NewMux(ln)
	srv, err := transport.NewServer(transport.HandlerFunc(func(_ context.Context, method uint16, p []byte) ([]byte, error) {
		return append([]byte{byte(method)}, p...), nil
	}), transport.ServerConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(m.Default()) }()
	t.Cleanup(func() {
		srv.Close()
		<-served
		m.Close()
	})
	return m
}

// call makes one transport call to addr through a client dialing with cfg.
func call(t *testing.T, addr string, cfg *tls.Config) error {
	t.Helper()
	cl, err := transport.NewClient(addr, transport.ClientConfig{Dial: (&tls.Dialer{Config: cfg}).DialContext})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := cl.Call(context.Background(), 9, []byte{1})
	if err == nil && !bytes.Equal(resp, []byte{9, 1}) {
		t.Fatalf("echo answered %v", resp)
	}
	return err
}

func TestTLSInternodeCarriesTransportAndRaftConnections(t *testing.T) {
	ca := t.TempDir()
	if err := cert.CreateCA(ca, cert.Options{}); err != nil {
		t.Fatal(err)
	}
	m := tlsInternode(t, tlsNode(t, ca, "h1"))
	peer := tlsNode(t, ca, "h2")
	if err := call(t, m.Addr().String(), peer.NodeClientConfig("h1")); err != nil {
		t.Fatalf("a node's call over TLS: %v", err)
	}
	raftSide := acceptAsync(m.Raft())
	rc, err := listener.RaftDialer(peer.NodeClientConfig(""))(m.Addr().String(), waitBound)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, ok := rc.(*tls.Conn); !ok {
		t.Fatalf("RaftDialer returned a %T, want a TLS connection", rc)
	}
	rc.Write([]byte("vote"))
	a := wait(t, raftSide, "raft listener behind TLS")
	if a.err != nil {
		t.Fatal(a.err)
	}
	defer a.c.Close()
	buf := make([]byte, 4)
	if _, err := io.ReadFull(a.c, buf); err != nil || string(buf) != "vote" {
		t.Fatalf("raft side read %q, %v", buf, err)
	}
}

func TestTLSInternodeRefusesWhatIsNotTheExpectedNode(t *testing.T) {
	ca := t.TempDir()
	if err := cert.CreateCA(ca, cert.Options{}); err != nil {
		t.Fatal(err)
	}
	m := tlsInternode(t, tlsNode(t, ca, "h1"))
	addr := m.Addr().String()
	peer := tlsNode(t, ca, "h2")

	noCert := peer.NodeClientConfig("h1")
	noCert.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tls.Certificate{}, nil }
	if err := call(t, addr, noCert); err == nil {
		t.Error("a call without a client certificate was served")
	}

	dir := t.TempDir()
	if err := cert.CreateClient(dir, ca, "alice", cert.Options{}); err != nil {
		t.Fatal(err)
	}
	alice, err := tls.LoadX509KeyPair(filepath.Join(dir, cert.ClientFile("alice")), filepath.Join(dir, cert.ClientKeyFile("alice")))
	if err != nil {
		t.Fatal(err)
	}
	asClient := peer.NodeClientConfig("h1")
	asClient.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &alice, nil }
	if err := call(t, addr, asClient); err == nil {
		t.Error("a call with a kura-client certificate of the same CA was served")
	}

	// The ring says the node at addr is on h3; its certificate says h1.
	if err := call(t, addr, peer.NodeClientConfig("h3")); !errors.Is(err, cert.ErrIdentity) {
		t.Errorf("dialing h3 and meeting h1: %v, want cert.ErrIdentity", err)
	}

	// Nor does a plain client get an answer.
	cl, err := transport.NewClient(addr, transport.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if _, err := cl.Call(ctx, 9, nil); err == nil {
		t.Error("a plain call was served on a TLS internode port")
	}
}
