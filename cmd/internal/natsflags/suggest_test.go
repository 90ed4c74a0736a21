package natsflags

import (
	"strings"
	"testing"
)

func TestSuggest(t *testing.T) {
	candidates := []string{"nats", "creds", "timeout", "tls-ca", "prefix"}
	tests := []struct{ name, want string }{
		{"nats", "nats"},
		{"nat", "nats"},
		{"cred", "creds"},
		{"timout", "timeout"},
		{"tls-cz", "tls-ca"},
		{"pre", "prefix"},
		{"frobnicate", ""},
	}
	for _, tc := range tests {
		if got := Suggest(tc.name, candidates); got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestMisspelledEnv(t *testing.T) {
	environ := []string{"LIONBUS_NATS=x", "LIONBUS_NAT=y", "LIONBUS_CONTEXT=c", "LIONBUS_ZZZZZZZZ=1", "PATH=/bin", "LIONBUS_TLS_C=ca"}
	got := MisspelledEnv(environ, []string{"nats", "tls-ca", "creds"}, []string{"LIONBUS_CONTEXT"})
	want := []string{
		"environment variable LIONBUS_NAT is ignored: it names no setting read from the environment (did you mean LIONBUS_NATS?)",
		"environment variable LIONBUS_TLS_C is ignored: it names no setting read from the environment (did you mean LIONBUS_TLS_CA?)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("MisspelledEnv =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
