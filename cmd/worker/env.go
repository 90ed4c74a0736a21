package main

import (
	"flag"

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
