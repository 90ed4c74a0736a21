package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// opCount is what the server was asked to do for a side's requests,
// counted by a subscription to ">" (every message of the account, in
// either direction) during a short unmeasured run: messages by what
// they are.
type opCount struct {
	side     string
	requests int
	errs     int
	byClass  map[string]int
	// bytesByClass is the bytes of each class's messages: subject,
	// reply, headers and payload (nats.Msg.Size).
	bytesByClass map[string]int
}

// per returns the messages of class per request.
func (o opCount) per(class string) float64 { return o.perRequest(o.byClass[class]) }

// bytesPer returns the bytes of class's messages per request.
func (o opCount) bytesPer(class string) float64 { return o.perRequest(o.bytesByClass[class]) }

// total returns all counted messages per request.
func (o opCount) total() float64 { return o.perRequest(sum(o.byClass)) }

// totalBytes returns the bytes of all counted messages per request.
func (o opCount) totalBytes() float64 { return o.perRequest(sum(o.bytesByClass)) }

// perRequest divides n by the counted requests (0 when there were none).
func (o opCount) perRequest(n int) float64 {
	if o.requests == 0 {
		return 0
	}
	return float64(n) / float64(o.requests)
}

// sum adds up the values of m.
func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// countBytes formats a count per request and its bytes: "4.00 · 2.1 KiB";
// a class a side never sent is "–".
func countBytes(n, bytes float64) string {
	if n == 0 {
		return "–"
	}
	return count2(n) + " · " + bytesStr(bytes)
}

// opsClients and opsPerClient shape the counted run: 8 clients, each
// sending 40 requests one after another.
const (
	opsClients   = 8
	opsPerClient = 40
)

// countOps runs do opsClients×opsPerClient times (each client its
// requests one after another) with a subscription to ">" counting every
// message, by messageClass.
func (e *env) countOps(ctx context.Context, side string, do func(context.Context, int) error) (opCount, error) {
	nc, err := e.connect("benchbus sniffer")
	if err != nil {
		return opCount{}, err
	}
	defer nc.Close()
	out := opCount{side: side, byClass: map[string]int{}, bytesByClass: map[string]int{}}
	var mu sync.Mutex
	sub, err := nc.Subscribe(">", func(m *nats.Msg) {
		c := messageClass(m)
		mu.Lock()
		out.byClass[c]++
		out.bytesByClass[c] += m.Size()
		mu.Unlock()
	})
	if err != nil {
		return opCount{}, err
	}
	_ = sub.SetPendingLimits(-1, -1)
	if err := nc.Flush(); err != nil {
		return opCount{}, err
	}
	var wg sync.WaitGroup
	errs := make([]int, opsClients)
	for i := range opsClients {
		wg.Go(func() {
			for range opsPerClient {
				rctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
				if do(rctx, i) != nil {
					errs[i]++
				}
				cancel()
			}
		})
	}
	wg.Wait()
	// What the last requests set off (acks, deletes) reaches the
	// subscription shortly after their answers.
	time.Sleep(300 * time.Millisecond)
	_ = sub.Unsubscribe()
	mu.Lock()
	defer mu.Unlock()
	for _, n := range errs {
		out.errs += n
	}
	out.requests = opsClients*opsPerClient - out.errs
	out.byClass = maps.Clone(out.byClass)
	out.bytesByClass = maps.Clone(out.bytesByClass)
	return out, nil
}

