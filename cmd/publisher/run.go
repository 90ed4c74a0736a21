package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/wire"
)

// runCommand is "publisher run": the run verb, a CLI model's streamed
// turn. Its chunks are printed as they arrive (text inline, tool calls
// and results as one-line summaries); Ctrl-C sends the cancel and waits
// for the run to end.
func runCommand() command {
	return command{
		name: "run", args: "[INSTRUCTION]", summary: "run a CLI model (cli:NAME) on an instruction and print its chunks as they arrive",
		define: func(fs *flag.FlagSet) func(*request, []string) error {
			instruction := fs.String("instruction", "", "the task (or the argument)")
			chat := fs.String("chat-model", "", `CLI model override: "cli:NAME" or a JSON object {"provider": "cli", "model": NAME, "timeout": SECONDS}`)
			persist := fs.Bool("stream-persist", false, "keep the chunk log in JetStream while the run goes, with branch snapshots, in the worker's run log directory")
			persistDir := fs.String("stream-persist-dir", "", "keep them in this run log directory (<prefix>.runlog.<dir>.>) instead of the worker's (--runlog-dir); implies --stream-persist")
			clear := fs.Bool("clear-messages", false, "clear the branch's messages, atomically with what the run records")
			return func(req *request, args []string) error {
				switch {
				case len(args) > 1:
					return errors.New("run takes one argument: the instruction (quote it)")
				case len(args) == 1 && *instruction != "":
					return errors.New("give the instruction as the argument or with --instruction, not both")
				case len(args) == 1:
					*instruction = args[0]
				}
				req.verb = "run"
				var d wire.RunRequest
				if *instruction != "" {
					d.Instruction = *instruction
				}
				var err error
				if d.ChatModel, err = modelFlag("chat-model", *chat); err != nil {
					return err
				}
				d.StreamPersist = *persist || *persistDir != ""
				if *persistDir != "" {
					d.StreamPersistDir = persistDir
				}
				d.ClearMessages = *clear
				if err := req.set(d); err != nil {
					return err
				}
				if _, ok := req.data["instruction"]; !ok {
					if _, ok := req.data["plain_content"]; !ok {
						return errors.New("run needs an instruction")
					}
				}
				if req.branch == "" {
					return errors.New("run needs --branch")
				}
				return nil
			}
		},
	}
}

// cancelWait bounds waiting for a cancelled run's answer; followLimit
// bounds following a run.
const (
	cancelWait  = 30 * time.Second
	followLimit = 24 * time.Hour
)

// sendRun submits a run and prints its chunks until its answer, which
// sets the exit code. When ctx ends before (Ctrl-C), the cancel is sent
// and the answer still awaited, for at most cancelWait.
func sendRun(ctx context.Context, cl *client.Client, o *options, req *request, opts []client.SubmitOption, stdout, stderr io.Writer) int {
	id := o.ID
	if id == "" {
		id = uuid.NewString()
		opts = append(opts, client.WithID(id))
	}
	// A run is followed until it ends, however long: --timeout bounds
	// connecting and sending; the worker bounds the run itself.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), followLimit)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		if ctx.Err() == context.Canceled || errors.Is(context.Cause(ctx), context.Canceled) {
			cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer ccancel()
			if err := cl.Cancel(cctx, id); err != nil {
				fmt.Fprintf(stderr, "\npublisher: cancel %s: %v\n", id, err)
				return
			}
			fmt.Fprintf(stderr, "\npublisher: cancel sent for run %s\n", id)
		}
	})
	defer stop()
	p := &chunkPrinter{w: stdout, json: o.JSON}
	_, reply, err := cl.Stream(fctx, "run", req.branch, req.data, p.print, opts...)
	if err != nil && ctx.Err() != nil {
		// Cancelled: the answer comes once the worker stopped the run.
		wctx, wcancel := context.WithTimeout(context.Background(), cancelWait)
		defer wcancel()
		reply, err = cl.Follow(wctx, id, p.seq+1, p.print)
	}
	p.end()
	if err != nil {
		fmt.Fprintf(stderr, "publisher: run %s: %v\n(the run may still go on: 'publisher result %s' reads its answer later)\n", id, err, id)
		return exitNoAnswer
	}
	if !answerHead(o, reply, stdout, stderr) {
		return exitFailed
	}
	res, code := answerResult(reply, stderr)
	if res == nil {
		return code
	}
	var rv wire.RunValue
	if json.Unmarshal(res.Value, &rv) == nil {
		note := fmt.Sprintf("run %s: %d chunks", id, rv.Chunks)
		if rv.SessionID != "" {
			note += ", session " + rv.SessionID
		}
		if rv.Canceled {
			note += ", cancelled"
		}
		var extra wire.RunExtra
		if res.DecodeExtra(&extra) == nil && extra.RunLog != nil {
			// Where the persisted run's snapshots are.
			note += ", run log " + extra.RunLog.Snapshot
		}
		fmt.Fprintln(stderr, note)
	}
	return exitOK
}

// chunkPrinter prints chunks: text inline, tools and errors on lines of
// their own. With json it prints each chunk as a JSON line instead.
type chunkPrinter struct {
	w       io.Writer
	json    bool
	seq     uint64
	midLine bool
}

func (p *chunkPrinter) print(c wire.Chunk) error {
	p.seq = c.Seq
	if p.json {
		b, err := json.Marshal(c)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(p.w, string(b))
		return err
	}
	switch c.Kind {
	case wire.ChunkText:
		fmt.Fprint(p.w, c.Content)
		p.midLine = !strings.HasSuffix(c.Content, "\n")
	case wire.ChunkToolUse:
		args, _ := json.Marshal(c.ToolInput)
		p.line(fmt.Sprintf("[tool %s %s]", c.ToolName, wire.Truncate(string(args), 100)))
	case wire.ChunkToolResult:
		out, ok := c.ToolOutput.(string)
		if !ok {
			b, _ := json.Marshal(c.ToolOutput)
			out = string(b)
		}
		status := "result"
		if c.IsError {
			status = "error"
		}
		p.line(fmt.Sprintf("[%s %s]", status, wire.Truncate(strings.Join(strings.Fields(out), " "), 100)))
	case wire.ChunkError:
		if c.Content != "" {
			p.line("[error " + wire.Truncate(c.Content, 200) + "]")
		}
	}
	return nil
}

// line prints s on a line of its own.
func (p *chunkPrinter) line(s string) {
	if p.midLine {
		fmt.Fprintln(p.w)
	}
	fmt.Fprintln(p.w, s)
	p.midLine = false
}

// end ends the last line.
func (p *chunkPrinter) end() {
	if p.midLine {
		fmt.Fprintln(p.w)
		p.midLine = false
	}
}
