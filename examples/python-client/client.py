#!/usr/bin/env python3
"""A lionbus client in Python with the standard library only.

It speaks the NATS client protocol over a plain socket and nothing of
lionbus but its documented protocol (docs/protocol.md), doing what
examples/js-client does:

  1. follows the branch's events (lion.events.<branch>.>) as they happen;
  2. creates the branch (verb branch.create) and sends a communicate to it,
     each a structured CloudEvent published with JetStream on
     lion.ops.<verb> (an HPUB whose Nats-Msg-Id header is the event id,
     answered by the stream's PubAck on the client's inbox), after
     subscribing to its answer subject lion.reply.<id>;
  3. prints each answer and the events, one JSON line each, then exits 0
     (1 when an answer is an error event, 2 on a failure).

Run:
  NATS_URL=nats://127.0.0.1:4222 python3 client.py [branch] [instruction]

With the users of deploy/nats/nats.conf:
  NATS_URL=nats://client:PASSWORD@127.0.0.1:4222 \
  LIONBUS_INBOX_PREFIX=_INBOX.client python3 client.py
"""

import json
import os
import queue
import socket
import sys
import threading
import time
import urllib.parse
import uuid

PREFIX = os.environ.get("LION_PREFIX", "lion")
INBOX_PREFIX = os.environ.get("LIONBUS_INBOX_PREFIX", "_INBOX")
TIMEOUT = float(os.environ.get("LION_TIMEOUT", "30"))


class NATSError(Exception):
    pass


class Msg:
    def __init__(self, subject, reply, headers, status, data):
        self.subject = subject
        self.reply = reply
        self.headers = headers  # dict of the first value of each header
        self.status = status  # "503" etc. from a status line, or ""
        self.data = data


