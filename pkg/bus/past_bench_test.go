package bus_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/bustest"
	"github.com/lionbus/lionbus/pkg/bus/client"
	"github.com/lionbus/lionbus/pkg/bus/provision"
	"github.com/lionbus/lionbus/pkg/bus/worker"
	"github.com/lionbus/lionbus/pkg/wire"
)

// BenchmarkBranchHistory_past_export_import: on a branch of 2,000
// exchanges (about 2,000 history events), branch.get at the head, at
// the middle and at the first event; export of the whole history; its
// import on a second server.
//
//	go test -run '^$' -bench BenchmarkBranchHistory -benchtime 20x ./pkg/bus
func BenchmarkBranchHistory_past_export_import(b *testing.B) {
	const exchanges = 2000
	src := bustest.New(b, provision.Config{})
	src.StartWorker(b, nil, nil, nil, worker.Config{})
	const id = "bench-past"
	evs := pastBranch(b, src, id, exchanges, 1000)
	ctx := bustest.Ctx(b)
	for _, at := range []struct {
		name string
		seq  uint64
	}{
		{"get_head", 0},
		{"get_at_middle", evs[len(evs)/2].Seq},
		{"get_at_first", evs[0].Seq},
	} {
		b.Run(at.name, func(b *testing.B) {
			for range b.N {
				if _, err := src.Client.BranchGetAt(ctx, id, wire.BranchGetRequest{AtSeq: at.seq}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(evs)), "events")
		})
	}
	var file bytes.Buffer
	b.Run("export", func(b *testing.B) {
		for range b.N {
			file.Reset()
			if _, err := src.Client.ExportBranch(ctx, id, &file, "bench"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(file.Len()), "file-bytes")
	})
	dst := bustest.New(b, provision.Config{})
	dst.StartWorker(b, nil, nil, nil, worker.Config{})
	copies := 0
	b.Run("import", func(b *testing.B) {
		for range b.N {
			copies++
			if _, err := dst.Client.ImportBranch(ctx, bytes.NewReader(file.Bytes()), fmt.Sprintf("copy-%d", copies), client.ImportOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(evs)), "events")
	})
}
