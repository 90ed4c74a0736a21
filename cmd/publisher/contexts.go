package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lionbus/lionbus/cmd/internal/natsflags"
)

// Saved connection settings ("contexts", as nats context has them): one
// JSON object per context, flag name to value, in
// $XDG_CONFIG_HOME/lionbus/contexts/NAME.json; the selected one is named
// in $XDG_CONFIG_HOME/lionbus/context.txt. A context supplies the
// connection flags that neither the command line nor the environment
// give. It never holds a password or a token: it names the files that
// hold them.

// contextFlag is the global flag that picks a context for one command
// (--context is communicate's extra material).
const contextFlag = "nats-context"

// contextSettings are the global flags a context may hold: those that say
// where and how to connect (envFlags) but a secret itself, and the files
// that hold the secrets.
func contextSettings() []string {
	out := []string{"password-file", "token-file"}
	for name := range envFlags {
		if name != "password" && name != "token" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// fileSettings are the settings that name a file, saved as absolute paths.
var fileSettings = []string{"password-file", "token-file", "nkey", "creds", "tls-cert", "tls-key", "tls-ca"}

// contextStore is the directory of the saved contexts.
type contextStore struct{ dir string }

func openContextStore() (contextStore, error) {
	d, err := natsflags.ConfigDir()
	return contextStore{dir: d}, err
}

func (s contextStore) path(name string) string { return natsflags.ContextPath(s.dir, name) }

func (s contextStore) selectedPath() string { return filepath.Join(s.dir, "context.txt") }

// load reads context name, whose settings must be ones a context may hold.
func (s contextStore) load(name string) (map[string]string, error) {
	settings, err := natsflags.ReadContext(s.dir, name)
	if err != nil {
		return nil, err
	}
	for k := range settings {
		if !slices.Contains(contextSettings(), k) {
			return nil, fmt.Errorf("context %q: unknown setting %q in %s", name, k, s.path(name))
		}
	}
	return settings, nil
}

// save writes context name, readable by its owner only.
func (s contextStore) save(name string, settings map[string]string) error {
	if !natsflags.ValidContextName.MatchString(name) {
		return fmt.Errorf("context name %q: want letters, digits, '_', '.' or '-'", name)
	}
	if err := os.MkdirAll(filepath.Dir(s.path(name)), 0o700); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	return os.WriteFile(s.path(name), append(b, '\n'), 0o600)
}

// selected returns the name of the selected context, "" for none.
func (s contextStore) selected() (string, error) {
	b, err := os.ReadFile(s.selectedPath())
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return strings.TrimSpace(string(b)), err
}

// names lists the saved contexts.
func (s contextStore) names() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, "contexts"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var out []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".json"); ok && !e.IsDir() {
			out = append(out, name)
		}
	}
	return out, err
}

// applyContext sets the global flags that the command line (given) and the
// environment leave unset from the context named by --nats-context, else
// by LIONBUS_NATS_CONTEXT, else the selected one.
func (a *app) applyContext(given map[string]bool) error {
	name := a.o.Context
	if !given[contextFlag] {
		if v, ok := a.lookupEnv(natsflags.EnvName(contextFlag)); ok {
			name = v
		}
	}
	store, err := openContextStore()
	if err != nil {
		if name == "" {
			return nil // no configuration directory: no selected context
		}
		return err
	}
	if name == "" {
		if name, err = store.selected(); err != nil || name == "" {
			return err
		}
	}
	settings, err := store.load(name)
	if err != nil {
		return err
	}
	for _, k := range contextSettings() {
		v, ok := settings[k]
		if !ok || given[k] {
			continue
		}
		if _, inEnv := a.lookupEnv(natsflags.EnvName(k)); inEnv {
			continue
		}
		if err := a.global.Set(k, v); err != nil {
			return fmt.Errorf("context %q: %s %q: %w", name, k, v, err)
		}
	}
	return nil
}

