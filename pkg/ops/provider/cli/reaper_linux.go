package cli

import (
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The subreaper (Linux). A coding-agent CLI may start processes outside
// its process group: Claude Code runs each Bash command in a session of
// its own (setsid), so signalling the CLI's group leaves them running,
// reparented to init, after the call ended. The provider therefore starts
// each CLI under a small reaper: the worker's own executable run again
// with reaperEnv set, which marks itself a child subreaper
// (PR_SET_CHILD_SUBREAPER), runs the CLI as its child and, since every
// orphan of the CLI's tree is reparented to it whatever session or group
// it moved to, can find the whole tree through /proc and end it. It needs
// no privilege and no cgroup.
//
// The reaper leads the call's process group. On SIGTERM (the provider's
// stop) or when the CLI exits, it sends SIGTERM to every descendant,
// SIGKILL to those left after the grace period, reaps them all and exits
// with the CLI's status (128+signal when a signal ended it). It dies with
// the worker (PR_SET_PDEATHSIG), ending the tree the same way.

// reaperEnv, when set in a process's environment (to the grace period in
// milliseconds), makes a binary that links this package run as the
// subreaper of the command in its arguments instead of its main.
const reaperEnv = "LIONBUS_CLI_REAPER"

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

func init() {
	v, ok := os.LookupEnv(reaperEnv)
	if !ok {
		return
	}
	ms, _ := strconv.Atoi(v)
	os.Exit(runReaper(os.Args[1:], time.Duration(ms)*time.Millisecond))
}

// reaperCommand returns the program and arguments that run argv under the
// subreaper, and the variable to add to its environment; ok is false when
// the executable cannot be found (argv then runs directly).
func reaperCommand(argv []string, grace time.Duration) (prog string, args []string, env string, ok bool) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, "", false
	}
	return exe, argv, reaperEnv + "=" + strconv.FormatInt(grace.Milliseconds(), 10), true
}

// reaperSysProcAttr is the SysProcAttr of a reaper: its own process group,
// and SIGTERM when the worker goes.
func reaperSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// runReaper runs argv as its child and ends the whole tree, returning the
// exit code.
func runReaper(argv []string, grace time.Duration) int {
	if len(argv) == 0 {
		os.Stderr.WriteString("lionbus cli reaper: no command\n")
		return 127
	}
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	if errno != 0 {
		os.Stderr.WriteString("lionbus cli reaper: prctl(PR_SET_CHILD_SUBREAPER): " + errno.Error() + "\n")
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	_ = os.Unsetenv(reaperEnv)
	path := argv[0]
	if !strings.Contains(path, "/") {
		if lp, err := lookPath(path); err == nil {
			path = lp
		}
	}
	proc, err := os.StartProcess(path, argv, &os.ProcAttr{
		Env:   os.Environ(),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		os.Stderr.WriteString("lionbus cli reaper: " + err.Error() + "\n")
		return 127
	}
	exits := make(chan exit, 16)
	go reapAll(exits)
	code := -1
	for code < 0 {
		select {
		case <-sigs:
			endTree(exits, proc.Pid, &code, grace)
			if code < 0 {
				code = 128 + int(syscall.SIGTERM)
			}
			return code
		case x := <-exits:
			if x.pid == proc.Pid {
				code = x.code
			}
		}
	}
	endTree(exits, proc.Pid, &code, grace)
	return code
}

// exit is a reaped descendant; pid 0 means none is left.
type exit struct{ pid, code int }

// reapAll reaps every child (the CLI and the orphans reparented to the
// reaper) until none is left.
func reapAll(out chan<- exit) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			out <- exit{}
			return
		}
		code := ws.ExitStatus()
		if ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		out <- exit{pid: pid, code: code}
	}
}

// endTree sends SIGTERM to every descendant, SIGKILL to those left after
// grace, and waits until all are reaped; the CLI's code is set when it
// is reaped meanwhile.
func endTree(exits <-chan exit, cli int, code *int, grace time.Duration) {
	signalTree(syscall.SIGTERM)
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	for {
		select {
		case x := <-exits:
			if x.pid == 0 {
				return
			}
			if x.pid == cli && *code < 0 {
				*code = x.code
			}
		case <-deadline.C:
			signalTree(syscall.SIGKILL)
		}
	}
}

// signalTree sends sig to every descendant of the reaper.
func signalTree(sig syscall.Signal) {
	for _, pid := range descendants(os.Getpid()) {
		_ = syscall.Kill(pid, sig)
	}
}

// descendants returns the processes below root, read from /proc.
func descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentOf reads the parent pid from /proc/PID/stat (its fourth field,
// after the command name in parentheses).
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// lookPath finds file in $PATH.
func lookPath(file string) (string, error) {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}
