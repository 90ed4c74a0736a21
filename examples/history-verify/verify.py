#!/usr/bin/env python3
"""Verify a lionbus branch export (format lionbus.history/2 or /1) with the
standard library only, following docs/history.md and nothing else.

Run:
  python3 verify.py FILE

Prints one JSON line {"good": true, "branch_id", "events", "first_seq",
"last_seq", "lines", "head"} and exits 0 for a good file; prints
"line N: reason" on stderr and exits 1 for a bad one, 2 on a usage error.
"""

import hashlib
import json
import sys

FORMATS = {"lionbus.history/1", "lionbus.history/2"}
PREFIX = b'{"lionhash":"'
HEX = set(b"0123456789abcdef")
EVENT_TYPES = {"branch.created", "branch.messages", "branch.cleared", "branch.updated",
               "branch.forked", "branch.approval_requested", "branch.compacted"}


class Bad(Exception):
    def __init__(self, line, reason):
        super().__init__(f"line {line}: {reason}")


def lines_of(data):
    """Yields (number, bytes) for each line; every line ends with \\n."""
    start, n = 0, 0
    while start < len(data):
        n += 1
        end = data.find(b"\n", start)
        if end < 0:
            raise Bad(n, "the last line has no newline")
        yield n, data[start:end]
        start = end + 1


def verify(data):
    prev = bytes(32)
    header, events, last_seq, first_seq, ended = None, 0, 0, 0, False
    n = 0
    for n, line in lines_of(data):
        if ended:
            raise Bad(n, "data after the end line")
        # The hash member: 13 bytes, 64 hex digits, then '",' (79 bytes).
        digits = line[len(PREFIX):len(PREFIX) + 64]
        if not line.startswith(PREFIX) or line[len(PREFIX) + 64:len(PREFIX) + 66] != b'",' \
                or len(digits) != 64 or not set(digits) <= HEX:
            raise Bad(n, "does not start with its hash member")
        canonical = b"{" + line[len(PREFIX) + 66:]
        want = hashlib.sha256(prev + canonical).digest()
        if want.hex().encode() != digits:
            raise Bad(n, "hash does not chain: this line was edited, or one before it dropped, inserted or moved")
        prev = want
        try:
            ce = json.loads(canonical)
        except ValueError as e:
            raise Bad(n, f"not JSON: {e}")
        if ce.get("specversion") != "1.0" or ce.get("datacontenttype") != "application/json":
            raise Bad(n, "not a CloudEvent of this format")
        data_ = ce.get("data")
        if n == 1:
            if ce.get("type") != "lionbus.history.export":
                raise Bad(n, "not a header")
            if data_.get("format") not in FORMATS:
                raise Bad(n, f"unsupported format {data_.get('format')!r}")
            header = data_
            continue
        if ce.get("subject") != header["branch_id"]:
            raise Bad(n, "a line of another branch")
        if ce.get("type") == "lionbus.history.end":
            if data_ != {"events": events, "last_seq": last_seq}:
                raise Bad(n, "the end line does not match the events")
            ended = True
            continue
        etype = ce.get("type", "").removeprefix("lionbus.")
        if etype not in EVENT_TYPES or data_.get("type") != etype:
            raise Bad(n, f"not a history event: {ce.get('type')!r}")
        seq = data_.get("seq", 0)
        if seq != ce.get("lionseq") or seq <= last_seq:
            raise Bad(n, f"seq {seq} out of order")
        # The first event starts the history: a branch.created, or in
        # version 2 also a branch.compacted (retention dropped what came
        # before it); no branch.created follows it.
        starts = {"branch.created"}
        if header["format"] != "lionbus.history/1":
            starts.add("branch.compacted")
        if events == 0 and etype not in starts:
            raise Bad(n, f"{etype} cannot start the history")
        if events > 0 and etype == "branch.created":
            raise Bad(n, "branch.created after the first event")
        if etype == "branch.compacted" and not isinstance(data_.get("compaction"), dict):
            raise Bad(n, "a branch.compacted without its compaction")
        if events == 0:
            first_seq = seq
        events, last_seq = events + 1, seq
    if not ended:
        raise Bad(n + 1, "no end line: the file is cut short")
    return {"good": True, "branch_id": header["branch_id"], "events": events,
            "first_seq": first_seq, "last_seq": last_seq, "lines": n, "head": prev.hex()}


def main():
    if len(sys.argv) != 2:
        print("usage: verify.py FILE", file=sys.stderr)
        return 2
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    try:
        print(json.dumps(verify(data)))
    except Bad as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
