package console

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/lionbus/lionbus/pkg/tools"
)

// Bounds of the tools page (docs/bounds.md).
const (
	// MaxTools is the most registry entries the tools page lists (the
	// first by name).
	MaxTools = 500
	// ToolStatsWait is how long the tools page waits for the services'
	// statistics (micro STATS answers).
	ToolStatsWait = 500 * time.Millisecond
	// ToolsRefresh is how often, in seconds, the tools page fetches
	// itself again (?refresh=N sets it, 1 to MaxRefresh).
	ToolsRefresh = 5
)

// toolList is the data of the tools page.
type toolList struct {
	Title    string
	Tools    []toolRow
	Invalid  int // registry entries skipped as invalid
	Services int // services that answered STATS
	Limited  bool
	// RecentCalls is how many calls an instance's recent latency is
	// over.
	RecentCalls int
	// Refresh is how often, in seconds, the page fetches itself again.
	Refresh int
}

// toolRow is one registered tool with the services that answer it.
type toolRow struct {
	tools.Entry
	Params    string     // the parameters schema, indented
	Instances []instance // services answering it, by name and id
	Requests  int        // over the instances
	Errors    int        // error answers over the instances
	P95       time.Duration
	LastError string // the latest of the instances'
}

// instance is one running service's figures for one tool.
type instance struct {
	Service, ID, Version string
	Started              time.Time
	Requests, Errors     int
	Recent               int // calls P50 and P95 are over
	P50, P95             time.Duration
	LastError            string
	LastErrorAt          time.Time
	lionbus              bool // it reports lionbus endpoint data
}

// tools serves the tool registry with, for each tool, the services that
// answer it and their recent latency and errors.
func (s *Server) tools(w http.ResponseWriter, r *http.Request) {
	entries, invalid, err := tools.ReadRegistry(r.Context(), s.cl.JetStream(), s.cl.Prefix(), MaxTools+1)
	if err != nil {
		s.fail(w, http.StatusBadGateway, err)
		return
	}
	stats, err := tools.GatherStats(r.Context(), s.cl.Conn(), ToolStatsWait)
	if err != nil {
		s.fail(w, http.StatusBadGateway, err)
		return
	}
	d := toolList{Refresh: refreshSeconds(r, ToolsRefresh), Title: "Tools", Invalid: invalid, Services: len(stats), Limited: len(entries) > MaxTools, RecentCalls: tools.RecentCalls}
	entries = entries[:min(len(entries), MaxTools)]
	for _, e := range entries {
		row := toolRow{Entry: e}
		var params bytes.Buffer
		if json.Indent(&params, e.Parameters, "", "  ") == nil {
			row.Params = params.String()
		}
		var lastAt time.Time
		for _, st := range stats {
			for _, ep := range st.Endpoints {
				if ep == nil || ep.Subject != e.Subject {
					continue
				}
				in := instance{Service: st.Name, ID: st.ID, Version: st.Version, Started: st.Started,
					Requests: ep.NumRequests, Errors: ep.NumErrors, LastError: ep.LastError}
				if data, ok := tools.DecodeEndpointData(ep); ok {
					in.lionbus = true
					in.Errors += data.Errors
					in.Recent, in.P50, in.P95 = data.Recent, data.P50, data.P95
					if data.LastError != "" {
						in.LastError, in.LastErrorAt = data.LastError, data.LastErrorAt
					}
				}
				row.Instances = append(row.Instances, in)
				row.Requests += in.Requests
				row.Errors += in.Errors
				row.P95 = max(row.P95, in.P95)
				if in.LastError != "" && (row.LastError == "" || in.LastErrorAt.After(lastAt)) {
					row.LastError, lastAt = in.LastError, in.LastErrorAt
				}
			}
		}
		slices.SortFunc(row.Instances, func(a, b instance) int {
			return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.ID, b.ID))
		})
		d.Tools = append(d.Tools, row)
	}
	s.render(w, "tools.html", d)
}
