package ops

import "github.com/lionbus/lionbus/pkg/ops/internal/jsonrecover"

// MaxExtractBytes bounds the text JSON is recovered from (10 MiB, as the
// original's extraction, docs/decisions.md#reference-a5). A longer text
// holds no JSON as far as the parse stage is concerned.
const MaxExtractBytes = jsonrecover.MaxBytes

// ErrNoJSON is matched by the error of a parse stage that found no JSON
// object or array in the text, even after repairs: an extraction failure
// (see CodeExtraction).
var ErrNoJSON = jsonrecover.ErrNoJSON
