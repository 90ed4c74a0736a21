// Package embedded runs an in-process nats-server with JetStream, the
// default lionbus needs no NATS installation for: see [Start].
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/internal/logs"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
)

// Defaults of [Config].
const (
	// DefaultHost is the interface the embedded server listens on.
	DefaultHost = "127.0.0.1"
	// DefaultPort is the standard NATS client port.
	DefaultPort = 4222
	// RandomPort asks the embedded server for a free port.
	RandomPort = -1
	// ReadyTimeout bounds how long Start waits for the server
	// to accept connections when ctx has no earlier deadline.
	ReadyTimeout = 10 * time.Second
)

// ErrServerNotReady is returned by [Start] when the embedded server did
// not accept connections in time.
var ErrServerNotReady = errors.New("embedded: embedded server not ready for connections")

// ErrInsecureListen is returned by [Start] for a Host beyond the loopback
// interface without authentication (User and Password, or Token): anyone
// who can reach the port could otherwise read and write every branch.
var ErrInsecureListen = errors.New("embedded: refusing to listen beyond localhost without authentication")

// Config configures an embedded NATS server with JetStream.
type Config struct {
	// Host is the interface to listen on. Default DefaultHost
	// (loopback only).
	Host string

	// Logger receives the server's log lines. The zero value discards them.
	Logger zerolog.Logger

	// MaxPayload is the largest message the server accepts, in bytes.
	// 0 keeps the server default (1 MiB).
	MaxPayload int32

	// Port is the client port. 0 means DefaultPort; RandomPort (-1)
	// picks a free port (see [Server.ClientURL]).
	Port int

	// StoreDir is the JetStream storage directory. "" creates a temporary
	// directory that is removed by [Server.Shutdown].
	StoreDir string

	// User and Password, or Token, are what clients must present. They are
	// required when Host is not a loopback address (see
	// ErrInsecureListen).
	User     string
	Password string
	Token    string
}

// loopback reports whether host names only the local machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Server is a running embedded NATS server. It is safe for concurrent use.
type Server struct {
	ns      *server.Server
	tempDir string // removed on Shutdown; "" when StoreDir was given
	once    sync.Once
}

// Start starts an in-process nats-server with JetStream enabled and
// waits until it accepts connections: at most ReadyTimeout, or until ctx
// ends if that is sooner. It returns ErrServerNotReady (wrapped) when the
// server does not become ready in time, after shutting it down.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	host := cfg.Host
	if host == "" {
		host = DefaultHost
	}
	port := cfg.Port
	if port == 0 {
		port = DefaultPort
	}
	if port < RandomPort || port > 65535 {
		return nil, fmt.Errorf("embedded: invalid server port %d", cfg.Port)
	}
	if cfg.MaxPayload < 0 {
		return nil, fmt.Errorf("embedded: invalid server max payload %d", cfg.MaxPayload)
	}
	if (cfg.User == "") != (cfg.Password == "") || (cfg.User != "" && cfg.Token != "") {
		return nil, errors.New("embedded: set User with Password, or Token, not both")
	}
	if !loopback(host) && cfg.User == "" && cfg.Token == "" {
		return nil, fmt.Errorf("%w: host %q (set a user and password or a token, or listen on 127.0.0.1)", ErrInsecureListen, host)
	}
	s := &Server{}
	storeDir := cfg.StoreDir
	if storeDir == "" {
		dir, err := os.MkdirTemp("", "lionbus-js-*")
		if err != nil {
			return nil, fmt.Errorf("embedded: create temporary store dir: %w", err)
		}
		storeDir, s.tempDir = dir, dir
	}
	opts := &server.Options{
		ServerName:    "lionbus-embedded",
		Host:          host,
		Port:          port,
		JetStream:     true,
		StoreDir:      storeDir,
		MaxPayload:    cfg.MaxPayload,
		NoSigs:        true,
		NoLog:         logs.Discards(cfg.Logger),
		Username:      cfg.User,
		Password:      cfg.Password,
		Authorization: cfg.Token,
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		s.removeTemp()
		return nil, fmt.Errorf("embedded: configure embedded server: %w", err)
	}
	s.ns = ns
	if !opts.NoLog {
		lvl := cfg.Logger.GetLevel()
		ns.SetLogger(serverLogger{cfg.Logger}, lvl <= zerolog.DebugLevel, lvl <= zerolog.TraceLevel)
	}
	ns.Start()

	wait := ReadyTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		wait = time.Until(dl)
	}
	if !ns.ReadyForConnections(wait) {
		s.Shutdown()
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrServerNotReady, err)
		}
		return nil, fmt.Errorf("%w after %s", ErrServerNotReady, wait)
	}
	return s, nil
}

// ClientURL returns the URL clients use to connect, e.g.
// "nats://127.0.0.1:4222"; with RandomPort it names the port chosen.
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// NATSServer returns the underlying nats-server, for monitoring and tests.
func (s *Server) NATSServer() *server.Server { return s.ns }

// Shutdown stops the server, waits until it has stopped and removes the
// temporary store directory if Start created one.
//
// Shutdown is the embedded server's Stop (docs/architecture.md, "Stopping
// and logging"): it has nothing to drain, so it takes no context and
// returns no error, and keeps nats-server's name. It may be called any
// number of times, from any goroutine; every call returns once the server
// is down and the temporary store removed.
func (s *Server) Shutdown() {
	s.once.Do(func() {
		if s.ns != nil {
			s.ns.Shutdown()
			s.ns.WaitForShutdown()
		}
		s.removeTemp()
	})
}

func (s *Server) removeTemp() {
	if s.tempDir != "" {
		_ = os.RemoveAll(s.tempDir)
	}
}

// serverLogger adapts zerolog to the nats-server Logger interface.
type serverLogger struct{ l zerolog.Logger }

func (s serverLogger) Noticef(format string, v ...any) { s.l.Info().Msgf(format, v...) }
func (s serverLogger) Warnf(format string, v ...any)   { s.l.Warn().Msgf(format, v...) }
func (s serverLogger) Fatalf(format string, v ...any)  { s.l.Error().Msgf(format, v...) }
func (s serverLogger) Errorf(format string, v ...any)  { s.l.Error().Msgf(format, v...) }
func (s serverLogger) Debugf(format string, v ...any)  { s.l.Debug().Msgf(format, v...) }
func (s serverLogger) Tracef(format string, v ...any)  { s.l.Trace().Msgf(format, v...) }