// phaseOps counts the messages of the floor's, the same-messages
// floor's and lionbus's requests (see countOps).
func (e *env) phaseOps(ctx context.Context) ([]opCount, error) {
	branches := make([]string, opsClients)
	for i := range branches {
		branches[i] = fmt.Sprintf("ops-%d", i)
	}
	if err := e.createBranches(ctx, branches); err != nil {
		return nil, err
	}
	var out []opCount
	for _, side := range []struct {
		name string
		do   func(context.Context, int) error
	}{
		{"floor", func(ctx context.Context, _ int) error { return e.floorCl.do(ctx, "", instruction) }},
		{"same-messages floor", func(ctx context.Context, i int) error { return e.sameCl.do(ctx, branches[i], instruction) }},
		{"lionbus", func(ctx context.Context, i int) error { return e.communicate(ctx, branches[i]) }},
	} {
		e.logf("messages: %s, %d clients × %d requests", side.name, opsClients, opsPerClient)
		c, err := e.countOps(ctx, side.name, side.do)
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

// apiVerbs are the tokens of a JetStream API subject that name the
// operation; the token after them names the stream.
var apiVerbs = map[string]bool{
	"STREAM": true, "CONSUMER": true, "DIRECT": true, "MSG": true, "GET": true, "NEXT": true, "DELETE": true,
	"INFO": true, "PURGE": true, "CREATE": true, "UPDATE": true, "NAMES": true, "LIST": true, "DURABLE": true,
}

// messageClass names what message m is to the server.
func messageClass(m *nats.Msg) string {
	s := m.Subject
	tok := strings.Split(s, ".")
	if strings.HasPrefix(m.Reply, "$JS.ACK.") {
		// A stored message delivered to a pull request: the server
		// sends it under its own subject to the request's inbox.
		stream := ""
		if rt := strings.Split(m.Reply, "."); len(rt) > 2 {
			stream = rt[2]
			if len(rt) > 9 {
				stream = rt[4]
			}
		}
		return "fetched message of " + stream
	}
	switch {
	case strings.HasPrefix(s, "$JS.API."):
		i := 2
		for i < len(tok) && apiVerbs[tok[i]] {
			i++
		}
		name := strings.Join(tok[2:i], ".")
		if name == "CONSUMER.MSG.NEXT" {
			return "API CONSUMER.MSG.NEXT (pull request)"
		}
		if i < len(tok) {
			name += " " + tok[i]
		}
		return "API " + name
	case strings.HasPrefix(s, "$JS.ACK."):
		kind, _, _ := bytes.Cut(m.Data, []byte(" "))
		k := string(kind)
		if k == "" {
			k = "+ACK"
		}
		if m.Reply != "" {
			k += " awaited"
		}
		stream := ""
		if len(tok) > 2 {
			stream = tok[2]
			if len(tok) > 9 {
				// $JS.ACK.<domain>.<hash>.<stream>... (v2 form)
				stream = tok[4]
			}
		}
		return "ack " + stream + " " + k
	case strings.HasPrefix(s, "$KV."):
		op := "put"
		if m.Header.Get("KV-Operation") != "" {
			op = strings.ToLower(m.Header.Get("KV-Operation"))
		}
		bucket := ""
		if len(tok) > 1 {
			bucket = tok[1]
		}
		return "KV " + op + " " + bucket
	case strings.HasPrefix(s, "_INBOX.") || strings.HasPrefix(s, "_INBOX_"):
		switch {
		case m.Header.Get("Status") != "":
			return "to inbox: status " + m.Header.Get("Status")
		case m.Header.Get("Nats-Stream") != "":
			return "to inbox: direct-get response"
		default:
			return "to inbox: reply (PubAck, API response)"
		}
	case strings.HasPrefix(s, "$"):
		if len(tok) > 3 {
			return strings.Join(tok[:3], ".")
		}
		return s
	}
	name := s
	if len(tok) > 2 {
		name = tok[0] + "." + tok[1] + ".*"
	}
	if m.Reply != "" {
		return "publish " + name + " (awaiting a reply)"
	}
	return "publish " + name
}

// writeOps prints the counted runs side by side.
func (e *env) writeOps(w io.Writer, counts []opCount) {
	fmt.Fprintf(w, "## Messages the server handles per request\n\n")
	fmt.Fprintf(w, "Counted, not timed: %d clients each sending %d requests one after another, per side, with one more "+
		"connection subscribed to `>`, which receives every message of the account whichever way it goes: what clients "+
		"publish (stream publishes, JetStream API requests, acks, KV writes) and what the server sends them (PubAcks "+
		"and API replies, fetched messages, pull statuses, direct-get responses). A stream publish \"awaiting a reply\" "+
		"waits for its PubAck; acks \"awaited\" are double acks. Idle polls of the sides not running add a few pull "+
		"requests per second. Each cell is messages per request, then their bytes per request (subject, reply, headers "+
		"and payload, as the sniffer receives them).\n\n", opsClients, opsPerClient)
	classes := map[string]bool{}
	for _, c := range counts {
		for k := range c.byClass {
			classes[k] = true
		}
	}
	head := []string{"message"}
	for _, c := range counts {
		head = append(head, c.side)
	}
	t := newTable(head...)
	for _, k := range slices.Sorted(maps.Keys(classes)) {
		row := []string{"`" + k + "`"}
		for _, c := range counts {
			row = append(row, countBytes(c.per(k), c.bytesPer(k)))
		}
		t.add(row...)
	}
	row := []string{"**all messages**"}
	for _, c := range counts {
		row = append(row, countBytes(c.total(), c.totalBytes()))
	}
	t.add(row...)
	row = []string{"requests (errors)"}
	for _, c := range counts {
		row = append(row, fmt.Sprintf("%d (%d)", c.requests, c.errs))
	}
	t.add(row...)
	t.write(w)
}
