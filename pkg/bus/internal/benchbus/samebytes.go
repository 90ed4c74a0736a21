package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lionbus/lionbus/pkg/bus/protocol"
)

// payloadSizes are the payload bytes of what one lionbus communicate
// publishes: its request, its history append, its signal events in the
// order they were published, and its answer. Under -same-bytes the
// same-messages floor stores payloads of these sizes, so that it and
// lionbus move the same bytes and what is left between them is work.
type payloadSizes struct {
	request, history, reply int
	events                  [sameSignals]int
}

// String lists the sizes for the report.
func (p payloadSizes) String() string {
	ev := make([]string, len(p.events))
	for i, n := range p.events {
		ev[i] = fmt.Sprintf("%s %s", sameSignalTypes[i], bytesStr(float64(n)))
	}
	return fmt.Sprintf("request %s, history append %s, events %s, answer %s",
		bytesStr(float64(p.request)), bytesStr(float64(p.history)), strings.Join(ev, ", "), bytesStr(float64(p.reply)))
}

// sized returns data cut or padded with spaces to n bytes (JSON allows
// trailing white space, so padded JSON stays JSON).
func sized(data []byte, n int) []byte {
	if len(data) >= n {
		return data[:n]
	}
	out := make([]byte, n)
	copy(out, data)
	for i := len(data); i < n; i++ {
		out[i] = ' '
	}
	return out
}

// probeSizes sends one communicate to a branch of its own and reads the
// payload sizes of the request, the history append, the events and the
// answer from a subscription to the subjects they go to.
func (e *env) probeSizes(ctx context.Context) (payloadSizes, error) {
	const branch = "probe-sizes"
	if err := e.createBranch(ctx, branch); err != nil {
		return payloadSizes{}, err
	}
	nc, err := e.connect("benchbus size probe")
	if err != nil {
		return payloadSizes{}, err
	}
	defer nc.Close()
	subj := protocol.Subjects{Prefix: e.res.Config.Prefix}
	var (
		mu     sync.Mutex
		p      payloadSizes
		events int
		seen   = map[string]bool{}
	)
	record := func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case m.Subject == subj.Op("communicate"):
			p.request = len(m.Data)
			seen["request"] = true
		case m.Subject == subj.History(branch):
			p.history = len(m.Data)
			seen["history"] = true
		case strings.HasPrefix(m.Subject, subj.Prefix+".events."+branch+"."):
			if events < len(p.events) {
				p.events[events] = len(m.Data)
			}
			events++
		case strings.HasPrefix(m.Subject, subj.Prefix+".reply."):
			p.reply = len(m.Data)
			seen["reply"] = true
		}
	}
	for _, s := range []string{subj.Op("communicate"), subj.History(branch), subj.Prefix + ".events." + branch + ".>", subj.RepliesWildcard()} {
		if _, err := nc.Subscribe(s, record); err != nil {
			return payloadSizes{}, err
		}
	}
	if err := nc.Flush(); err != nil {
		return payloadSizes{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
	err = e.communicate(rctx, branch)
	cancel()
	if err != nil {
		return payloadSizes{}, fmt.Errorf("size probe: %w", err)
	}
	// What the request published reaches the subscription shortly after
	// its answer.
	deadline := time.Now().Add(2 * time.Second)
	for {
		mu.Lock()
		done := len(seen) == 3 && events >= sameSignals
		got, n := p, events
		mu.Unlock()
		if done {
			if n != sameSignals {
				return payloadSizes{}, fmt.Errorf("size probe: a communicate published %d events, want %d", n, sameSignals)
			}
			e.logf("same-bytes: %s", got)
			return got, nil
		}
		if time.Now().After(deadline) {
			return payloadSizes{}, fmt.Errorf("size probe: saw %v and %d events of one communicate", seen, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