class Conn:
    """One NATS connection: a reader thread delivers each subscription's
    messages to its queue; writes are serialized by a lock."""

    def __init__(self, url, name="lionbus-python-client"):
        u = urllib.parse.urlsplit(url if "://" in url else "nats://" + url)
        self.sock = socket.create_connection((u.hostname or "127.0.0.1", u.port or 4222), timeout=10)
        self.rfile = self.sock.makefile("rb")
        self.wlock = threading.Lock()
        self.subs = {}  # sid -> queue.Queue
        self.next_sid = 0
        self.pongs = queue.Queue()
        self.errors = queue.Queue()
        self.closed = False

        info = self._readline()
        if not info.startswith(b"INFO "):
            raise NATSError("expected INFO, got %r" % info[:80])
        self.info = json.loads(info[5:])
        if not self.info.get("headers"):
            raise NATSError("the server does not support headers")
        opts = {
            "verbose": False,
            "pedantic": False,
            "headers": True,
            "no_responders": True,
            "lang": "python",
            "version": "0.1.0",
            "protocol": 1,
            "name": name,
        }
        user = urllib.parse.unquote(u.username or "") or os.environ.get("NATS_USER", "")
        password = urllib.parse.unquote(u.password or "") or os.environ.get("NATS_PASSWORD", "")
        if user:
            opts["user"], opts["pass"] = user, password
        elif os.environ.get("NATS_TOKEN"):
            opts["auth_token"] = os.environ["NATS_TOKEN"]
        self._write(b"CONNECT " + json.dumps(opts).encode() + b"\r\nPING\r\n")
        # The first answer is PONG, or -ERR when the server refuses us.
        line = self._readline()
        if line.startswith(b"-ERR"):
            raise NATSError(line.decode(errors="replace"))
        if line != b"PONG":
            raise NATSError("expected PONG, got %r" % line[:80])
        self.sock.settimeout(None)
        self.reader = threading.Thread(target=self._read_loop, daemon=True)
        self.reader.start()

    def _readline(self):
        line = self.rfile.readline()
        if not line:
            raise NATSError("connection closed by the server")
        return line.rstrip(b"\r\n")

    def _write(self, data):
        with self.wlock:
            self.sock.sendall(data)

    def _read_loop(self):
        try:
            while True:
                line = self._readline()
                if line.startswith(b"MSG ") or line.startswith(b"HMSG "):
                    self._read_msg(line)
                elif line == b"PING":
                    self._write(b"PONG\r\n")
                elif line == b"PONG":
                    self.pongs.put(True)
                elif line.startswith(b"-ERR"):
                    # Permission violations and the like: the connection
                    # stays up, but what was refused will not be answered.
                    self.errors.put(line[5:].decode(errors="replace").strip(" '"))
                elif line.startswith(b"INFO ") or line == b"+OK":
                    pass
                else:
                    raise NATSError("unexpected line %r" % line[:80])
        except (NATSError, OSError, ValueError) as e:
            if not self.closed:
                self.errors.put("read: %s" % e)
        finally:
            for q in list(self.subs.values()):
                q.put(None)

    def _read_msg(self, line):
        parts = line.decode().split(" ")
        if parts[0] == "MSG":  # MSG <subject> <sid> [reply] <size>
            subject, sid = parts[1], int(parts[2])
            reply = parts[3] if len(parts) == 5 else ""
            hdr_len, total = 0, int(parts[-1])
        else:  # HMSG <subject> <sid> [reply] <hdr size> <total size>
            subject, sid = parts[1], int(parts[2])
            reply = parts[3] if len(parts) == 6 else ""
            hdr_len, total = int(parts[-2]), int(parts[-1])
        payload = self.rfile.read(total + 2)  # and its CRLF
        if len(payload) != total + 2:
            raise NATSError("short message")
        headers, status = {}, ""
        if hdr_len:
            head = payload[:hdr_len].decode(errors="replace").split("\r\n")
            # NATS/1.0[ <status>[ <description>]]
            first = head[0].split(" ", 2)
            if len(first) > 1:
                status = first[1]
            for h in head[1:]:
                if ":" in h:
                    k, v = h.split(":", 1)
                    headers.setdefault(k.strip(), v.strip())
        q = self.subs.get(sid)
        if q is not None:
            q.put(Msg(subject, reply, headers, status, payload[hdr_len:total]))

    def subscribe(self, subject):
        """Subscribes to subject; returns (sid, queue of its messages)."""
        self.next_sid += 1
        sid = self.next_sid
        q = queue.Queue()
        self.subs[sid] = q
        self._write(("SUB %s %d\r\n" % (subject, sid)).encode())
        return sid, q

    def unsubscribe(self, sid):
        self.subs.pop(sid, None)
        self._write(("UNSUB %d\r\n" % sid).encode())

    def flush(self, timeout=10):
        """Round trip to the server: everything sent before is processed
        (our subscriptions are in place) when it returns."""
        self._write(b"PING\r\n")
        try:
            self.pongs.get(timeout=timeout)
        except queue.Empty:
            raise NATSError("no PONG within %ss" % timeout)
        self.check_errors()

    def check_errors(self):
        try:
            err = self.errors.get_nowait()
        except queue.Empty:
            return
        raise NATSError(err)

    def hpub(self, subject, reply, headers, data):
        head = "NATS/1.0\r\n" + "".join("%s: %s\r\n" % kv for kv in headers.items()) + "\r\n"
        head = head.encode()
        cmd = "HPUB %s %s %d %d\r\n" % (subject, reply, len(head), len(head) + len(data))
        self._write(cmd.encode() + head + data + b"\r\n")

    def close(self):
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def next_message(conn, q, timeout, what):
    """The next message of q, failing after timeout seconds or when the
    server reports an error."""
    deadline = time.monotonic() + timeout
    while True:
        conn.check_errors()
        left = deadline - time.monotonic()
        if left <= 0:
            raise NATSError("no %s within %ss" % (what, timeout))
        try:
            m = q.get(timeout=min(left, 0.1))
        except queue.Empty:
            continue
        if m is None:
            conn.check_errors()
            raise NATSError("connection lost waiting for %s" % what)
        return m


