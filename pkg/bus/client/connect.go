package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// Defaults of [ConnectConfig].
const (
	// DefaultURL is the NATS URL used when none is configured.
	DefaultURL = "nats://127.0.0.1:4222"
	// DefaultConnectTimeout bounds the initial connection.
	DefaultConnectTimeout = 5 * time.Second
	// DefaultReconnectWait is the pause between reconnection attempts
	// (plus up to as much again of jitter): short, so that a restarted
	// server has its clients back within a second, and a failed attempt
	// (a refused TCP connection) costs the server nothing.
	DefaultReconnectWait = 500 * time.Millisecond
	// DefaultReconnectBufSize bounds what is buffered while reconnecting.
	DefaultReconnectBufSize = 8 << 20 // 8 MiB
)

// ConnectConfig says how to reach a NATS server. At most one of
// User/Password, Token, NKeySeedFile and CredsFile may be set. The zero
// value connects without credentials to DefaultURL.
type ConnectConfig struct {
	// CredsFile is a decentralized-auth credentials file (JWT + nkey seed).
	CredsFile string

	// Logger receives disconnect, reconnect and error notices. The zero
	// value discards them.
	Logger zerolog.Logger

	// NKeySeedFile is a file holding a user nkey seed.
	NKeySeedFile string

	// InboxPrefix replaces "_INBOX" as the prefix of the connection's
	// reply subjects (JetStream deliveries and acknowledgements, request
	// replies), so that the server's permissions can give each user an
	// inbox no other user may subscribe to: a user allowed to subscribe
	// to "_INBOX.alice.>" only connects with InboxPrefix "_INBOX.alice".
	// It must be a literal subject (see [ValidInboxPrefix]). "" means
	// "_INBOX".
	InboxPrefix string

	// Name is the connection name shown by the server's monitoring.
	// Default "lionbus".
	Name string

	// Password goes with User.
	Password string

	// PasswordFile and TokenFile name files holding the password or the
	// token (see [ReadSecretFile]), read when connecting, so that the
	// secret appears on no command line. Each excludes its plain field.
	PasswordFile string
	TokenFile    string

	// TLSCAFile is a PEM file of the CAs that verify the server. Setting it
	// (or a client certificate) enables TLS even for a nats:// URL.
	TLSCAFile string

	// TLSCertFile and TLSKeyFile are the client certificate and key (PEM)
	// for servers that verify clients. Both or neither must be set.
	TLSCertFile string
	TLSKeyFile  string

	// Timeout bounds the initial connection (a ctx deadline that is sooner
	// wins). Default DefaultConnectTimeout.
	Timeout time.Duration

	// Token is an authentication token.
	Token string

	// URL is one server URL or a comma-separated list. Default DefaultURL.
	URL string

	// User is a user name for user/password authentication.
	User string
}

