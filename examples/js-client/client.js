// A lionbus client in JavaScript, on the lionbus TypeScript SDK
// (clients/js, docs/typescript.md). It
//
//   1. follows the branch's signal events from its start (watch);
//   2. creates the branch (branchCreate) and sends a communicate to it,
//      each a typed call whose answer it awaits;
//   3. prints each answer and the events, one JSON line each, then exits 0
//      (1 when an answer is an error).
//
// Run: npm ci && NATS_URL=nats://127.0.0.1:4222 node client.js [branch] [instruction]
import { randomUUID } from "node:crypto";
import { LionClient } from "@lionbus/client";

const natsURL = process.env.NATS_URL || "nats://127.0.0.1:4222";
const prefix = process.env.LION_PREFIX || "lion";
const branch = process.argv[2] || `js-${randomUUID().slice(0, 8)}`;
const instruction = process.argv[3] || "Hello from JavaScript";

const lion = await LionClient.connect({ servers: natsURL, prefix, source: "/examples/js-client", name: "lionbus-js-client" });

// From now on: events stored before the watch's consumer is in place count too.
const since = new Date();
const stopWatching = new AbortController();
const watching = (async () => {
  for await (const ev of lion.watch(branch, { since, signal: stopWatching.signal })) {
    console.log(JSON.stringify({ event: ev.type, subject: `${prefix}.events.${branch}.${ev.type.replace(/^lionbus\./, "").replaceAll(".", "_")}` }));
    // The communicate's run.end (or run.failed) is its last event.
    if (ev.type === "lionbus.run.end" || ev.type === "lionbus.run.failed") stopWatching.abort();
  }
})();

let failed = false;
const calls = [
  ["branch.create", () => lion.branchCreate({ branch_id: branch, chat_model: "scripted:echo" })],
  ["communicate", () => lion.communicate(branch, { instruction })],
];
for (const [verb, send] of calls) {
  const answer = await send().answer();
  console.log(JSON.stringify({ verb, type: answer.type, data: answer.event.data }));
  if (answer.error) failed = true;
}
if (failed) stopWatching.abort();
const timer = setTimeout(() => stopWatching.abort(), 10000);
await watching;
clearTimeout(timer);
await lion.close();
process.exit(failed ? 1 : 0);
