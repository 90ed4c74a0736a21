// Package clirun is the part of run (a CLI model's stream, recorded as it
// arrives) that needs no engine: the run log directory rule, the stream
// itself ([Stream]: its first system chunk, its own timeout, the chunks
// folded as they pass), what its end makes of the run ([Outcome]), the
// fan-out of its chunks to several streams ([Tee]) and the resume point of
// a redelivered run ([Resume], [ResumeCall]).
//
// The engine of package ops glues it to the branch: it builds the call and
// stores the instruction first, opens the chunk streams and the run log,
// and records the run's outcome in its final event.
package clirun