// contextCommand is `publisher context ...`.
func (a *app) contextCommand() *cobra.Command {
	cmd := a.group("context", "Saved connection settings: save, ls, select, show, rm", nil,
		func(name string) string { return fmt.Sprintf("unknown command %q", "context "+name) })
	cmd.Long = `Saved connection settings, as nats context has them. A context holds the
connection flags given to 'context save' (--nats, --user, --creds, --nkey,
--password-file, --token-file, --tls-*, --prefix, --timeout); the selected
context supplies those that neither the command line nor LIONBUS_* give.
--nats-context NAME (or LIONBUS_NATS_CONTEXT) uses another one for one
command. Contexts are files in $XDG_CONFIG_HOME/lionbus/contexts. They never
hold a password or a token: save the files that hold them instead.`
	cmd.Example = `  publisher context save prod --nats nats://nats.example:4222 --creds ~/prod.creds --select
  publisher context ls
  publisher context select prod
  publisher --nats-context staging branch list`
	cmd.GroupID = "admin"

	var sel bool
	save := &cobra.Command{
		Use:   "save NAME",
		Short: "Save the connection flags given as context NAME",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			a.code = a.contextSave(c, args[0], sel)
			return nil
		},
	}
	save.Flags().BoolVar(&sel, "select", false, "select the context too")
	cmd.AddCommand(save,
		a.tabular(&cobra.Command{
			Use: "ls", Aliases: []string{"list"}, Short: "List the saved contexts (* marks the selected one)", Args: cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error { a.code = a.contextList(); return nil },
		}),
		&cobra.Command{
			Use: "select NAME", Short: "Select context NAME for the commands that follow", Args: cobra.ExactArgs(1),
			ValidArgsFunction: contextNames,
			RunE: func(_ *cobra.Command, args []string) error {
				a.code = a.contextStoreDo(func(s contextStore) error {
					if _, err := s.load(args[0]); err != nil {
						return err
					}
					if err := os.MkdirAll(s.dir, 0o700); err != nil {
						return err
					}
					if err := os.WriteFile(s.selectedPath(), []byte(args[0]+"\n"), 0o600); err != nil {
						return err
					}
					fmt.Fprintf(a.stdout, "context %s selected\n", args[0])
					return nil
				})
				return nil
			},
		},
		&cobra.Command{
			Use: "show [NAME]", Short: "Print context NAME (default: the selected one) as JSON", Args: cobra.MaximumNArgs(1),
			ValidArgsFunction: contextNames,
			RunE: func(_ *cobra.Command, args []string) error {
				a.code = a.contextStoreDo(func(s contextStore) error {
					name := ""
					if len(args) == 1 {
						name = args[0]
					} else {
						var err error
						if name, err = s.selected(); err != nil {
							return err
						}
						if name == "" {
							return errors.New("no context is selected ('publisher context select NAME')")
						}
					}
					settings, err := s.load(name)
					if err != nil {
						return err
					}
					b, _ := json.MarshalIndent(map[string]any{"name": name, "file": s.path(name), "settings": settings}, "", "  ")
					fmt.Fprintln(a.stdout, string(b))
					return nil
				})
				return nil
			},
		},
		&cobra.Command{
			Use: "rm NAME", Aliases: []string{"delete"}, Short: "Remove context NAME", Args: cobra.ExactArgs(1),
			ValidArgsFunction: contextNames,
			RunE: func(_ *cobra.Command, args []string) error {
				a.code = a.contextStoreDo(func(s contextStore) error {
					if _, err := s.load(args[0]); err != nil {
						return err
					}
					if err := os.Remove(s.path(args[0])); err != nil {
						return err
					}
					if cur, _ := s.selected(); cur == args[0] {
						if err := os.Remove(s.selectedPath()); err != nil {
							return err
						}
					}
					fmt.Fprintf(a.stdout, "context %s removed\n", args[0])
					return nil
				})
				return nil
			},
		},
	)
	return cmd
}

