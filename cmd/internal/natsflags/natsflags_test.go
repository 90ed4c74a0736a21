package natsflags

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestCredentials_flags_to_connect_config(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, c Credentials)
	}{
		{name: "none", check: func(t *testing.T, c Credentials) {
			if c != (Credentials{}) {
				t.Errorf("credentials = %+v, want none", c)
			}
		}},
		{name: "all", args: []string{"--user", "u", "--password", "p", "--token", "t", "--nkey", "n.seed", "--creds", "x.creds",
			"--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-ca", "ca.pem", "--inbox-prefix", "_INBOX.u"},
			check: func(t *testing.T, c Credentials) {
				cc := c.ConnectConfig("nats://h:4222", "conn", 3*time.Second)
				if cc.URL != "nats://h:4222" || cc.Name != "conn" || cc.Timeout != 3*time.Second ||
					cc.User != "u" || cc.Password != "p" || cc.Token != "t" || cc.NKeySeedFile != "n.seed" || cc.CredsFile != "x.creds" ||
					cc.TLSCertFile != "c.pem" || cc.TLSKeyFile != "k.pem" || cc.TLSCAFile != "ca.pem" || cc.InboxPrefix != "_INBOX.u" {
					t.Errorf("connect config = %+v", cc)
				}
			}},
		{name: "cert without key", args: []string{"--tls-cert", "c.pem"}, wantErr: "--tls-cert and --tls-key go together"},
		{name: "key without cert", args: []string{"--tls-key", "k.pem"}, wantErr: "--tls-cert and --tls-key go together"},
		{name: "inbox prefix with a wildcard", args: []string{"--inbox-prefix", "_INBOX.>"}, wantErr: "--inbox-prefix"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Credentials
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			c.Register(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := c.Validate()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Validate() = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestCredentials_Register_keeps_current_values(t *testing.T) {
	c := Credentials{User: "first"}
	fs := flag.NewFlagSet("again", flag.ContinueOnError)
	c.Register(fs)
	if err := fs.Parse([]string{"--token", "t"}); err != nil {
		t.Fatal(err)
	}
	if c.User != "first" || c.Token != "t" {
		t.Errorf("credentials = %+v, want user kept and token set", c)
	}
}

func TestSetFromEnv(t *testing.T) {
	env := map[string]string{"LIONBUS_USER": "envuser", "LIONBUS_TLS_CA": "ca.pem", "LIONBUS_COUNT": "seven"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		name      string
		use       func(string) bool
		wantUser  string
		wantCA    string
		wantErrIn string
	}{
		{name: "all but count", use: func(n string) bool { return n != "count" }, wantUser: "envuser", wantCA: "ca.pem"},
		{name: "only tls-ca", use: func(n string) bool { return n == "tls-ca" }, wantCA: "ca.pem"},
		{name: "a bad value names its variable", use: func(string) bool { return true }, wantErrIn: "LIONBUS_COUNT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Credentials
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			c.Register(fs)
			fs.Int("count", 0, "a number")
			err := SetFromEnv(fs, tc.use, lookup)
			if tc.wantErrIn != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrIn) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErrIn)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.User != tc.wantUser || c.TLSCA != tc.wantCA {
				t.Errorf("user %q ca %q, want %q %q", c.User, c.TLSCA, tc.wantUser, tc.wantCA)
			}
		})
	}
}

func TestEnvName(t *testing.T) {
	for name, want := range map[string]string{"nats": "LIONBUS_NATS", "tls-ca": "LIONBUS_TLS_CA", "drain-timeout": "LIONBUS_DRAIN_TIMEOUT"} {
		if got := EnvName(name); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", name, got, want)
		}
	}
}
