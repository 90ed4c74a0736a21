// Command fakecli stands in for Claude Code in tests: it prints a
// recorded `claude -p ... --output-format stream-json --verbose` session
// (session.jsonl) line by line.
//
// Its behaviour is steered by words in the prompt (-p):
//
//	HANG       print the first lines, then wait forever
//	HANG_HARD  as HANG, ignoring SIGTERM
//	FAIL       print the first lines, then a result with is_error
//	ERREMPTY   print the first lines, then an error line without text
//	CRASH      print the first lines, then exit 3 with a message on stderr
//	BENIGN     print the first lines, then a benign end of stream, then more
//	GATE       print half the lines, then wait for the file $FAKECLI_DIR/gate
//	SLOW       pause $FAKECLI_DELAY_MS (default 50) ms before each line
//	CHILD      start a child process (sleep) in its process group first
//	SETSID     start a child process (sleep) in a session of its own first,
//	           outside its process group, as Claude Code runs Bash; with
//	           HANG_HARD the child ignores SIGTERM too
//
// With $FAKECLI_DIR set it writes $FAKECLI_DIR/<pid>.json: its pid, its
// arguments and its child's pid. The session id is the one given with
// --resume, else "sess-<pid>".
package main

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

//go:embed session.jsonl
var session string

// record is what fakecli writes about itself.
type record struct {
	PID   int      `json:"pid"`
	Argv  []string `json:"argv"`
	Child int      `json:"child,omitempty"`
}

func main() {
	args := os.Args[1:]
	prompt, resume := "", ""
	for i := 0; i < len(args)-1; i++ {
		switch args[i] {
		case "-p":
			prompt = args[i+1]
		case "--resume":
			resume = args[i+1]
		}
	}
	has := func(w string) bool { return strings.Contains(prompt, w) }
	dir := os.Getenv("FAKECLI_DIR")
	rec := record{PID: os.Getpid(), Argv: args}
	if has("CHILD") || has("SETSID") {
		child := exec.Command("sleep", "300")
		if has("HANG_HARD") {
			// An ignored signal stays ignored across exec.
			child = exec.Command("sh", "-c", "trap '' TERM; exec sleep 300")
		}
		if has("SETSID") {
			child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if err := child.Start(); err == nil {
			rec.Child = child.Process.Pid
		}
	}
	if dir != "" {
		b, _ := json.Marshal(rec)
		_ = os.WriteFile(filepath.Join(dir, strconv.Itoa(rec.PID)+".json"), b, 0o600)
	}
	if has("HANG_HARD") {
		signal.Ignore(syscall.SIGTERM)
	}
	id := resume
	if id == "" {
		id = "sess-" + strconv.Itoa(rec.PID)
	}
	delay := time.Duration(0)
	if has("SLOW") {
		ms, err := strconv.Atoi(os.Getenv("FAKECLI_DELAY_MS"))
		if err != nil {
			ms = 50
		}
		delay = time.Duration(ms) * time.Millisecond
	}
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(session, "SESSION", id)), "\n")
	out := func(l string) {
		time.Sleep(delay)
		fmt.Println(l)
	}
	const first = 4 // init, thinking and two text lines
	switch {
	case has("HANG"):
		for _, l := range lines[:first] {
			out(l)
		}
		for {
			time.Sleep(time.Hour)
		}
	case has("FAIL"):
		for _, l := range lines[:first] {
			out(l)
		}
		out(`{"type":"result","subtype":"error_during_execution","is_error":true,"session_id":"` + id + `","result":"API Error: 529 overloaded_error: Overloaded","num_turns":1,"usage":{"input_tokens":5,"output_tokens":12}}`)
		os.Exit(1)
	case has("ERREMPTY"):
		for _, l := range lines[:first] {
			out(l)
		}
		out(`{"type":"error","message":""}`)
		os.Exit(1)
	case has("CRASH"):
		for _, l := range lines[:first] {
			out(l)
		}
		fmt.Fprintln(os.Stderr, "fakecli: crashed on purpose")
		os.Exit(3)
	case has("BENIGN"):
		for _, l := range lines[:first] {
			out(l)
		}
		out(`{"type":"error","error":{}}`)
		for _, l := range lines[first:] {
			out(l)
		}
	case has("GATE"):
		half := len(lines) / 2
		for _, l := range lines[:half] {
			out(l)
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "gate")); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		for _, l := range lines[half:] {
			out(l)
		}
	default:
		for _, l := range lines {
			out(l)
		}
	}
}
