// A lionbus tool service written with nats.js and nothing of lionbus but
// its documented protocol (docs/tools.md):
//
//   1. put a registry entry {name, description, parameters, subject, version}
//      under the tool's name in the KV bucket <prefix>_tools;
//   2. answer lionbus.tool.invoke CloudEvents on <prefix>.tool.<name>, in a
//      queue group, with a lionbus.tool.result CloudEvent whose data is
//      {"output": ...} or {"error": {"code", "message"}};
//   3. remove the entry on a clean shutdown.
//
// It serves one tool, word_count, as a NATS micro service (so `nats micro ls`
// lists it). Run: NATS_URL=nats://127.0.0.1:4222 node tool.js
"use strict";

const { connect, headers, StringCodec } = require("nats");
const crypto = require("node:crypto");

const natsURL = process.env.NATS_URL || "nats://127.0.0.1:4222";
const prefix = process.env.LION_PREFIX || "lion";
const name = "word_count";
const subject = `${prefix}.tool.${name}`;
const entry = {
  name,
  description: "Counts the words of a text (a tool service written in JavaScript).",
  parameters: {
    type: "object",
    properties: { text: { type: "string", maxLength: 100000 } },
    required: ["text"],
    additionalProperties: false,
  },
  subject,
  version: "1.0.0",
};

const sc = StringCodec();

// result builds the lionbus.tool.result event answering an invocation.
function result(data, traceparent) {
  const ev = {
    specversion: "1.0",
    id: crypto.randomUUID(),
    source: "/lionbus/tool/js-word-count",
    type: "lionbus.tool.result",
    time: new Date().toISOString(),
    datacontenttype: "application/json",
    data,
  };
  if (traceparent) ev.traceparent = traceparent;
  return sc.encode(JSON.stringify(ev));
}

// invoke answers one lionbus.tool.invoke event.
function invoke(body) {
  let ev;
  try {
    ev = JSON.parse(sc.decode(body));
  } catch (e) {
    return [{ error: { code: "bad_invocation", message: "not a JSON CloudEvent" } }, ""];
  }
  const trace = typeof ev.traceparent === "string" ? ev.traceparent : "";
  const inv = ev.data || {};
  if (ev.type !== "lionbus.tool.invoke" || inv.function !== name) {
    return [{ error: { code: "bad_invocation", message: `expected a lionbus.tool.invoke of ${name}` } }, trace];
  }
  if (inv.deadline && Date.parse(inv.deadline) < Date.now()) {
    return [{ error: { code: "timeout", message: "the invocation's deadline has passed" } }, trace];
  }
  const args = inv.arguments || {};
  const extra = Object.keys(args).filter((k) => k !== "text");
  if (typeof args.text !== "string" || extra.length > 0) {
    return [{ error: { code: "invalid_arguments", message: "arguments must be {text: string}" } }, trace];
  }
  const words = args.text.split(/\s+/).filter((w) => w.length > 0).length;
  return [{ output: { words } }, trace];
}

async function main() {
  const nc = await connect({ servers: natsURL, name: "lionbus js tool" });
  const kv = await nc.jetstream().views.kv(`${prefix}_tools`, { history: 1 });

  const srv = await nc.services.add({
    name: "js-word-count",
    version: "1.0.0",
    description: "word_count, written with nats.js",
  });
  srv.addEndpoint(name, {
    subject,
    queue: name,
    handler: (err, msg) => {
      if (err) return;
      const [data, trace] = invoke(msg.data);
      const h = headers();
      h.set("Content-Type", "application/cloudevents+json");
      msg.respond(result(data, trace), { headers: h });
    },
  });
  await nc.flush();
  await kv.put(name, sc.encode(JSON.stringify(entry)));
  console.log(`ready: ${name} on ${subject}`);

  const stop = async () => {
    try {
      await kv.delete(name);
      await srv.stop();
      await nc.drain();
    } finally {
      process.exit(0);
    }
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

main().catch((err) => {
  console.error(`js tool: ${err.message}`);
  process.exit(1);
});
