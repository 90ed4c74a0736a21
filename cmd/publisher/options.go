package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/lionbus/lionbus/cmd/internal/natsflags"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
)

// Defaults of the global flags.
const (
	defaultURL     = "nats://127.0.0.1:4222"
	defaultTimeout = 60 * time.Second
)

// options are the flags every command accepts, before or after its name.
type options struct {
	// Context names the saved connection settings to use (--nats-context).
	Context string

	NATSURL string
	natsflags.Credentials

	Prefix  string
	Timeout time.Duration
	NoWait  bool
	JSON    bool
	Binary  bool
	// Parallel sends the branchorder attribute "parallel" (--parallel).
	Parallel bool
	ID       string
	Branch   string
	Data     string

	// APIPrefix is client.Config.APIPrefix (--js-api-prefix).
	APIPrefix string
}

// newOptions returns the options with their defaults.
func newOptions() *options {
	return &options{NATSURL: defaultURL, Prefix: protocol.DefaultPrefix, Timeout: defaultTimeout}
}

// envFlags are the global flags that may also come from the environment:
// where and how to connect, not what to send.
var envFlags = map[string]bool{
	"nats": true, "user": true, "password": true, "token": true, "nkey": true, "creds": true,
	"tls-cert": true, "tls-key": true, "tls-ca": true, "prefix": true, "timeout": true,
	"inbox-prefix": true, "js-api-prefix": true, "password-file": true, "token-file": true,
}

// addGlobalFlags declares the global flags on fs, bound to o, with o's
// current values as defaults (so that declaring them again on a command's
// flag set keeps what the global flag set parsed).
func addGlobalFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.NATSURL, "nats", o.NATSURL, "NATS server URL (comma-separated list allowed)")
	o.Credentials.Register(fs)

	fs.StringVar(&o.Prefix, "prefix", o.Prefix, "subject prefix of the lionbus deployment")
	fs.StringVar(&o.APIPrefix, "js-api-prefix", o.APIPrefix, "where the account imports lionbus's JetStream API, for reading stored answers (a tenant: lionbus.api); default $JS.API")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "bound on connecting, sending and waiting for the answer")
	fs.BoolVar(&o.NoWait, "no-wait", o.NoWait, "send the request, print its id and exit without waiting (read it later with 'result ID')")
	fs.BoolVar(&o.JSON, "json", o.JSON, "print the answer's data as JSON (the result data, or the error data)")
	fs.BoolVar(&o.Binary, "binary", o.Binary, "send the request in CloudEvents binary mode (ce- headers) instead of structured mode")
	fs.BoolVar(&o.Parallel, "parallel", o.Parallel, "let the request run beside its branch's other requests instead of after them (branchorder: parallel)")
	fs.StringVar(&o.ID, "request-id", o.ID, "request id (default a new UUID); sending the same id twice runs the request once")
	fs.StringVar(&o.Branch, "branch", o.Branch, "branch id (the branchid attribute)")
	fs.StringVar(&o.Context, contextFlag, o.Context, "saved connection settings to use instead of the selected ones (publisher context --help)")
	fs.StringVar(&o.Data, "data", o.Data, "request data: a JSON file, or - for standard input; flags of the command are merged into it")
}

// validate checks the global options.
func (o *options) validate() error {
	var errs []error
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout must be positive, got %s", o.Timeout))
	}
	if _, err := protocol.NewSubjects(o.Prefix); err != nil {
		errs = append(errs, fmt.Errorf("--prefix %q: want 1 to %d characters of [A-Za-z0-9_-]", o.Prefix, protocol.MaxTokenLength))
	}
	if o.ID != "" && !protocol.ValidToken(o.ID) {
		errs = append(errs, fmt.Errorf("--request-id %q: want 1 to %d characters of [A-Za-z0-9_-]", o.ID, protocol.MaxTokenLength))
	}
	if err := o.Credentials.Validate(); err != nil {
		errs = append(errs, err)
	}
	if strings.TrimSpace(o.NATSURL) == "" {
		errs = append(errs, errors.New("--nats must not be empty"))
	}
	return errors.Join(errs...)
}

// connectConfig is how to reach NATS.
func (o *options) connectConfig() client.ConnectConfig {
	return o.Credentials.ConnectConfig(o.NATSURL, "lionbus-publisher", o.Timeout)
}

// globalFromEnv sets every flag of fs named in allowed that is not in
// given (the flags on the command line) from its environment variable
// (LIONBUS_<FLAG>), when that is set. lookup is os.LookupEnv.
func globalFromEnv(fs *flag.FlagSet, given, allowed map[string]bool, lookup func(string) (string, bool)) error {
	return natsflags.SetFromEnv(fs, func(name string) bool { return allowed[name] && !given[name] }, lookup)
}
