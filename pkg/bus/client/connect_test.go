package client_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/embedded"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// runServer starts a nats-server with opts completed for a test.
func runServer(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host = "127.0.0.1"
	opts.Port = -1
	opts.NoLog = true
	opts.NoSigs = true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	return s
}

func TestConnect_credentials(t *testing.T) {
	t.Parallel()
	userSrv := runServer(t, &server.Options{Username: "alice", Password: "s3cret"})
	tokenSrv := runServer(t, &server.Options{Authorization: "tok-123"})

	nkey, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := nkey.PublicKey()
	seed, _ := nkey.Seed()
	seedFile := filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	otherKey, _ := nkeys.CreateUser()
	otherSeed, _ := otherKey.Seed()
	otherSeedFile := filepath.Join(t.TempDir(), "other.nk")
	if err := os.WriteFile(otherSeedFile, otherSeed, 0o600); err != nil {
		t.Fatal(err)
	}
	nkeySrv := runServer(t, &server.Options{Nkeys: []*server.NkeyUser{{Nkey: pub}}})
	secret := func(content string) string {
		f := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}

	tests := []struct {
		name string
		cfg  client.ConnectConfig
		ok   bool
	}{
		{"user and password", client.ConnectConfig{URL: userSrv.ClientURL(), User: "alice", Password: "s3cret"}, true},
		{"wrong password", client.ConnectConfig{URL: userSrv.ClientURL(), User: "alice", Password: "nope"}, false},
		{"no credentials", client.ConnectConfig{URL: userSrv.ClientURL()}, false},
		{"token", client.ConnectConfig{URL: tokenSrv.ClientURL(), Token: "tok-123"}, true},
		{"wrong token", client.ConnectConfig{URL: tokenSrv.ClientURL(), Token: "tok-999"}, false},
		{"nkey seed", client.ConnectConfig{URL: nkeySrv.ClientURL(), NKeySeedFile: seedFile}, true},
		{"unknown nkey", client.ConnectConfig{URL: nkeySrv.ClientURL(), NKeySeedFile: otherSeedFile}, false},
		{"password file", client.ConnectConfig{URL: userSrv.ClientURL(), User: "alice", PasswordFile: secret("s3cret\n")}, true},
		{"token file", client.ConnectConfig{URL: tokenSrv.ClientURL(), TokenFile: secret("tok-123\r\n")}, true},
		{"wrong token file", client.ConnectConfig{URL: tokenSrv.ClientURL(), TokenFile: secret("tok-999")}, false},
		{"empty token file", client.ConnectConfig{URL: tokenSrv.ClientURL(), TokenFile: secret("\n")}, false},
		{"missing token file", client.ConnectConfig{URL: tokenSrv.ClientURL(), TokenFile: "/nonexistent/token"}, false},
		{"token and token file", client.ConnectConfig{URL: tokenSrv.ClientURL(), Token: "tok-123", TokenFile: secret("tok-123")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			nc, err := client.Connect(context.Background(), tt.cfg)
			if tt.ok {
				if err != nil {
					t.Fatalf("Connect: %v", err)
				}
				defer nc.Close()
				if err := nc.Flush(); err != nil {
					t.Errorf("Flush: %v", err)
				}
				return
			}
			if err == nil {
				nc.Close()
				t.Fatal("Connect succeeded with bad credentials")
			}
		})
	}
}

