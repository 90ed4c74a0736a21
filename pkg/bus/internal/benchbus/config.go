package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/provision"
)

// Config is what one run of the harness measures.
type Config struct {
	// Clients are the client counts of the throughput phase.
	Clients []int
	// Duration is how long each side is measured per client count.
	Duration time.Duration
	// Warmup is the untimed load run before each measurement.
	Warmup time.Duration

	// Lengths are the branch lengths, in exchanges, of the history phase.
	Lengths []int
	// Samples is how many sequential requests are timed at each length.
	Samples int

	// HotClients and HotRequests shape the hot-branch phase: HotClients
	// clients at once, each sending HotRequests requests one after another,
	// all to one branch.
	HotClients  int
	HotRequests int

	// Concurrency is the lionbus worker's MaxInFlight (0: the worker's
	// default). The floor worker runs as many requests at once.
	Concurrency int

	// Operate adds an operate side to the throughput phase.
	Operate bool

	// Workers is how many lionbus workers serve (each on its own
	// connection, sharing the consumer); default 1. The floor always has
	// one.
	Workers int

	// RequestTimeout bounds each request.
	RequestTimeout time.Duration

	// LeaseStorage is the storage of the leases stream ("file" or
	// "memory"; "" means the provisioning default).
	LeaseStorage string
	// CacheBytes is the workers' store.Config.CacheBytes (0: the
	// store's default).
	CacheBytes int
	// SameBytes makes the same-messages floor store payloads of the sizes
	// lionbus's communicate publishes (measured by a probe request)
	// instead of the request's data.
	SameBytes bool

	// Phases names the phases to run ("a", "b", "c"); empty means all.
	Phases []string

	// CPUProfile, when set, is the file a CPU profile of the run is
	// written to.
	CPUProfile string
	// ProfilePhase, when set, limits the CPU profile to that phase.
	ProfilePhase string
	// SideProfiles, when set, is a directory each measured run of the
	// throughput phase writes its CPU profile to, as
	// <side>-<clients>.pprof.
	SideProfiles string
	// MemProfile, when set, is the file a heap profile is written to
	// after the last phase, while everything the run started still
	// holds its memory.
	MemProfile string
}

// runs reports whether phase p is to run.
func (c Config) runs(p string) bool {
	return len(c.Phases) == 0 || slices.Contains(c.Phases, p)
}

// defaultConfig is the full run.
func defaultConfig() Config {
	return Config{
		Clients:        []int{1, 8, 64},
		Duration:       5 * time.Second,
		Warmup:         time.Second,
		Lengths:        []int{10, 100, 1000, 2000},
		Samples:        200,
		HotClients:     64,
		HotRequests:    4,
		Workers:        1,
		Operate:        true,
		RequestTimeout: 30 * time.Second,
	}
}

// quickConfig is the smoke run of -quick: 1s phases, short branches.
func quickConfig() Config {
	c := defaultConfig()
	c.Duration = time.Second
	c.Warmup = 200 * time.Millisecond
	c.Lengths = []int{10, 100}
	c.Samples = 50
	return c
}

