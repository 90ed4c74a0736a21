package buildinfo

import "testing"

func TestVersion(t *testing.T) {
	if got := Version("v1.2.3"); got != "v1.2.3" {
		t.Errorf("Version(override) = %q", got)
	}
	if got := Version(""); got == "" {
		t.Error("Version without an override is empty")
	}
}
