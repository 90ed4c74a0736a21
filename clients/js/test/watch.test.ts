// Watching a branch's signal events: replayed from the events stream, in
// order, typed by their type.
import { test } from "node:test";
import assert from "node:assert/strict";
import { signalTypes } from "../src/index.js";
import type { SignalEvent } from "../src/index.js";
import { conforms } from "./conform.js";
import { client, fresh } from "./helpers.js";

test("watch delivers a communicate's signal events, typed, in order", async (t) => {
  const lion = await client(t);
  const b = fresh("watch");
  await lion.branchCreate({ branch_id: b, chat_model: "scripted:echo" });
  const ac = new AbortController();
  const seen: SignalEvent[] = [];
  // From now on: events stored before the watch's consumer starts count too.
  const since = new Date();
  const watching = (async () => {
    for await (const ev of lion.watch(b, { since, signal: ac.signal })) {
      seen.push(ev);
      if (ev.type === "lionbus.run.end") ac.abort();
    }
  })();
  const call = lion.communicate(b, { instruction: "watched" });
  await call;
  await watching;
  assert.deepEqual(seen.map((e) => e.type), ["lionbus.run.start", "lionbus.message.added", "lionbus.message.added", "lionbus.run.end"]);
  for (const ev of seen) {
    assert.ok(signalTypes.includes(ev.type));
    conforms(ev.type, ev.data);
    assert.equal(ev.data.request_id, call.id);
    if (ev.type === "lionbus.message.added") assert.ok(["instruction", "assistant_response"].includes(ev.data.message.kind));
    if (ev.type === "lionbus.run.end") assert.equal((ev.data.result as { value?: unknown }).value, "watched");
  }

  // A late watcher replays them all.
  const ac2 = new AbortController();
  const again: string[] = [];
  for await (const ev of lion.watch(b, { all: true, signal: ac2.signal })) {
    again.push(ev.type);
    if (ev.type === "lionbus.run.end") ac2.abort();
  }
  assert.deepEqual(again, seen.map((e) => e.type));
});
