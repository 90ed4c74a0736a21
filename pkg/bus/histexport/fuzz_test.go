package histexport_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lionbus/lionbus/pkg/bus/histexport"
)

// FuzzVerify: any input either fails with a *LineError or verifies; a
// file that verifies reads back as events that, exported again, verify
// with the same count and sequences. The seed corpus is in
// testdata/fuzz/FuzzVerify.
func FuzzVerify(f *testing.F) {
	f.Add(export(f, sampleEvents()))
	f.Add(export(f, sampleEvents()[:1]))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := histexport.Verify(bytes.NewReader(data))
		if err != nil {
			var le *histexport.LineError
			if !errors.As(err, &le) || le.Line < 1 {
				t.Fatalf("Verify error %v is not a *LineError with a line", err)
			}
			return
		}
		evs, err := readAll(data)
		if err != nil {
			t.Fatalf("Verify passed but reading fails: %v", err)
		}
		if len(evs) != s.Events || evs[0].Seq != s.FirstSeq || evs[len(evs)-1].Seq != s.LastSeq {
			t.Fatalf("summary %+v disagrees with %d events read", s, len(evs))
		}
		var buf bytes.Buffer
		w, err := histexport.NewWriter(&buf, s.Header)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if err := w.Write(ev); err != nil {
				t.Fatalf("re-export: %v", err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		again, err := histexport.Verify(&buf)
		if err != nil {
			t.Fatalf("re-export does not verify: %v", err)
		}
		if again.Events != s.Events || again.LastSeq != s.LastSeq {
			t.Fatalf("re-export summary %+v, want %+v", again, s)
		}
	})
}
