package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/kuradb/kura/internal/cert"
)

// adminAuth is how `kura admin` reaches a node's admin endpoints: the user and password
// it sends (HTTP Basic, over TLS when the node serves it), and the CA that verifies the
// node. Set from kura admin's persistent flags; zero: plain HTTP without credentials.
type adminAuth struct {
	user, password string
	caFile         string // https when set
	client         *http.Client
}

var adminCreds = &adminAuth{}

// bindAdminAuth registers --user, --password and --cacert on cmd's persistent flags.
func bindAdminAuth(fs interface {
	StringVar(p *string, name, value, usage string)
}) {
	fs.StringVar(&adminCreds.user, "user", os.Getenv("KURA_USER"), "user allowed the admin category, for a node whose endpoints need one (default $KURA_USER, else \"default\" when a password is given)")
	fs.StringVar(&adminCreds.password, "password", "", "that user's password (default $KURA_PASSWORD)")
	fs.StringVar(&adminCreds.caFile, "cacert", os.Getenv("KURA_CACERT"), "CA certificate (bundle) that verifies a node serving its admin endpoints over TLS; setting it makes the requests https (default $KURA_CACERT)")
}

// request builds a request to path on the node at addr with the credentials set.
func (a *adminAuth) request(ctx context.Context, method, addr, path string, body io.Reader) (*http.Request, error) {
	scheme := "http://"
	if a.caFile != "" {
		scheme = "https://"
	}
	req, err := http.NewRequestWithContext(ctx, method, scheme+addr+path, body)
	if err != nil {
		return nil, err
	}
	pass := a.password
	if pass == "" {
		pass = os.Getenv("KURA_PASSWORD")
	}
	if user := a.user; user != "" || pass != "" {
		if user == "" {
			user = "default"
		}
		req.SetBasicAuth(user, pass)
	}
	return req, nil
}

// do sends req with the client --cacert calls for.
func (a *adminAuth) do(req *http.Request) (*http.Response, error) {
	if a.caFile == "" {
		return http.DefaultClient.Do(req)
	}
	if a.client == nil {
		tc, err := cert.ToolClientConfig(a.caFile, "", "", "")
		if err != nil {
			return nil, fmt.Errorf("--cacert: %w", err)
		}
		a.client = &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	}
	return a.client.Do(req)
}