class Client:
    """lionbus over one NATS connection: JetStream publishes acknowledged
    on a private inbox, answers read on <prefix>.reply.<id>."""

    def __init__(self, conn):
        self.conn = conn
        self.inbox = "%s.%s" % (INBOX_PREFIX, uuid.uuid4().hex)
        self.inbox_sid, self.acks = conn.subscribe(self.inbox + ".*")
        self.n = 0

    def js_publish(self, subject, msg_id, data):
        """Publishes data on subject with JetStream and returns the
        stream's PubAck ({"stream": ..., "seq": ...})."""
        self.n += 1
        reply = "%s.%d" % (self.inbox, self.n)
        headers = {"Nats-Msg-Id": msg_id, "Content-Type": "application/cloudevents+json"}
        self.conn.hpub(subject, reply, headers, data)
        while True:
            m = next_message(self.conn, self.acks, 10, "PubAck for " + subject)
            if m.subject != reply:
                continue  # a late acknowledgement of an earlier publish
            if m.status == "503":
                raise NATSError("no stream stores %s (no responders)" % subject)
            ack = json.loads(m.data)
            if "error" in ack:
                raise NATSError("publish on %s: %s" % (subject, ack["error"].get("description", ack["error"])))
            return ack

    def send(self, verb, data, branch=""):
        """Sends a request and returns its answer event. It subscribes to
        the answer subject before publishing, so the answer cannot be
        missed; a repeated publish (same id) is dropped by the server."""
        ev = {
            "specversion": "1.0",
            "id": str(uuid.uuid4()),
            "source": "/examples/python-client",
            "type": "lionbus.%s.request" % verb,
            "datacontenttype": "application/json",
            "data": data,
        }
        if branch:
            ev["branchid"] = branch
        sid, answers = self.conn.subscribe("%s.reply.%s" % (PREFIX, ev["id"]))
        try:
            self.conn.flush()
            self.js_publish("%s.ops.%s" % (PREFIX, verb), ev["id"], json.dumps(ev).encode())
            m = next_message(self.conn, answers, TIMEOUT, "answer to " + ev["id"])
            return json.loads(m.data)
        finally:
            self.conn.unsubscribe(sid)


_out = threading.Lock()


def out(obj):
    """Prints obj as one JSON line (the event follower prints too)."""
    with _out:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def main():
    url = os.environ.get("NATS_URL", "nats://127.0.0.1:4222")
    branch = sys.argv[1] if len(sys.argv) > 1 else "py-" + uuid.uuid4().hex[:8]
    instruction = sys.argv[2] if len(sys.argv) > 2 else "Hello from Python"

    conn = Conn(url)
    client = Client(conn)
    seen = []
    done = threading.Event()
    _, events = conn.subscribe("%s.events.%s.>" % (PREFIX, branch))

    def follow():
        while True:
            m = events.get()
            if m is None:
                return
            ev = json.loads(m.data)
            seen.append(ev.get("type"))
            out({"event": ev.get("type"), "subject": m.subject})
            if ev.get("type") == "lionbus.run.end":
                done.set()

    threading.Thread(target=follow, daemon=True).start()

    failed = False
    for verb, data, b in [
        ("branch.create", {"branch_id": branch, "chat_model": "scripted:echo"}, ""),
        ("communicate", {"instruction": instruction}, branch),
    ]:
        answer = client.send(verb, data, b)
        out({"verb": verb, "type": answer.get("type"), "data": answer.get("data")})
        if answer.get("type") == "lionbus.error":
            failed = True
    # The communicate's run.end is its last event.
    if not failed:
        done.wait(10)
    time.sleep(0.05)  # let the follower print what is already queued
    conn.close()
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (NATSError, OSError, ValueError) as e:
        print("python-client: %s" % e, file=sys.stderr)
        sys.exit(2)