// parseFlags returns the Config of the command line args. With -quick the
// flags not given take their quick values instead of the defaults.
func parseFlags(args []string, stderr io.Writer) (Config, error) {
	def := defaultConfig()
	fs := flag.NewFlagSet("benchbus", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./pkg/bus/internal/benchbus [flags]\n\n"+
			"Measures lionbus requests against a minimal JetStream request worker; a markdown report on stdout.\n\n")
		fs.PrintDefaults()
	}
	cfg := def
	clients := intList(slices.Clone(def.Clients))
	lengths := intList(slices.Clone(def.Lengths))
	fs.Var(&clients, "clients", "comma-separated client counts of the throughput phase")
	fs.DurationVar(&cfg.Duration, "duration", def.Duration, "measured time per side and client count")
	fs.DurationVar(&cfg.Warmup, "warmup", def.Warmup, "untimed load before each measurement")
	fs.Var(&lengths, "lengths", "comma-separated branch lengths (exchanges) of the history phase, ascending")
	fs.IntVar(&cfg.Samples, "samples", def.Samples, "timed sequential requests at each length")
	fs.IntVar(&cfg.HotClients, "hot-clients", def.HotClients, "clients sending to the hot branch at once")
	fs.IntVar(&cfg.HotRequests, "hot-requests", def.HotRequests, "requests per hot-branch client, one after another")
	fs.BoolVar(&cfg.Operate, "operate", def.Operate, "also measure operate (a validated structured reply) next to communicate in the throughput phase")
	fs.IntVar(&cfg.Workers, "workers", def.Workers, "lionbus workers serving at once (each on its own connection)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 0, "lionbus worker max in flight, and the floor worker's (0: the worker default)")
	fs.DurationVar(&cfg.RequestTimeout, "timeout", def.RequestTimeout, "bound of each request")
	fs.IntVar(&cfg.CacheBytes, "cache-bytes", 0, "bound of the branches each lionbus worker keeps in memory, in encoded bytes (0: the store's default, store.DefaultCacheBytes)")
	fs.StringVar(&cfg.LeaseStorage, "lease-storage", "", "storage of the leases stream: file or memory (default: the provisioning default, file)")
	fs.BoolVar(&cfg.SameBytes, "same-bytes", false, "make the same-messages floor store payloads of the sizes a lionbus communicate publishes (request, history append, each signal event, answer), measured by one probe request, instead of the request's data")
	phases := fs.String("phases", "", "comma-separated phases to run: a (throughput), b (history length), c (hot branch); default all")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	fs.StringVar(&cfg.ProfilePhase, "profile-phase", "", "limit the CPU profile to this phase (a, b or c); default the whole run")
	fs.StringVar(&cfg.SideProfiles, "side-profiles", "", "write the CPU profile of each measured throughput run to this directory, as <side>-<clients>.pprof")
	fs.StringVar(&cfg.MemProfile, "memprofile", "", "write a heap profile to this file after the last phase")
	quick := fs.Bool("quick", false, "short smoke run: 1s phases, lengths 10,100, 50 samples (flags given still apply)")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg.Clients, cfg.Lengths = clients, lengths
	if *phases != "" {
		for _, p := range strings.Split(*phases, ",") {
			if p = strings.TrimSpace(p); p != "a" && p != "b" && p != "c" {
				return Config{}, fmt.Errorf("-phases: unknown phase %q (want a, b or c)", p)
			}
			cfg.Phases = append(cfg.Phases, strings.TrimSpace(p))
		}
	}
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		q := quickConfig()
		if !set["duration"] {
			cfg.Duration = q.Duration
		}
		if !set["warmup"] {
			cfg.Warmup = q.Warmup
		}
		if !set["lengths"] {
			cfg.Lengths = q.Lengths
		}
		if !set["samples"] {
			cfg.Samples = q.Samples
		}
	}
	return cfg, cfg.validate()
}

// validate reports a Config the harness cannot run.
func (c Config) validate() error {
	var errs []error
	if len(c.Clients) == 0 || slices.Min(c.Clients) < 1 {
		errs = append(errs, errors.New("-clients needs at least one count, each at least 1"))
	}
	if c.Duration <= 0 || c.Warmup < 0 || c.RequestTimeout <= 0 {
		errs = append(errs, errors.New("-duration and -timeout must be positive, -warmup not negative"))
	}
	if len(c.Lengths) == 0 || c.Lengths[0] < 1 || !slices.IsSorted(c.Lengths) || len(slices.Compact(slices.Clone(c.Lengths))) != len(c.Lengths) {
		errs = append(errs, errors.New("-lengths needs strictly ascending lengths of at least 1"))
	}
	if c.Samples < 1 || c.HotClients < 1 || c.HotRequests < 1 {
		errs = append(errs, errors.New("-samples, -hot-clients and -hot-requests must be at least 1"))
	}
	if c.Workers < 1 || c.Workers > 16 {
		errs = append(errs, errors.New("-workers must be between 1 and 16"))
	}
	if c.ProfilePhase != "" && (c.CPUProfile == "" || !c.runs(c.ProfilePhase)) {
		errs = append(errs, errors.New("-profile-phase needs -cpuprofile and a phase that runs"))
	}
	if c.CacheBytes < 0 {
		errs = append(errs, fmt.Errorf("-cache-bytes %d: want 0 (the default) or more", c.CacheBytes))
	}
	if c.LeaseStorage != "" && c.LeaseStorage != provision.LeasesOnFile && c.LeaseStorage != provision.LeasesInMemory {
		errs = append(errs, fmt.Errorf("-lease-storage %q: want file or memory", c.LeaseStorage))
	}
	if c.Concurrency < 0 {
		errs = append(errs, errors.New("-concurrency must not be negative"))
	}
	return errors.Join(errs...)
}

// intList is a flag of comma-separated integers.
type intList []int

func (l *intList) String() string {
	if l == nil {
		return ""
	}
	s := make([]string, len(*l))
	for i, n := range *l {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(v string) error {
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("%q is not a comma-separated list of integers", v)
		}
		out = append(out, n)
	}
	*l = out
	return nil
}
