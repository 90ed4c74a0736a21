// Command notes serves the example notes tools (note_put, note_get,
// note_list, over the KV bucket <prefix>_notes) to lionbus workers, with
// the pkg/tools SDK:
//
//	go run ./examples/tools/notes --nats nats://127.0.0.1:4222
package main

import (
	"os"

	"github.com/lionbus/lionbus/examples/tools/demotools"
)

func main() {
	os.Exit(demotools.Main("notes", demotools.Notes))
}
