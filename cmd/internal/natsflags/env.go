package natsflags

import (
	"flag"
	"fmt"
	"strings"
)

// EnvPrefix starts the environment variable of every flag.
const EnvPrefix = "LIONBUS_"

// EnvName is the environment variable of flag name: "tls-ca" is
// LIONBUS_TLS_CA, "drain-timeout" LIONBUS_DRAIN_TIMEOUT.
func EnvName(name string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// SetFromEnv sets every flag of fs for which use returns true from its
// environment variable (see [EnvName]), when that is set. Callers leave out
// the flags given on the command line, which win. lookup is os.LookupEnv
// (a parameter so tests need not change the process environment). A value
// the flag refuses is an error naming the variable.
func SetFromEnv(fs *flag.FlagSet, use func(name string) bool, lookup func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || !use(f.Name) {
			return
		}
		v, ok := lookup(EnvName(f.Name))
		if !ok {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("environment %s=%q: %w", EnvName(f.Name), v, e)
		}
	})
	return err
}
