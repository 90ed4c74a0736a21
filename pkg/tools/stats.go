package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/lionbus/lionbus/pkg/wire"
)

// Bounds of the tool statistics (docs/bounds.md).
const (
	// RecentCalls is how many of a tool's latest calls, on one service,
	// its recent latency is computed over.
	RecentCalls = 100
	// MaxStatsAnswers is the most STATS answers GatherStats keeps.
	MaxStatsAnswers = 256
	// DefaultStatsWait is how long GatherStats waits for answers when
	// given no wait.
	DefaultStatsWait = 500 * time.Millisecond
)

// EndpointData is what a lionbus tool service adds to the micro STATS of
// each of its tools (the endpoint's data): the error answers it gave,
// which micro does not count (a tool error is an answer, not a failed
// request), and its latency over its recent calls.
type EndpointData struct {
	// Errors is how many calls it answered with an error since it
	// started.
	Errors int `json:"errors"`
	// LastError is the latest error answer's code and message;
	// LastErrorAt when it was given.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// Recent is how many calls (at most RecentCalls, the latest) P50
	// and P95 are computed over: the median and the 95th percentile of
	// their durations, from receipt to answer.
	Recent int           `json:"recent"`
	P50    time.Duration `json:"p50_ns"`
	P95    time.Duration `json:"p95_ns"`
}

// toolStats keeps one tool's EndpointData on its service.
type toolStats struct {
	mu      sync.Mutex
	errors  int
	lastErr string
	lastAt  time.Time
	ring    [RecentCalls]time.Duration
	n, next int
}

// took records a call's duration.
func (st *toolStats) took(d time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ring[st.next] = d
	st.next = (st.next + 1) % RecentCalls
	st.n = min(st.n+1, RecentCalls)
}

// answered records an answer: an error one counts.
func (st *toolStats) answered(out wire.ToolOutcome) {
	if out.Error == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.errors++
	st.lastErr = wire.Truncate(out.Error.Code+": "+out.Error.Message, 256)
	st.lastAt = time.Now().UTC()
}

// data returns the statistics.
func (st *toolStats) data() EndpointData {
	st.mu.Lock()
	d := EndpointData{Errors: st.errors, LastError: st.lastErr, LastErrorAt: st.lastAt, Recent: st.n}
	recent := slices.Clone(st.ring[:st.n])
	st.mu.Unlock()
	if len(recent) > 0 {
		slices.Sort(recent)
		d.P50 = recent[(len(recent)-1)/2]
		d.P95 = recent[(len(recent)-1)*95/100]
	}
	return d
}

// GatherStats asks every micro service the connection may reach for its
// statistics ($SRV.STATS) and returns the answers that arrive within wait
// (DefaultStatsWait when 0), at most MaxStatsAnswers, sorted by service
// name and id. A lionbus tool service's endpoints carry an EndpointData
// (see [DecodeEndpointData]); other services' endpoints are as micro
// reports them. Services in other languages that answer STATS are
// listed too.
func GatherStats(ctx context.Context, nc *nats.Conn, wait time.Duration) ([]micro.Stats, error) {
	if wait <= 0 {
		wait = DefaultStatsWait
	}
	subject, err := micro.ControlSubject(micro.StatsVerb, "", "")
	if err != nil {
		return nil, fmt.Errorf("tools: stats: %w", err)
	}
	answers := make(chan *nats.Msg, MaxStatsAnswers)
	inbox := nc.NewInbox()
	sub, err := nc.ChanSubscribe(inbox, answers)
	if err != nil {
		return nil, fmt.Errorf("tools: stats: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest(subject, inbox, nil); err != nil {
		return nil, fmt.Errorf("tools: stats: %w", err)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var out []micro.Stats
	for len(out) < MaxStatsAnswers {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			return sortStats(out), nil
		case m := <-answers:
			var st micro.Stats
			if json.Unmarshal(m.Data, &st) == nil && st.Type == micro.StatsResponseType {
				out = append(out, st)
			}
		}
	}
	return sortStats(out), nil
}

// sortStats sorts by service name, then id.
func sortStats(s []micro.Stats) []micro.Stats {
	slices.SortFunc(s, func(a, b micro.Stats) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	return s
}

// DecodeEndpointData returns the EndpointData a lionbus tool service put
// in an endpoint's statistics, and false for an endpoint without one.
func DecodeEndpointData(e *micro.EndpointStats) (EndpointData, bool) {
	var d EndpointData
	if e == nil || len(e.Data) == 0 || json.Unmarshal(e.Data, &d) != nil {
		return EndpointData{}, false
	}
	return d, true
}
