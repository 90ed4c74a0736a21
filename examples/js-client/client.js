// A lionbus client written with nats.js and nothing of lionbus but its
// documented protocol (docs/protocol.md). It
//
//   1. follows the branch's events (lion.events.<branch>.>) as they happen;
//   2. creates the branch (verb branch.create) and sends a communicate to
//      it, each a structured CloudEvent published with JetStream on
//      lion.ops.<verb>, its id also the Nats-Msg-Id, after subscribing to
//      its answer subject lion.reply.<id>;
//   3. prints each answer and the events, one JSON line each, then exits 0
//      (1 when an answer is an error event).
//
// Run: NATS_URL=nats://127.0.0.1:4222 node client.js [branch] [instruction]
"use strict";

const { connect, headers, JSONCodec } = require("nats");
const crypto = require("node:crypto");

const natsURL = process.env.NATS_URL || "nats://127.0.0.1:4222";
const prefix = process.env.LION_PREFIX || "lion";
const branch = process.argv[2] || `js-${crypto.randomUUID().slice(0, 8)}`;
const instruction = process.argv[3] || "Hello from JavaScript";
const jc = JSONCodec();

// request builds the CloudEvent of a lionbus request.
function request(verb, data, branchID) {
  const ev = {
    specversion: "1.0",
    id: crypto.randomUUID(),
    source: "/examples/js-client",
    type: `lionbus.${verb}.request`,
    datacontenttype: "application/json",
    data,
  };
  if (branchID) ev.branchid = branchID;
  return ev;
}

// send publishes a request and resolves with its answer event. It
// subscribes to the answer subject first, so the answer cannot be missed.
async function send(nc, js, verb, data, branchID) {
  const ev = request(verb, data, branchID);
  const sub = nc.subscribe(`${prefix}.reply.${ev.id}`, { max: 1 });
  const h = headers();
  h.set("Nats-Msg-Id", ev.id); // the server drops a repeated publish
  h.set("Content-Type", "application/cloudevents+json");
  await js.publish(`${prefix}.ops.${verb}`, jc.encode(ev), { headers: h });
  for await (const m of sub) {
    return jc.decode(m.data);
  }
  throw new Error(`no answer to ${ev.id}`);
}

async function main() {
  const nc = await connect({ servers: natsURL, name: "lionbus-js-client" });
  const js = nc.jetstream();

  const seen = [];
  const events = nc.subscribe(`${prefix}.events.${branch}.>`);
  (async () => {
    for await (const m of events) {
      const ev = jc.decode(m.data);
      seen.push(ev.type);
      console.log(JSON.stringify({ event: ev.type, subject: m.subject }));
    }
  })();

  let failed = false;
  for (const [verb, data, b] of [
    ["branch.create", { branch_id: branch, chat_model: "scripted:echo" }, ""],
    ["communicate", { instruction }, branch],
  ]) {
    const answer = await send(nc, js, verb, data, b);
    console.log(JSON.stringify({ verb, type: answer.type, data: answer.data }));
    if (answer.type === "lionbus.error") failed = true;
  }
  // The communicate's run.end is its last event.
  const deadline = Date.now() + 10000;
  while (!failed && !seen.includes("lionbus.run.end") && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  await nc.drain();
  process.exit(failed ? 1 : 0);
}

main().catch((err) => {
  console.error(`js-client: ${err.message}`);
  process.exit(2);
});