// Connect connects to NATS. The initial connection must succeed within the
// timeout (or before ctx ends): while no server answers (none is up yet),
// it tries again, every connectRetryWait; any other failure (refused
// credentials, say) ends it at once. After that, the connection reconnects
// forever, every DefaultReconnectWait plus jitter, buffering up to
// DefaultReconnectBufSize of publishes meanwhile. It returns
// ErrInvalidConfig (wrapped) for contradictory settings, and the nats.go
// error (for example nats.ErrAuthorization or nats.ErrNoServers) when the
// connection fails.
func Connect(ctx context.Context, cfg ConnectConfig) (*nats.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts, url, err := cfg.options(ctx)
	if err != nil {
		return nil, err
	}
	type result struct {
		nc  *nats.Conn
		err error
	}
	ch := make(chan result, 1)
	deadline := time.Now().Add(cfg.timeout(ctx))
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			nc, err := nats.Connect(url, opts...)
			if err == nil || !errors.Is(err, nats.ErrNoServers) || time.Until(deadline) < connectRetryWait {
				ch <- result{nc, err}
				return
			}
			select {
			case <-time.After(connectRetryWait):
			case <-stop:
				ch <- result{nil, err}
				return
			}
		}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("client: connect to %s: %w", RedactURL(url), r.err)
		}
		return r.nc, nil
	case <-ctx.Done():
		// The dial ends within the timeout; close what it produces.
		go func() {
			if r := <-ch; r.nc != nil {
				r.nc.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// connectRetryWait is how long Connect waits before trying again while no
// server answers.
const connectRetryWait = 250 * time.Millisecond

// timeout is how long the initial connection may take: cfg.Timeout (or
// DefaultConnectTimeout), or less when ctx ends sooner.
func (cfg ConnectConfig) timeout(ctx context.Context) time.Duration {
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultConnectTimeout
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	return timeout
}

// options turns cfg into nats.go options.
func (cfg ConnectConfig) options(ctx context.Context) ([]nats.Option, string, error) {
	if cfg.PasswordFile != "" {
		if cfg.Password != "" {
			return nil, "", fmt.Errorf("%w: set a password or a password file, not both", ErrInvalidConfig)
		}
		pw, err := ReadSecretFile(cfg.PasswordFile)
		if err != nil {
			return nil, "", err
		}
		cfg.Password = pw
	}
	if cfg.TokenFile != "" {
		if cfg.Token != "" {
			return nil, "", fmt.Errorf("%w: set a token or a token file, not both", ErrInvalidConfig)
		}
		tok, err := ReadSecretFile(cfg.TokenFile)
		if err != nil {
			return nil, "", err
		}
		cfg.Token = tok
	}
	auth := 0
	for _, set := range []bool{cfg.User != "" || cfg.Password != "", cfg.Token != "", cfg.NKeySeedFile != "", cfg.CredsFile != ""} {
		if set {
			auth++
		}
	}
	if auth > 1 {
		return nil, "", fmt.Errorf("%w: set only one of user/password, token, nkey seed file and creds file", ErrInvalidConfig)
	}
	if cfg.Password != "" && cfg.User == "" {
		return nil, "", fmt.Errorf("%w: a password needs a user", ErrInvalidConfig)
	}
	if (cfg.TLSCertFile == "") != (cfg.TLSKeyFile == "") {
		return nil, "", fmt.Errorf("%w: TLS client certificate and key must be set together", ErrInvalidConfig)
	}
	if cfg.Timeout < 0 {
		return nil, "", fmt.Errorf("%w: negative connect timeout %s", ErrInvalidConfig, cfg.Timeout)
	}
	if cfg.InboxPrefix != "" {
		if err := ValidInboxPrefix(cfg.InboxPrefix); err != nil {
			return nil, "", fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	url := cfg.URL
	if url == "" {
		url = DefaultURL
	}
	name := cfg.Name
	if name == "" {
		name = "lionbus"
	}
	timeout := cfg.timeout(ctx)
	log := cfg.Logger
	opts := []nats.Option{
		nats.Name(name),
		nats.Timeout(timeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(DefaultReconnectWait),
		nats.ReconnectJitter(DefaultReconnectWait, DefaultReconnectWait),
		nats.ReconnectBufSize(DefaultReconnectBufSize),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err != nil {
				log.Warn().Err(err).Str("name", name).Msg("nats disconnected")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info().Str("url", RedactURL(nc.ConnectedUrl())).Str("name", name).Msg("nats reconnected")
		}),
		nats.ErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
			ev := log.Error().Err(err).Str("name", name)
			if sub != nil {
				ev = ev.Str("subject", sub.Subject)
			}
			ev.Msg("nats error")
		}),
	}
	switch {
	case cfg.User != "":
		opts = append(opts, nats.UserInfo(cfg.User, cfg.Password))
	case cfg.Token != "":
		opts = append(opts, nats.Token(cfg.Token))
	case cfg.NKeySeedFile != "":
		opt, err := nats.NkeyOptionFromSeed(cfg.NKeySeedFile)
		if err != nil {
			return nil, "", fmt.Errorf("client: nkey seed file: %w", err)
		}
		opts = append(opts, opt)
	case cfg.CredsFile != "":
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(cfg.InboxPrefix))
	}
	if cfg.TLSCAFile != "" {
		opts = append(opts, nats.RootCAs(cfg.TLSCAFile))
	}
	if cfg.TLSCertFile != "" {
		opts = append(opts, nats.ClientCert(cfg.TLSCertFile, cfg.TLSKeyFile))
	}
	return opts, url, nil
}

// maxInboxPrefix bounds an inbox prefix: reply subjects add about 45 bytes
// to it, and subjects stay short.
const maxInboxPrefix = 128

// ValidInboxPrefix returns nil when p can prefix a connection's reply
// subjects: 1 to 128 bytes of dot-separated, non-empty tokens of printable
// ASCII without wildcards ("*", ">"), and not a "$" subject (those belong
// to the server and JetStream).
func ValidInboxPrefix(p string) error { return literalPrefix("inbox prefix", p) }

// literalPrefix checks p as ValidInboxPrefix does; what names p in errors.
func literalPrefix(what, p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%s is empty", what)
	case len(p) > maxInboxPrefix:
		return fmt.Errorf("%s is longer than %d bytes", what, maxInboxPrefix)
	case strings.HasPrefix(p, "$"):
		return fmt.Errorf("%s %q is a $ subject", what, p)
	}
	for _, tok := range strings.Split(p, ".") {
		if tok == "" {
			return fmt.Errorf("%s %q has an empty token", what, p)
		}
		for _, r := range tok {
			if r <= ' ' || r >= 0x7f || r == '*' || r == '>' {
				return fmt.Errorf("%s %q has a wildcard, a space or a character that is not printable ASCII", what, p)
			}
		}
	}
	return nil
}
