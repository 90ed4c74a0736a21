// Package natsflags holds the command-line pieces the lionbus commands
// share: the NATS credential and TLS flags, turned into a
// client.ConnectConfig, and flags read from LIONBUS_<FLAG> environment
// variables.
package natsflags

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/client"
)

// Credentials are the flags that say how to authenticate to NATS and
// verify its TLS certificate. The server URL is not among them: each
// command declares its own --nats, with its own default and help.
type Credentials struct {
	User         string
	Password     string
	PasswordFile string
	Token        string
	TokenFile    string
	NKeySeed     string
	Creds        string
	TLSCert      string
	TLSKey       string
	TLSCA        string
	InboxPrefix  string
}

// Register declares --user, --password, --password-file, --token,
// --token-file, --nkey, --creds,
// --tls-cert, --tls-key, --tls-ca and --inbox-prefix on fs, bound to c, with c's current
// values as defaults (so that declaring them again on another flag set
// keeps what an earlier one parsed).
func (c *Credentials) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.User, "user", c.User, "NATS user name")
	fs.StringVar(&c.Password, "password", c.Password, "NATS password (visible in ps: prefer --password-file or LIONBUS_PASSWORD)")
	fs.StringVar(&c.PasswordFile, "password-file", c.PasswordFile, "file holding the NATS password")
	fs.StringVar(&c.Token, "token", c.Token, "NATS authentication token (visible in ps: prefer --token-file or LIONBUS_TOKEN)")
	fs.StringVar(&c.TokenFile, "token-file", c.TokenFile, "file holding the NATS authentication token")
	fs.StringVar(&c.NKeySeed, "nkey", c.NKeySeed, "NATS nkey seed file")
	fs.StringVar(&c.Creds, "creds", c.Creds, "NATS credentials file (JWT + nkey seed)")
	fs.StringVar(&c.TLSCert, "tls-cert", c.TLSCert, "TLS client certificate file")
	fs.StringVar(&c.TLSKey, "tls-key", c.TLSKey, "TLS client private key file")
	fs.StringVar(&c.TLSCA, "tls-ca", c.TLSCA, "TLS certificate authority file to verify the server")
	fs.StringVar(&c.InboxPrefix, "inbox-prefix", c.InboxPrefix, "prefix of the connection's reply subjects instead of _INBOX (the one the server's permissions give this user)")
}

// Validate checks what flag parsing alone cannot: a TLS client certificate
// needs its key and the other way round, a secret comes from its flag or
// its file, and an inbox prefix is a literal subject
// (client.ValidInboxPrefix).
func (c Credentials) Validate() error {
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	if c.Password != "" && c.PasswordFile != "" {
		return errors.New("--password and --password-file exclude each other")
	}
	if c.Token != "" && c.TokenFile != "" {
		return errors.New("--token and --token-file exclude each other")
	}
	if c.InboxPrefix != "" {
		if err := client.ValidInboxPrefix(c.InboxPrefix); err != nil {
			return fmt.Errorf("--inbox-prefix: %w", err)
		}
	}
	return nil
}

// Secrets returns the password and the token: the flags' values, or what
// --password-file and --token-file hold.
func (c Credentials) Secrets() (password, token string, err error) {
	password, token = c.Password, c.Token
	if c.PasswordFile != "" {
		if password, err = client.ReadSecretFile(c.PasswordFile); err != nil {
			return "", "", fmt.Errorf("--password-file: %w", err)
		}
	}
	if c.TokenFile != "" {
		if token, err = client.ReadSecretFile(c.TokenFile); err != nil {
			return "", "", fmt.Errorf("--token-file: %w", err)
		}
	}
	return password, token, nil
}

// ConnectConfig returns how to reach the NATS servers at url with these
// credentials; name is the connection name, timeout bounds connecting.
// The caller may set the remaining fields (Logger, ...).
func (c Credentials) ConnectConfig(url, name string, timeout time.Duration) client.ConnectConfig {
	return client.ConnectConfig{
		URL:          url,
		User:         c.User,
		Password:     c.Password,
		PasswordFile: c.PasswordFile,
		Token:        c.Token,
		TokenFile:    c.TokenFile,
		NKeySeedFile: c.NKeySeed,
		CredsFile:    c.Creds,
		TLSCertFile:  c.TLSCert,
		TLSKeyFile:   c.TLSKey,
		TLSCAFile:    c.TLSCA,
		InboxPrefix:  c.InboxPrefix,
		Name:         name,
		Timeout:      timeout,
	}
}
