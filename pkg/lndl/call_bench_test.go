package lndl

import "testing"

// benchCallBody is a lact body of the size and shape models write.
const benchCallBody = `github.search_issues(
    query="label:bug is:open sort:updated-desc",
    repo="lionbus/lionbus",
    limit=25,
    include_closed=False,
    fields=["title", "number", "labels", "updated_at"],
    filters={"author": None, "since": "2026-01-01T00:00:00Z", "score": 0.75},
    note='''Look for regressions in the "round" stage,
especially anything mentioning from= or class= arguments.''',  # keep it short
)`

func BenchmarkParseCall(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchCallBody)))
	for b.Loop() {
		if _, err := ParseCall("search", benchCallBody); err != nil {
			b.Fatal(err)
		}
	}
}
