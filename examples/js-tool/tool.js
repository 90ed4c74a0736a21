// A lionbus tool service in JavaScript, on the lionbus TypeScript SDK
// (clients/js, docs/typescript.md). It serves one tool, word_count, as a
// NATS micro service (`nats micro ls` lists it): the SDK registers it in
// <prefix>_tools and keeps the entry there, checks the arguments against
// the schema before the handler runs, runs each idempotency key at most
// once (the results bucket shared with Go replicas), hands the handler the
// invocation's deadline and cancel as an AbortSignal, and removes the entry
// on a clean stop.
//
// Run: npm ci && NATS_URL=nats://127.0.0.1:4222 node tool.js
import { connect, defineTool, serveTools, ToolError } from "@lionbus/client";

const natsURL = process.env.NATS_URL || "nats://127.0.0.1:4222";
const prefix = process.env.LION_PREFIX || "lion";

const wordCount = defineTool({
  name: "word_count",
  description: "Counts the words of a text (a tool service written in JavaScript).",
  parameters: {
    type: "object",
    properties: { text: { type: "string", maxLength: 100000 } },
    required: ["text"],
    additionalProperties: false,
  },
  handler: ({ text }, { signal }) => {
    signal.throwIfAborted();
    if (text.trim() === "") throw new ToolError("empty_text", "there is nothing to count");
    return { words: text.split(/\s+/).filter((w) => w.length > 0).length };
  },
});

const nc = await connect({ servers: natsURL, name: "lionbus js tool" });
const svc = await serveTools(nc, {
  name: "js-word-count",
  version: "1.0.0",
  description: "word_count, written with the lionbus TypeScript SDK",
  prefix,
  tools: [wordCount],
  log: (level, message, fields) => { if (level !== "debug") console.error(JSON.stringify({ level, message, ...fields })); },
});
console.log(`ready: word_count on ${prefix}.tool.word_count`);

const stop = async () => {
  try {
    await svc.stop();
    await nc.drain();
  } finally {
    process.exit(0);
  }
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
