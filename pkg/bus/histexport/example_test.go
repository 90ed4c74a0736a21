package histexport_test

import (
	"bytes"
	"fmt"
	"time"

	"github.com/lionbus/lionbus/pkg/bus/histexport"
	"github.com/lionbus/lionbus/pkg/wire"
)

// A branch's history written as an export, then verified; one edited byte
// is found and located.
func Example() {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var file bytes.Buffer
	w, err := histexport.NewWriter(&file, histexport.Header{BranchID: "b1", ExportedAt: at})
	if err != nil {
		panic(err)
	}
	for _, ev := range []wire.Event{
		{Seq: 1, Type: wire.EventCreated, RequestID: "r1", Time: at, Settings: &wire.Settings{System: "be brief"}},
		{Seq: 4, Type: wire.EventCleared, RequestID: "r2", Time: at.Add(time.Minute)},
	} {
		if err := w.Write(ev); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	s, err := histexport.Verify(bytes.NewReader(file.Bytes()))
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %d events, seq %d to %d, %d lines\n", s.Header.Format, s.Events, s.FirstSeq, s.LastSeq, s.Lines)

	edited := bytes.Replace(file.Bytes(), []byte("be brief"), []byte("be Brief"), 1)
	_, err = histexport.Verify(bytes.NewReader(edited))
	fmt.Println(err)
	// Output:
	// lionbus.history/2: 2 events, seq 1 to 4, 4 lines
	// line 2: histexport: hash does not chain: the line was edited, or a line before it was dropped, inserted or moved
}
