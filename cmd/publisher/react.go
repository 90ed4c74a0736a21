package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/lionbus/lionbus/cmd/internal/render"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/wire"
)

// interpretCommand is "publisher interpret": the interpret verb, a raw
// instruction rewritten by the model into a clearer prompt. Nothing is
// recorded on the branch.
func interpretCommand() command {
	return command{
		name: "interpret", args: "[BRANCH]", summary: "rewrite a raw instruction into a clearer prompt, print it (nothing is recorded)",
		define: func(fs *flag.FlagSet) func(*request, []string) error {
			text := fs.String("text", "", "the raw instruction to rewrite (required unless --data has it)")
			domain := fs.String("domain", "", `the field it belongs to (default "general")`)
			style := fs.String("style", "", `the style wanted of the rewrite (default "concise")`)
			sample := fs.String("sample-writing", "", "an example of the writing wanted")
			model := fs.String("interpret-model", "", `the model making the rewrite: "provider:model" or a JSON object`)
			chat := fs.String("chat-model", "", `chat model override: "provider:model" or a JSON object`)
			return func(req *request, args []string) error {
				if err := branchArg(req, args); err != nil {
					return err
				}
				req.verb = "interpret"
				d := wire.InterpretRequest{Text: *text, Domain: *domain, Style: *style, SampleWriting: *sample}
				var err error
				if d.InterpretModel, err = modelFlag("interpret-model", *model); err != nil {
					return err
				}
				if d.ChatModel, err = modelFlag("chat-model", *chat); err != nil {
					return err
				}
				var unset []string
				if *text == "" {
					unset = []string{"text"} // always in the type's JSON
				}
				if err := req.set(d, unset...); err != nil {
					return err
				}
				if _, ok := req.data["text"]; !ok {
					return errors.New("interpret needs --text (or a text in --data)")
				}
				return nil
			}
		},
	}
}

// reactCommand is "publisher react": the react verb, a reason-and-act
// loop of operate rounds that may run the branch's tools, then a final
// answer. Flags left out are left out of the request, so the worker's
// defaults (and --data) apply.
func reactCommand() command {
	return command{
		name: "react", args: "[BRANCH]", summary: "reason and act in rounds with the branch's tools, print the final answer",
		define: func(fs *flag.FlagSet) func(*request, []string) error {
			ex := defineExchangeFlags(fs, "parse model override (default: the chat model)")
			analysis := fs.String("analysis-model", "", "the model of the analysis rounds (default: the chat model)")
			strategy := fs.String("action-strategy", "", `how round 0's tool calls run: "concurrent" (the default) or "sequential"`)
			var tools stringList
			fs.Var(&tools, "tool", "a branch tool offered to the model (repeatable; default all the branch's)")
			handle := fs.String("handle-validation", "", "when the final answer does not match --response-format: return_value (default), return_none or raise")
			interpret := fs.Bool("interpret", false, "rewrite the instruction with interpret first")
			domain := fs.String("interpret-domain", "", "with --interpret: the domain hint")
			style := fs.String("interpret-style", "", "with --interpret: the style hint")
			sample := fs.String("interpret-sample", "", "with --interpret: a sample of the writing wanted")
			imodel := fs.String("interpret-model", "", "with --interpret: the model of the rewrite")
			noExt := fs.Bool("no-extensions", false, "run no extension round (extension_allowed false)")
			maxExt := fs.Int("max-extensions", 0, "the most extension rounds (default 3; 0 or less: none; above 100: 100)")
			analyses := fs.Bool("return-analysis", false, "add the analysis rounds to the result")
			stream := fs.Bool("stream", false, "print each analysis round as it completes (stream: true), then the answer")
			return func(req *request, args []string) error {
				if err := branchArg(req, args); err != nil {
					return err
				}
				req.verb = "react"
				var ask wire.ChatRequest
				if err := ex.apply(&ask); err != nil {
					return err
				}
				d := wire.ReactRequest{Prompt: ask.Prompt, ParseModel: ask.ParseModel, ResponseFormat: ask.ResponseFormat}
				var err error
				if d.AnalysisModel, err = modelFlag("analysis-model", *analysis); err != nil {
					return err
				}
				if d.InterpretModel, err = modelFlag("interpret-model", *imodel); err != nil {
					return err
				}
				d.Tools = tools
				if *strategy != "" {
					d.ActionStrategy = strategy
				}
				d.HandleValidation = *handle
				d.Interpret, d.InterpretDomain, d.InterpretStyle, d.InterpretSample = *interpret, *domain, *style, *sample
				if *noExt {
					allowed := false
					d.ExtensionAllowed = &allowed
				}
				d.ReturnAnalysis, d.Stream = *analyses, *stream
				fs.Visit(func(f *flag.Flag) {
					if f.Name == "max-extensions" {
						d.MaxExtensions = maxExt
					}
				})
				if err := req.set(d); err != nil {
					return err
				}
				_, hasInstruction := req.data["instruction"]
				_, hasInstruct := req.data["instruct"]
				if !hasInstruction && !hasInstruct {
					return errors.New("react needs --instruction (or an instruction or instruct in --data)")
				}
				return nil
			}
		},
	}
}

// renderAnalyses prints the analysis rounds of a react result, one line
// each: the round's number, whether it asked for another, its analysis.
func renderAnalyses(w io.Writer, analyses []json.RawMessage) {
	for i, raw := range analyses {
		var a struct {
			Analysis        string `json:"analysis"`
			ExtensionNeeded bool   `json:"extension_needed"`
			Requests        []any  `json:"action_requests"`
		}
		if err := json.Unmarshal(raw, &a); err != nil {
			continue
		}
		more := ""
		if a.ExtensionNeeded {
			more = ", another round"
		}
		fmt.Fprintf(w, "round %d (%d tool calls%s): %s\n", i, len(a.Requests), more, render.Clip(a.Analysis, lineWidth))
	}
}

// sendRounds sends a react with stream: true and prints each analysis
// round when its round chunk arrives (with --json, each chunk as a JSON
// line), then the answer: its value, or with --json its data.
func sendRounds(ctx context.Context, cl *client.Client, o *options, req *request, opts []client.SubmitOption, stdout, stderr io.Writer) int {
	var rounds int
	asJSON := &chunkPrinter{w: stdout, json: true}
	onChunk := func(c wire.Chunk) error {
		if c.Kind != wire.ChunkRound {
			return nil
		}
		if o.JSON {
			return asJSON.print(c)
		}
		if c.Metadata["phase"] == "analysis" {
			fmt.Fprintf(stdout, "round %d: %s\n", rounds, render.Clip(c.Content, lineWidth))
			rounds++
		}
		return nil
	}
	id, reply, err := cl.Stream(ctx, req.verb, req.branch, req.data, onChunk, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "publisher: react %s: %v\n(the request may still run: 'publisher result %s' reads its answer later)\n", id, err, id)
		return exitNoAnswer
	}
	// The rounds are printed already: only the answer is left.
	return printAnswer(o, reply, stdout, stderr, func(res *wire.Result) {
		fmt.Fprintln(stdout, valueText(res.Value))
	})
}