// contextNames completes a context name.
func contextNames(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	s, err := openContextStore()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	names, _ := s.names()
	return names, cobra.ShellCompDirectiveNoFileComp
}

// contextStoreDo runs do on the context store; an error is a usage error.
func (a *app) contextStoreDo(do func(contextStore) error) int {
	s, err := openContextStore()
	if err == nil {
		err = do(s)
	}
	if err != nil {
		return usageError(a.stderr, err)
	}
	return exitOK
}

// contextSave is `publisher context save NAME`: the connection flags given
// on the command line become context NAME.
func (a *app) contextSave(cmd *cobra.Command, name string, sel bool) int {
	for _, secret := range []string{"password", "token"} {
		if cmd.Flags().Changed(secret) {
			return usageError(a.stderr, fmt.Errorf("a context does not store secrets: save --%s-file FILE (a file holding the %s) instead of --%s, or set LIONBUS_%s when you run a command", secret, secret, secret, strings.ToUpper(secret)))
		}
	}
	settings := map[string]string{}
	for _, k := range contextSettings() {
		if !cmd.Flags().Changed(k) {
			continue
		}
		v := a.global.Lookup(k).Value.String()
		if slices.Contains(fileSettings, k) {
			abs, err := filepath.Abs(v)
			if err != nil {
				return usageError(a.stderr, err)
			}
			v = abs
		}
		settings[k] = v
	}
	if hasSecretInURL(settings["nats"]) {
		return usageError(a.stderr, errors.New("a context does not store secrets: --nats holds a password or token; save the URL without it and --password-file or --token-file"))
	}
	if len(settings) == 0 {
		return usageError(a.stderr, errors.New("context save: give the settings to save, e.g. --nats URL --creds FILE"))
	}
	if err := a.o.validate(); err != nil {
		return usageError(a.stderr, err)
	}
	return a.contextStoreDo(func(s contextStore) error {
		if err := s.save(name, settings); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "context %s saved in %s\n", name, s.path(name))
		if sel {
			if err := os.WriteFile(s.selectedPath(), []byte(name+"\n"), 0o600); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "context %s selected\n", name)
		}
		return nil
	})
}

// hasSecretInURL reports whether one of the comma-separated NATS URLs
// holds a password or a token.
func hasSecretInURL(urls string) bool {
	for _, u := range strings.Split(urls, ",") {
		if p, err := url.Parse(strings.TrimSpace(u)); err == nil && p.User != nil {
			return true
		}
	}
	return false
}

// contextList is `publisher context ls`.
func (a *app) contextList() int {
	if a.output != "" && a.output != "json" && a.output != "table" {
		return usageError(a.stderr, fmt.Errorf("-o %q: want table or json", a.output))
	}
	return a.contextStoreDo(func(s contextStore) error {
		names, err := s.names()
		if err != nil {
			return err
		}
		cur, err := s.selected()
		if err != nil {
			return err
		}
		type entry struct {
			Name     string `json:"name"`
			Selected bool   `json:"selected"`
			NATS     string `json:"nats,omitempty"`
		}
		list := []entry{}
		for _, n := range names {
			settings, err := s.load(n)
			if err != nil {
				return err
			}
			list = append(list, entry{Name: n, Selected: n == cur, NATS: settings["nats"]})
		}
		if a.output == "json" || a.o.JSON {
			b, _ := json.MarshalIndent(list, "", "  ")
			fmt.Fprintln(a.stdout, string(b))
			return nil
		}
		if len(list) == 0 {
			fmt.Fprintln(a.stdout, "no contexts ('publisher context save NAME --nats URL' saves one)")
			return nil
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tNATS")
		for _, e := range list {
			mark := " "
			if e.Selected {
				mark = "*"
			}
			fmt.Fprintf(tw, "%s %s\t%s\n", mark, e.Name, e.NATS)
		}
		return tw.Flush()
	})
}
