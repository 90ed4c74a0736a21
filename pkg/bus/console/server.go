package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/protocol"
)

// Bounds of the console (docs/bounds.md).
const (
	// PageSize is how many branches one page of the branch list shows.
	PageSize = 50
	// MaxTimelineEvents is the most history events a branch page reads;
	// a longer history shows its first MaxTimelineEvents and says so.
	MaxTimelineEvents = 2000
	// MaxLiveClients is the most server-sent event streams served at
	// once; one more is answered 503.
	MaxLiveClients = 64
	// DefaultListen is the address publisher console listens on by
	// default: loopback only.
	DefaultListen = "127.0.0.1:8222"
)

// ErrNoClient is returned by New without a client.
var ErrNoClient = errors.New("console: no client")

// ErrInvalidOption is returned by New for an option it cannot use.
var ErrInvalidOption = errors.New("console: invalid option")

//go:embed assets
var assets embed.FS

// Server is the console's HTTP side: its handler reads everything through
// the client it was made with.
type Server struct {
	cl    *client.Client
	pages *template.Template
	mux   *http.ServeMux
	live  atomic.Int64 // server-sent event streams open
	// approver is the NATS user approvals are answered as; "" offers
	// no answers (WithApprover).
	approver string
}

// New returns the console of cl, a client connected with the user's
// credentials.
func New(cl *client.Client, opts ...Option) (*Server, error) {
	if cl == nil {
		return nil, ErrNoClient
	}
	pages, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	s := &Server{cl: cl, pages: pages, mux: http.NewServeMux()}
	for _, o := range opts {
		o(s)
	}
	if s.approver != "" && !protocol.ValidToken(s.approver) {
		return nil, fmt.Errorf("%w: approver %q is not a subject token", ErrInvalidOption, s.approver)
	}
	static, _ := fs.Sub(assets, "assets")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/branches", http.StatusFound)
	})
	s.mux.HandleFunc("GET /branches", s.branches)
	s.mux.HandleFunc("GET /branches/{id}", s.branch)
	s.mux.HandleFunc("GET /branches/{id}/live", s.branchLive)
	s.mux.HandleFunc("GET /runs/{id}", s.run)
	s.mux.HandleFunc("GET /runs/{id}/live", s.runLive)
	s.mux.HandleFunc("GET /batches", s.batches)
	s.mux.HandleFunc("GET /batches/{id}", s.batch)
	s.mux.HandleFunc("GET /batches/{id}/live", s.batchLive)
	s.mux.HandleFunc("GET /dead-letters", s.deadLetters)
	s.mux.HandleFunc("GET /approvals", s.approvals)
	s.mux.HandleFunc("GET /tools", s.tools)
	// The console's only writes: forms of its own pages, refused when a
	// browser says they come from another site.
	writes := http.NewCrossOriginProtection()
	s.mux.Handle("POST /dead-letters/{key}/retry", writes.Handler(s.deadLetterAction(true)))
	s.mux.Handle("POST /dead-letters/{key}/delete", writes.Handler(s.deadLetterAction(false)))
	s.mux.Handle("POST /approvals/{id}/approve", writes.Handler(s.answer(true)))
	s.mux.Handle("POST /approvals/{id}/deny", writes.Handler(s.answer(false)))
	s.mux.Handle("POST /branches/{id}/fork", writes.Handler(http.HandlerFunc(s.fork)))
	return s, nil
}

// ServeHTTP serves the console's pages.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	s.mux.ServeHTTP(w, r)
}

// Serve serves the console on ln until ctx ends, then shuts the server
// down (open event streams end with ctx) and returns nil.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	<-done
	return err
}

// render writes page name with data, or a 500 when it fails.
func (s *Server) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := s.pages.ExecuteTemplate(w, name, data); err != nil {
		http.Error(w, "console: "+err.Error(), http.StatusInternalServerError)
	}
}

// fail shows an error page with status.
func (s *Server) fail(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	s.render(w, "error.html", map[string]any{"Title": http.StatusText(status), "Error": err.Error()})
}

// MaxRefresh is the longest refresh period, in seconds, a self-refreshing
// page's ?refresh= may ask for (the tools and approvals pages).
const MaxRefresh = 300

// refreshSeconds is r's ?refresh= (seconds, 1 to MaxRefresh), else def.
func refreshSeconds(r *http.Request, def int) int {
	n, err := strconv.Atoi(r.URL.Query().Get("refresh"))
	if err != nil || n < 1 || n > MaxRefresh {
		return def
	}
	return n
}
