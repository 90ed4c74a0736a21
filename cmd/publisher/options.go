package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/lionbus/lionbus/pkg/bus"
)

// Defaults of the global flags.
const (
	defaultURL     = "nats://127.0.0.1:4222"
	defaultTimeout = 60 * time.Second
)

// options are the flags every command accepts, before or after its name.
type options struct {
	NATSURL  string
	User     string
	Password string
	Token    string
	NKeySeed string
	Creds    string
	TLSCert  string
	TLSKey   string
	TLSCA    string

	Prefix  string
	Timeout time.Duration
	NoWait  bool
	JSON    bool
	Binary  bool
	ID      string
	Branch  string
	Data    string
}

// newOptions returns the options with their defaults.
func newOptions() *options {
	return &options{NATSURL: defaultURL, Prefix: bus.DefaultPrefix, Timeout: defaultTimeout}
}

// envFlags are the global flags that may also come from the environment:
// where and how to connect, not what to send.
var envFlags = map[string]bool{
	"nats": true, "user": true, "password": true, "token": true, "nkey": true, "creds": true,
	"tls-cert": true, "tls-key": true, "tls-ca": true, "prefix": true, "timeout": true,
}

// addGlobalFlags declares the global flags on fs, bound to o, with o's
// current values as defaults (so that declaring them again on a command's
// flag set keeps what the global flag set parsed).
func addGlobalFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.NATSURL, "nats", o.NATSURL, "NATS server URL (comma-separated list allowed)")
	fs.StringVar(&o.User, "user", o.User, "NATS user name")
	fs.StringVar(&o.Password, "password", o.Password, "NATS password")
	fs.StringVar(&o.Token, "token", o.Token, "NATS authentication token")
	fs.StringVar(&o.NKeySeed, "nkey", o.NKeySeed, "NATS nkey seed file")
	fs.StringVar(&o.Creds, "creds", o.Creds, "NATS credentials file (JWT + nkey seed)")
	fs.StringVar(&o.TLSCert, "tls-cert", o.TLSCert, "TLS client certificate file")
	fs.StringVar(&o.TLSKey, "tls-key", o.TLSKey, "TLS client private key file")
	fs.StringVar(&o.TLSCA, "tls-ca", o.TLSCA, "TLS certificate authority file to verify the server")

	fs.StringVar(&o.Prefix, "prefix", o.Prefix, "subject prefix of the lionbus deployment")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "bound on connecting, sending and waiting for the answer")
	fs.BoolVar(&o.NoWait, "no-wait", o.NoWait, "send the request, print its id and exit without waiting (read it later with 'result ID')")
	fs.BoolVar(&o.JSON, "json", o.JSON, "print the answer's data as JSON (the result data, or the error data)")
	fs.BoolVar(&o.Binary, "binary", o.Binary, "send the request in CloudEvents binary mode (ce- headers) instead of structured mode")
	fs.StringVar(&o.ID, "request-id", o.ID, "request id (default a new UUID); sending the same id twice runs the request once")
	fs.StringVar(&o.Branch, "branch", o.Branch, "branch id (the branchid attribute)")
	fs.StringVar(&o.Data, "data", o.Data, "request data: a JSON file, or - for standard input; flags of the command are merged into it")
}

// validate checks the global options.
func (o *options) validate() error {
	var errs []error
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout must be positive, got %s", o.Timeout))
	}
	if _, err := bus.NewSubjects(o.Prefix); err != nil {
		errs = append(errs, fmt.Errorf("--prefix %q: want 1 to %d characters of [A-Za-z0-9_-]", o.Prefix, bus.MaxTokenLength))
	}
	if o.ID != "" && !bus.ValidToken(o.ID) {
		errs = append(errs, fmt.Errorf("--request-id %q: want 1 to %d characters of [A-Za-z0-9_-]", o.ID, bus.MaxTokenLength))
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key go together"))
	}
	if strings.TrimSpace(o.NATSURL) == "" {
		errs = append(errs, errors.New("--nats must not be empty"))
	}
	return errors.Join(errs...)
}

// connectConfig is how to reach NATS.
func (o *options) connectConfig() bus.ConnectConfig {
	return bus.ConnectConfig{
		URL:          o.NATSURL,
		User:         o.User,
		Password:     o.Password,
		Token:        o.Token,
		NKeySeedFile: o.NKeySeed,
		CredsFile:    o.Creds,
		TLSCertFile:  o.TLSCert,
		TLSKeyFile:   o.TLSKey,
		TLSCAFile:    o.TLSCA,
		Name:         "lionbus-publisher",
		Timeout:      o.Timeout,
	}
}

// envPrefix starts the environment variable of every global flag.
const envPrefix = "LIONBUS_"

// envName is the environment variable of flag name: "tls-ca" is
// LIONBUS_TLS_CA.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// globalFromEnv sets every flag of fs named in allowed that is not in
// given (the flags on the command line) from its environment variable,
// when that is set. lookup is os.LookupEnv.
func globalFromEnv(fs *flag.FlagSet, given, allowed map[string]bool, lookup func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] || !allowed[f.Name] {
			return
		}
		if v, ok := lookup(envName(f.Name)); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("environment %s=%q: %w", envName(f.Name), v, e)
			}
		}
	})
	return err
}
