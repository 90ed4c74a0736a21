package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
)

// cpuShares is how a CPU profile's samples divide between the embedded
// server, the harness's clients and the rest (the worker, the connections'
// read loops, the Go runtime's background work such as the GC's), as
// fractions summing to 1.
type cpuShares struct {
	server, client, worker float64
	samples                int64
}

// serverFrame and clientFrame are what a stack holds when its sample is the
// server's or a client's: every goroutine of the embedded nats-server runs
// in its package, every harness client under closedLoop.
// (The harness's package is "main" in the command and its import path
// in its tests.)
const (
	serverFrame = "github.com/nats-io/nats-server/"
	clientFrame = ".closedLoop"
)

// startShares starts a CPU profile in memory; stop ends it and returns the
// shares of its samples, after writing the profile to the file save when
// save is not empty. It fails when a profile is already running (the
// -cpuprofile flag).
func startShares(save string) (stop func() (cpuShares, error), err error) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return nil, err
	}
	return func() (cpuShares, error) {
		pprof.StopCPUProfile()
		if save != "" {
			if err := os.WriteFile(save, buf.Bytes(), 0o644); err != nil {
				return cpuShares{}, err
			}
		}
		return profileShares(&buf)
	}, nil
}

// profileShares reads a gzipped pprof profile (the protocol buffer of
// github.com/google/pprof/proto/profile.proto) and classifies its samples
// by the function names of their stacks.
func profileShares(r io.Reader) (cpuShares, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return cpuShares{}, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return cpuShares{}, err
	}
	type sample struct {
		locs  []uint64
		value int64
	}
	var (
		samples   []sample
		locFuncs  = map[uint64][]uint64{} // location id → function ids
		funcNames = map[uint64]int64{}    // function id → string index
		strs      []string
	)
	err = protoFields(raw, func(field int, v uint64, b []byte) error {
		switch field {
		case 2: // sample
			var s sample
			err := protoFields(b, func(f int, v uint64, b []byte) error {
				switch {
				case f == 1 && b == nil:
					s.locs = append(s.locs, v)
				case f == 1:
					s.locs = appendPacked(s.locs, b)
				case f == 2 && b == nil:
					s.value = int64(v)
				case f == 2:
					if vals := appendPacked(nil, b); len(vals) > 0 {
						s.value = int64(vals[len(vals)-1])
					}
				}
				return nil
			})
			samples = append(samples, s)
			return err
		case 4: // location
			var id uint64
			var fns []uint64
			err := protoFields(b, func(f int, v uint64, b []byte) error {
				switch {
				case f == 1:
					id = v
				case f == 4 && b != nil:
					return protoFields(b, func(f int, v uint64, _ []byte) error {
						if f == 1 {
							fns = append(fns, v)
						}
						return nil
					})
				}
				return nil
			})
			locFuncs[id] = fns
			return err
		case 5: // function
			var id uint64
			var name int64
			err := protoFields(b, func(f int, v uint64, _ []byte) error {
				switch f {
				case 1:
					id = v
				case 2:
					name = int64(v)
				}
				return nil
			})
			funcNames[id] = name
			return err
		case 6: // string table
			strs = append(strs, string(b))
		}
		return nil
	})
	if err != nil {
		return cpuShares{}, fmt.Errorf("cpu profile: %w", err)
	}
	name := func(fn uint64) string {
		if i := funcNames[fn]; i >= 0 && i < int64(len(strs)) {
			return strs[i]
		}
		return ""
	}
	var server, client, all int64
	for _, s := range samples {
		all += s.value
		kind := 0 // worker
	stack:
		for _, loc := range s.locs {
			for _, fn := range locFuncs[loc] {
				n := name(fn)
				if strings.HasPrefix(n, serverFrame) {
					kind = 1
					break stack
				}
				if strings.Contains(n, clientFrame) && (strings.HasPrefix(n, "main.") || strings.Contains(n, "/benchbus.")) {
					kind = 2
				}
			}
		}
		switch kind {
		case 1:
			server += s.value
		case 2:
			client += s.value
		}
	}
	out := cpuShares{samples: int64(len(samples))}
	if all > 0 {
		out.server, out.client = float64(server)/float64(all), float64(client)/float64(all)
		out.worker = 1 - out.server - out.client
	}
	return out, nil
}

// errProto is a protocol buffer the profile reader cannot read.
var errProto = errors.New("malformed protocol buffer")

// protoFields calls fn for each field of the protocol buffer message b:
// with its varint (or fixed) value, or, for a length-delimited field, its
// bytes (v is 0 then).
func protoFields(b []byte, fn func(field int, v uint64, data []byte) error) error {
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return errProto
		}
		b = b[n:]
		field, wire := int(tag>>3), tag&7
		var v uint64
		var data []byte
		switch wire {
		case 0:
			v, n = binary.Uvarint(b)
			if n <= 0 {
				return errProto
			}
			b = b[n:]
		case 1:
			if len(b) < 8 {
				return errProto
			}
			v, b = binary.LittleEndian.Uint64(b), b[8:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return errProto
			}
			data, b = b[n:n+int(l)], b[n+int(l):]
			if data == nil {
				data = []byte{}
			}
		case 5:
			if len(b) < 4 {
				return errProto
			}
			v, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		default:
			return errProto
		}
		if err := fn(field, v, data); err != nil {
			return err
		}
	}
	return nil
}

// appendPacked appends the packed varints of b to dst.
func appendPacked(dst []uint64, b []byte) []uint64 {
	for len(b) > 0 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return dst
		}
		dst, b = append(dst, v), b[n:]
	}
	return dst
}
