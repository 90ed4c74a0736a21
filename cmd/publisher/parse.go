package main

import (
	"encoding/json"
	"errors"
	"flag"

	"github.com/lionbus/lionbus/pkg/wire"
)

// parseCommand is "publisher parse": the parse verb, a text into a value of
// a JSON Schema. Flags left out are left out of the request, so the
// worker's defaults (and --data) apply.
func parseCommand() command {
	return command{
		name: "parse", args: "[BRANCH]", summary: "parse a text into a value of a JSON Schema (nothing recorded)",
		define: func(fs *flag.FlagSet) func(*request, []string) error {
			text := fs.String("text", "", "the text to parse")
			textFile := fs.String("text-file", "", "read the text to parse from this file")
			format := fs.String("response-format", "", "JSON Schema the value must satisfy: a file, or inline JSON (required unless --data has it)")
			parse := fs.String("parse-model", "", "model of the reformat rounds (default: the branch's parse model, else its chat model)")
			noFuzzy := fs.Bool("no-fuzzy-match", false, "match the JSON's keys to the schema's property names exactly (default: ignoring case and separators, and by similarity)")
			threshold := fs.Float64("similarity-threshold", 0, "similarity from which a key is taken for a property name, 0.5 to 1 (default 0.85)")
			handle := fs.String("handle-validation", "", "when every attempt fails: raise (default), return_value (the text) or return_none (null)")
			retries := fs.Int("max-retries", 0, "reformat rounds after the local attempt (default 3, at most 5)")
			delay := fs.Float64("retry-initial-delay", 0, "seconds waited before the first reformat round (default 1, at most 10)")
			backoff := fs.Float64("retry-backoff", 0, "factor of each later wait over the one before (default 1.85, 1 to 4)")
			return func(req *request, args []string) error {
				if err := branchArg(req, args); err != nil {
					return err
				}
				req.verb = "parse"
				set := map[string]bool{}
				fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
				d := wire.ParseRequest{HandleValidation: *handle}
				// text and response_format are always in the type's JSON:
				// left out unless a flag gives them.
				unset := []string{"text", "response_format"}
				switch {
				case set["text"] && set["text-file"]:
					return errors.New("give the text with --text or --text-file, not both")
				case set["text"]:
					d.Text, unset = *text, unset[1:]
				case set["text-file"]:
					b, err := readLimited(*textFile, nil)
					if err != nil {
						return err
					}
					d.Text, unset = string(b), unset[1:]
				}
				if *format != "" {
					v, err := readJSONArg("--response-format", *format)
					if err != nil {
						return err
					}
					if d.ResponseFormat, err = json.Marshal(v); err != nil {
						return err
					}
					unset = unset[:len(unset)-1]
				}
				var err error
				if d.ParseModel, err = modelFlag("parse-model", *parse); err != nil {
					return err
				}
				if *noFuzzy {
					fuzzy := false
					d.FuzzyMatch = &fuzzy
				}
				if set["similarity-threshold"] {
					d.SimilarityThreshold = threshold
				}
				if set["max-retries"] {
					d.MaxRetries = retries
				}
				if set["retry-initial-delay"] {
					d.RetryInitialDelay = delay
				}
				if set["retry-backoff"] {
					d.RetryBackoff = backoff
				}
				if err := req.set(d, unset...); err != nil {
					return err
				}
				if _, ok := req.data["text"]; !ok {
					return errors.New("parse needs --text or --text-file (or a text in --data)")
				}
				if _, ok := req.data["response_format"]; !ok {
					return errors.New("parse needs --response-format (or a response_format in --data)")
				}
				return nil
			}
		},
	}
}
