package main

import (
	"errors"
	"flag"

	"github.com/lionbus/lionbus/pkg/wire"
)

// operateCommand is "publisher operate": the operate verb, one instruction
// answered in a JSON Schema, optionally with tool calls run and their
// outcomes added. Flags left out are left out of the request, so the
// worker's defaults (and --data) apply.
func operateCommand() command {
	return command{
		name: "operate", args: "[BRANCH]", summary: "send an instruction, parse the answer, run the tool calls it asks for, print the result",
		define: func(fs *flag.FlagSet) func(*request, []string) error {
			ex := defineExchangeFlags(fs, "parse model override (default: the chat model)")
			reason := fs.Bool("reason", false, "ask the model for a reason field")
			actions := fs.Bool("actions", false, "ask the model for tool calls and run them with the branch's tools")
			strategy := fs.String("action-strategy", "", `"concurrent" (the default) or "sequential"`)
			var tools stringList
			fs.Var(&tools, "tool", "a branch tool offered to the model (repeatable; default all the branch's)")
			handle := fs.String("handle-validation", "", "when the answer does not match --response-format: return_value (default), return_none or raise")
			skip := fs.Bool("skip-validation", false, "return the answer's text: no parse, no validation, no tool calls")
			noInvoke := fs.Bool("no-invoke-actions", false, "do not run the tool calls the model asks for")
			clear := fs.Bool("clear-messages", false, "clear the branch's messages, atomically with this exchange")
			middle := fs.String("middle", "", `the middle making the exchange: "communicate" (the default), "lndl" or a registered one`)
			budget := fs.Int("round-budget", 0, "with --middle lndl: the most model exchanges, 1 to 10 (default 3)")
			return func(req *request, args []string) error {
				if err := branchArg(req, args); err != nil {
					return err
				}
				req.verb = "operate"
				var d wire.OperateRequest
				if err := ex.apply(&d.ChatRequest); err != nil {
					return err
				}
				if *reason {
					d.Reason = reason
				}
				if *actions {
					d.Actions = actions
				}
				d.SkipValidation, d.ClearMessages = *skip, *clear
				if *noInvoke {
					invoke := false
					d.InvokeActions = &invoke
				}
				d.Tools = tools
				if *strategy != "" {
					d.ActionStrategy = strategy
				}
				d.HandleValidation, d.Middle = *handle, *middle
				fs.Visit(func(f *flag.Flag) {
					if f.Name == "round-budget" {
						// Checked by the worker (0 too), before any
						// model call.
						d.RoundBudget = budget
					}
				})
				if err := req.set(d); err != nil {
					return err
				}
				_, hasInstruction := req.data["instruction"]
				_, hasInstruct := req.data["instruct"]
				_, hasPlain := req.data["plain_content"]
				if !hasInstruction && !hasInstruct && !hasPlain {
					return errors.New("operate needs --instruction (or an instruction or instruct in --data)")
				}
				return nil
			}
		},
	}
}