// No secret reaches an error: not a token or password in the URL, not
// the content of a secret file.
func TestConnect_errors_hold_no_secret(t *testing.T) {
	t.Parallel()
	tokenSrv := runServer(t, &server.Options{Authorization: "right-token"})
	port := tokenSrv.Addr().(*net.TCPAddr).Port
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte("file-token-XYZ"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, make([]byte, client.MaxSecretFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, secret string
		cfg          client.ConnectConfig
	}{
		{"token in URL", "url-token-ABC", client.ConnectConfig{URL: fmt.Sprintf("nats://url-token-ABC@127.0.0.1:%d", port)}},
		{"password in URL", "pw-DEF", client.ConnectConfig{URL: fmt.Sprintf("nats://bob:pw-DEF@127.0.0.1:%d", port)}},
		{"URL list", "pw-GHI", client.ConnectConfig{URL: fmt.Sprintf("nats://127.0.0.1:1,nats://bob:pw-GHI@127.0.0.1:%d", port)}},
		{"token file", "file-token-XYZ", client.ConnectConfig{URL: tokenSrv.ClientURL(), TokenFile: f}},
		{"big file", "\x00\x00\x00", client.ConnectConfig{URL: tokenSrv.ClientURL(), TokenFile: big}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			nc, err := client.Connect(ctx, tt.cfg)
			if err == nil {
				nc.Close()
				t.Fatal("connected with a wrong secret")
			}
			if strings.Contains(err.Error(), tt.secret) {
				t.Fatalf("error shows the secret: %v", err)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://alice:s3cret@host:4222", "nats://alice:xxxxx@host:4222"},
		{"nats://tok-123@host:4222", "nats://xxxxx@host:4222"},
		{"nats://a:b@h1:1,nats://h2:2,tls://t@h3:3", "nats://a:xxxxx@h1:1,nats://h2:2,tls://xxxxx@h3:3"},
		{"not a url with secret@host", "xxxxx@host"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := client.RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestConnect_TLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := writeTestPKI(t, dir)
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{
		CertFile: filepath.Join(dir, "server.pem"),
		KeyFile:  filepath.Join(dir, "server-key.pem"),
		CaFile:   ca,
		Verify:   true,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := runServer(t, &server.Options{TLS: true, TLSVerify: true, TLSConfig: tc, TLSTimeout: 5})

	tests := []struct {
		name string
		cfg  client.ConnectConfig
		ok   bool
	}{
		{"mutual TLS", client.ConnectConfig{URL: s.ClientURL(), TLSCAFile: ca,
			TLSCertFile: filepath.Join(dir, "client.pem"), TLSKeyFile: filepath.Join(dir, "client-key.pem")}, true},
		{"no client certificate", client.ConnectConfig{URL: s.ClientURL(), TLSCAFile: ca}, false},
		{"unknown CA", client.ConnectConfig{URL: s.ClientURL(),
			TLSCertFile: filepath.Join(dir, "client.pem"), TLSKeyFile: filepath.Join(dir, "client-key.pem")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			nc, err := client.Connect(context.Background(), tt.cfg)
			if !tt.ok {
				if err == nil {
					nc.Close()
					t.Fatal("Connect succeeded")
				}
				return
			}
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			defer nc.Close()
			if !nc.TLSRequired() {
				t.Error("connection is not TLS")
			}
			if err := nc.Flush(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestConnect_embedded_server_same_path(t *testing.T) {
	t.Parallel()
	s, err := embedded.Start(context.Background(), embedded.Config{Port: embedded.RandomPort, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	nc, err := client.Connect(context.Background(), client.ConnectConfig{URL: s.ClientURL(), Name: "worker-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := nc.Opts.Name; got != "worker-1" {
		t.Errorf("connection name = %q", got)
	}
	if nc.Opts.MaxReconnect != -1 {
		t.Errorf("MaxReconnect = %d, want -1 (forever)", nc.Opts.MaxReconnect)
	}
}

func TestConnect_rejects_bad_config(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  client.ConnectConfig
	}{
		{"user and token", client.ConnectConfig{User: "a", Password: "b", Token: "t"}},
		{"token and creds", client.ConnectConfig{Token: "t", CredsFile: "x.creds"}},
		{"password without user", client.ConnectConfig{Password: "b"}},
		{"cert without key", client.ConnectConfig{TLSCertFile: "c.pem"}},
		{"negative timeout", client.ConnectConfig{Timeout: -time.Second}},
		{"inbox prefix with a wildcard", client.ConnectConfig{InboxPrefix: "_INBOX.*"}},
		{"inbox prefix ending in a dot", client.ConnectConfig{InboxPrefix: "_INBOX.alice."}},
		{"inbox prefix with an empty token", client.ConnectConfig{InboxPrefix: "_INBOX..alice"}},
		{"inbox prefix with a space", client.ConnectConfig{InboxPrefix: "_INBOX.al ice"}},
		{"inbox prefix of the system", client.ConnectConfig{InboxPrefix: "$JS.alice"}},
		{"inbox prefix too long", client.ConnectConfig{InboxPrefix: strings.Repeat("a", 129)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := client.Connect(context.Background(), tt.cfg); !errors.Is(err, client.ErrInvalidConfig) {
				t.Errorf("Connect = %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestConnect_honours_context(t *testing.T) {
	t.Parallel()
	// A listener that accepts and never speaks: the dial hangs until the
	// context ends.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = client.Connect(ctx, client.ConnectConfig{URL: "nats://" + ln.Addr().String(), Timeout: time.Minute})
	if err == nil {
		t.Fatal("Connect to a silent server succeeded")
	}
}

// writeTestPKI writes a CA, a server certificate for 127.0.0.1 and a client
// certificate into dir and returns the CA file.
func writeTestPKI(t *testing.T, dir string) string {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "lionbus test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, "ca.pem"), "CERTIFICATE", caDER)

	leaf := func(name string, serial int64, usage x509.ExtKeyUsage) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
			DNSNames:     []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, filepath.Join(dir, name+".pem"), "CERTIFICATE", der)
		writePEM(t, filepath.Join(dir, name+"-key.pem"), "EC PRIVATE KEY", keyDER)
	}
	leaf("server", 2, x509.ExtKeyUsageServerAuth)
	leaf("client", 3, x509.ExtKeyUsageClientAuth)
	return filepath.Join(dir, "ca.pem")
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestConnect_waits_for_a_server_that_starts_late: a worker started
// before its server connects once the server is up, within the timeout;
// with no server at all it gives up at the timeout.
func TestConnect_waits_for_a_server_that_starts_late(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	started := make(chan *embedded.Server, 1)
	go func() {
		time.Sleep(700 * time.Millisecond)
		srv, err := embedded.Start(context.Background(), embedded.Config{Port: port, StoreDir: t.TempDir()})
		if err != nil {
			t.Error(err)
		}
		started <- srv
	}()
	nc, err := client.Connect(context.Background(), client.ConnectConfig{URL: url, Timeout: 10 * time.Second})
	if srv := <-started; srv != nil {
		t.Cleanup(srv.Shutdown)
	}
	if err != nil {
		t.Fatalf("connect to a server that started late: %v", err)
	}
	nc.Close()

	noPort := freePort(t)
	start := time.Now()
	_, err = client.Connect(context.Background(), client.ConnectConfig{URL: fmt.Sprintf("nats://127.0.0.1:%d", noPort), Timeout: time.Second})
	if !errors.Is(err, nats.ErrNoServers) {
		t.Fatalf("connect with no server: %v, want ErrNoServers", err)
	}
	if waited := time.Since(start); waited < 700*time.Millisecond {
		t.Fatalf("gave up after %s, before its 1s timeout", waited)
	}
}

// freePort returns a TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// A connection with an inbox prefix receives its replies under it, so that
// a user allowed to subscribe to its own inbox only can still make requests;
// without the prefix, the same user's requests are refused.
func TestConnect_inbox_prefix(t *testing.T) {
	t.Parallel()
	opts := &server.Options{Users: []*server.User{
		{Username: "alice", Password: "pw", Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{"svc"}},
			Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.alice.>"}},
		}},
		{Username: "svc", Password: "pw"},
	}}
	s := runServer(t, opts)
	ctx := context.Background()
	svc, err := client.Connect(ctx, client.ConnectConfig{URL: s.ClientURL(), User: "svc", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if _, err := svc.Subscribe("svc", func(m *nats.Msg) { _ = m.Respond([]byte(m.Reply)) }); err != nil {
		t.Fatal(err)
	}
	if err := svc.Flush(); err != nil {
		t.Fatal(err)
	}

	nc, err := client.Connect(ctx, client.ConnectConfig{URL: s.ClientURL(), User: "alice", Password: "pw", InboxPrefix: "_INBOX.alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	m, err := nc.Request("svc", nil, 5*time.Second)
	if err != nil {
		t.Fatalf("request with the inbox prefix: %v", err)
	}
	if !strings.HasPrefix(string(m.Data), "_INBOX.alice.") {
		t.Errorf("reply subject %q is not under _INBOX.alice.", m.Data)
	}

	plain, err := client.Connect(ctx, client.ConnectConfig{URL: s.ClientURL(), User: "alice", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := plain.Request("svc", nil, time.Second); err == nil {
		t.Error("request without the inbox prefix succeeded; want it refused")
	}
}

func TestValidInboxPrefix(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"_INBOX", "_INBOX.alice", "_INBOX_worker", "inbox.tenant-a.alice_1"} {
		if err := client.ValidInboxPrefix(p); err != nil {
			t.Errorf("ValidInboxPrefix(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range []string{"", ".x", "x.", "a..b", "a.>", "a.*", "a*b", "a b", "a\tb", "$SYS.x", "été"} {
		if err := client.ValidInboxPrefix(p); err == nil {
			t.Errorf("ValidInboxPrefix(%q) = nil, want an error", p)
		}
	}
}
