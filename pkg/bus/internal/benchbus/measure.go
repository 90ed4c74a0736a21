package main

import (
	"math"
	"runtime/metrics"
	"slices"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// counters is a reading of what the process and the server have done so
// far; the difference of two readings is the cost of what ran in between.
type counters struct {
	at time.Time
	// cpu is the process's user+sys CPU time.
	cpu time.Duration
	// The server's message and byte counters (Varz): everything it
	// received from and sent to clients, its internal JetStream clients'
	// traffic included.
	inMsgs, outMsgs, inBytes, outBytes int64
	// jsAPI is the number of JetStream API requests the server served.
	jsAPI uint64
	// The Go runtime's heap bytes allocated and GC cycles completed so
	// far (the process's: server, workers and clients alike), and its
	// live heap as of the last GC.
	allocBytes, gcCycles, liveHeap uint64
	// scanHeap is the part of the heap the GC scans for pointers, as of
	// the last GC: what each collection's marking costs grows with it.
	scanHeap uint64
	// gcCPU is the runtime's estimate of the CPU time the GC has taken.
	gcCPU time.Duration
}

// runtimeSamples are the runtime metrics a reading takes, in the order
// read fills counters from them.
var runtimeSamples = []metrics.Sample{
	{Name: "/gc/heap/allocs:bytes"},
	{Name: "/gc/cycles/total:gc-cycles"},
	{Name: "/gc/heap/live:bytes"},
	{Name: "/cpu/classes/gc/total:cpu-seconds"},
	{Name: "/gc/scan/heap:bytes"},
}

// read takes a reading of ns and the process.
func read(ns *server.Server) counters {
	c := counters{at: time.Now(), cpu: processCPU()}
	rs := slices.Clone(runtimeSamples)
	metrics.Read(rs)
	c.allocBytes, c.gcCycles, c.liveHeap = rs[0].Value.Uint64(), rs[1].Value.Uint64(), rs[2].Value.Uint64()
	c.gcCPU = time.Duration(rs[3].Value.Float64() * float64(time.Second))
	c.scanHeap = rs[4].Value.Uint64()
	if v, err := ns.Varz(&server.VarzOptions{}); err == nil {
		c.inMsgs, c.outMsgs, c.inBytes, c.outBytes = v.InMsgs, v.OutMsgs, v.InBytes, v.OutBytes
		if v.JetStream.Stats != nil {
			c.jsAPI = v.JetStream.Stats.API.Total
		}
	}
	return c
}

// since returns c minus an earlier reading.
func (c counters) since(earlier counters) counters {
	return counters{
		at:       c.at,
		cpu:      c.cpu - earlier.cpu,
		inMsgs:   c.inMsgs - earlier.inMsgs,
		outMsgs:  c.outMsgs - earlier.outMsgs,
		inBytes:  c.inBytes - earlier.inBytes,
		outBytes: c.outBytes - earlier.outBytes,
		jsAPI:    c.jsAPI - earlier.jsAPI,

		allocBytes: c.allocBytes - earlier.allocBytes,
		gcCycles:   c.gcCycles - earlier.gcCycles,
		liveHeap:   c.liveHeap,
		scanHeap:   c.scanHeap,
		gcCPU:      c.gcCPU - earlier.gcCPU,
	}
}

// perOp divides the counters of a delta by n operations.
type perOp struct {
	cpu, gcCPU           time.Duration
	msgs, bytes, inBytes float64
	jsAPI                float64
	alloc                float64
}

func (c counters) per(n int) perOp {
	if n <= 0 {
		return perOp{}
	}
	f := float64(n)
	return perOp{
		cpu:     c.cpu / time.Duration(n),
		gcCPU:   c.gcCPU / time.Duration(n),
		msgs:    float64(c.inMsgs+c.outMsgs) / f,
		bytes:   float64(c.inBytes+c.outBytes) / f,
		inBytes: float64(c.inBytes) / f,
		jsAPI:   float64(c.jsAPI) / f,
		alloc:   float64(c.allocBytes) / f,
	}
}

// latency summarizes request latencies.
type latency struct {
	n             int
	p50, p99, max time.Duration
}

// summarize returns the nearest-rank percentiles of lat.
func summarize(lat []time.Duration) latency {
	if len(lat) == 0 {
		return latency{}
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return latency{n: len(s), p50: rank(0.50), p99: rank(0.99), max: s[len(s)-1]}
}
