package cliflags

import (
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestAddGoFlags_and_ErrorMessage(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	nats := fs.String("nats", "", "")
	cmd := &cobra.Command{Use: "t"}
	AddGoFlags(cmd.Flags(), fs)
	if err := cmd.Flags().Parse([]string{"--nats", "nats://x"}); err != nil || *nats != "nats://x" {
		t.Fatalf("parse: %v, nats %q", err, *nats)
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "nats" })
	if !given {
		t.Fatal("the Go flag set does not see the flag as given")
	}
	tests := []struct{ err, want string }{
		{"unknown flag: --nat", "(did you mean --nats?)"},
		{"unknown flag: --natz=x", "(did you mean --nats?)"},
		{"unknown shorthand flag: 'n' in -nats", "(did you mean --nats?)"},
		{"unknown flag: --zzzzzz", ""},
	}
	for _, tt := range tests {
		got := ErrorMessage(cmd, errors.New(tt.err))
		if tt.want == "" && strings.Contains(got, "did you mean") || tt.want != "" && !strings.HasSuffix(got, tt.want) {
			t.Errorf("ErrorMessage(%q) = %q, want suffix %q", tt.err, got, tt.want)
		}
	}
}
