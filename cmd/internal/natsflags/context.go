package natsflags

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// Saved connection settings ("contexts", as nats context has them): one
// JSON object per context, flag name to value, in
// $XDG_CONFIG_HOME/lionbus/contexts/NAME.json. The publisher saves and
// selects them; both commands read them.

// ValidContextName is what a context name may be.
var ValidContextName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)

// ConfigDir is where the lionbus commands keep their settings:
// $XDG_CONFIG_HOME/lionbus, else the user's configuration directory.
func ConfigDir() (string, error) {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "lionbus"), nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "lionbus"), nil
}

// ContextPath is the file of context name under dir (a ConfigDir).
func ContextPath(dir, name string) string { return filepath.Join(dir, "contexts", name+".json") }

// ReadContext reads context name from dir (a ConfigDir): its settings,
// flag name to value.
func ReadContext(dir, name string) (map[string]string, error) {
	if !ValidContextName.MatchString(name) {
		return nil, fmt.Errorf("context name %q: want letters, digits, '_', '.' or '-'", name)
	}
	b, err := os.ReadFile(ContextPath(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no context %q ('publisher context ls' lists them)", name)
	}
	if err != nil {
		return nil, err
	}
	var settings map[string]string
	if err := json.Unmarshal(b, &settings); err != nil {
		return nil, fmt.Errorf("context %q: %s: %w", name, ContextPath(dir, name), err)
	}
	return settings, nil
}
