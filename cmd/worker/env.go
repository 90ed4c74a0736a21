package main

import (
	"flag"
	"fmt"

	"github.com/lionbus/lionbus/cmd/internal/natsflags"
	"github.com/lionbus/lionbus/pkg/ops/provider/openai"
)

// flagsFromEnv sets every flag of fs that was not given on the command line
// from its environment variable (LIONBUS_<FLAG>), when that is set. lookup
// is os.LookupEnv (a parameter so tests need not change the process
// environment).
func flagsFromEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	given := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	return natsflags.SetFromEnv(fs, func(name string) bool { return !given[name] }, lookup)
}

// openAIFromEnv sets the OpenAI base URL and API key that neither the
// command line nor LIONBUS_OPENAI_* gave from OPENAI_BASE_URL and
// OPENAI_API_KEY, the variables the OpenAI SDKs read. lookup is
// os.LookupEnv.
func openAIFromEnv(c *config, lookup func(string) (string, bool)) {
	if v, ok := lookup(openai.EnvBaseURL); ok && c.OpenAIBaseURL == "" {
		c.OpenAIBaseURL = v
	}
	if v, ok := lookup(openai.EnvAPIKey); ok && c.OpenAIAPIKey == "" {
		c.OpenAIAPIKey = v
	}
}

// flagsFromContext sets the flags of fs that neither the command line
// (given) nor the environment set from the saved context name (see
// natsflags.ReadContext; `publisher context save` writes them). Settings
// the worker has no flag for (the publisher's --timeout, say) are skipped.
// Only a context named by --nats-context or LIONBUS_NATS_CONTEXT applies:
// the publisher's selected context does not turn a worker's embedded
// server into a remote one.
func flagsFromContext(fs *flag.FlagSet, name string, given map[string]bool, lookup func(string) (string, bool)) error {
	dir, err := natsflags.ConfigDir()
	if err != nil {
		return fmt.Errorf("--nats-context %s: %w", name, err)
	}
	settings, err := natsflags.ReadContext(dir, name)
	if err != nil {
		return fmt.Errorf("--nats-context: %w", err)
	}
	for k, v := range settings {
		if fs.Lookup(k) == nil || k == "nats-context" || given[k] {
			continue
		}
		if _, inEnv := lookup(natsflags.EnvName(k)); inEnv {
			continue
		}
		if err := fs.Set(k, v); err != nil {
			return fmt.Errorf("--nats-context %s: %s %q: %w", name, k, v, err)
		}
	}
	return nil
}
