// Tool services in TypeScript, called by a real worker: through operate,
// with arguments checked before the handler, cancel and deadline reaching
// the handler as its AbortSignal, the registry entry kept alive.
import { test } from "node:test";
import assert from "node:assert/strict";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { defineTool, InvalidConfigError, LionClient, serveTools, ToolError } from "../src/index.js";
import type { ToolService } from "../src/index.js";
import { conforms } from "./conform.js";
import { conn, fresh, gate, invoke, until } from "./helpers.js";

const wordsSchema = {
  type: "object",
  properties: { text: { type: "string", maxLength: 1000 } },
  required: ["text"],
  additionalProperties: false,
};

async function serve(t: { after(fn: () => unknown): void }, nc: Awaited<ReturnType<typeof conn>>, opts: Parameters<typeof serveTools>[1]): Promise<ToolService> {
  const svc = await serveTools(nc, opts);
  t.after(() => svc.stop({ timeout: 1000 }));
  return svc;
}

test("a tool served from TypeScript is called through operate; invalid arguments never reach it", async (t) => {
  const nc = await conn(t);
  const name = fresh("word_count").replace("-", "_");
  const seen: unknown[] = [];
  const svc = await serve(t, nc, {
    name: fresh("ts-words"), version: "1.0.0",
    tools: [defineTool<{ text: string }>({
      name, description: "Counts the words of a text.", parameters: wordsSchema,
      handler: ({ text }, ctx) => {
        seen.push(text);
        assert.equal(ctx.invocation.function, name);
        assert.ok(ctx.deadline.getTime() > Date.now());
        if (text === "refuse") throw new ToolError("refused", "asked to refuse");
        if (text === "crash") throw new Error("boom");
        return { words: text.split(/\s+/).filter(Boolean).length };
      },
    })],
  });
  const lion = new LionClient(nc);
  const b = fresh("operate-ts");
  const reply = {
    answer: "counted", action_required: true,
    action_requests: [
      { function: name, arguments: { text: "tools in any language" } },
      { function: name, arguments: { text: 3 } },
      { function: name, arguments: { text: "x", extra: true } },
      { function: name, arguments: { text: "refuse" } },
      { function: name, arguments: { text: "crash" } },
    ],
  };
  await lion.branchCreate({ branch_id: b, tools: [name], chat_model: { provider: "scripted", replies: [JSON.stringify(reply)] } });
  const res = await lion.operate(b, { instruction: "count", actions: true, response_format: { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] } });
  conforms("lionbus.operate.result", res);
  const responses = (res.value as { action_responses: { output?: unknown; error?: { code: string; message: string } }[] }).action_responses;
  assert.equal(responses.length, 5);
  assert.deepEqual(responses[0].output, { words: 4 });
  assert.equal(responses[1].error?.code, "invalid_arguments");
  assert.match(responses[1].error!.message, /\/text/);
  assert.equal(responses[2].error?.code, "invalid_arguments");
  assert.deepEqual(responses[3].error, { code: "refused", message: "asked to refuse" });
  assert.deepEqual(responses[4].error, { code: "tool_failed", message: "boom" });
  // The handler saw only the valid arguments.
  assert.deepEqual(seen.sort(), ["crash", "refuse", "tools in any language"]);
  assert.equal(svc.runs(name), 3);
  const stats = await svc.stats();
  assert.equal(stats.endpoints?.[0].num_requests, 5);
});

test("a cancel of the request aborts the handler", async (t) => {
  const nc = await conn(t);
  const name = fresh("hang");
  const started = gate();
  const ended = gate<unknown>();
  await serve(t, nc, {
    name: fresh("ts-hang"), version: "1.0.0",
    tools: [{
      name, timeout: 60_000,
      handler: (_args, { signal }) => new Promise((_, reject) => {
        started.open();
        signal.addEventListener("abort", () => {
          ended.open(signal.reason);
          reject(signal.reason);
        });
      }),
    }],
  });
  const lion = new LionClient(nc);
  const b = fresh("cancel");
  await lion.branchCreate({ branch_id: b, tools: [name] });
  const call = lion.act(b, { action_requests: [{ function: name }] });
  await started.promise;
  await call.cancel();
  const reason = (await ended.promise) as Error;
  assert.equal(reason.name, "AbortError");
  await assert.rejects(call, (err: unknown) => (err as { code?: string }).code === "canceled");
});

test("the invocation's deadline aborts the handler with a TimeoutError, and nothing is remembered", async (t) => {
  const nc = await conn(t);
  const name = fresh("slow");
  const reasons: string[] = [];
  const svc = await serve(t, nc, {
    name: fresh("ts-slow"), version: "1.0.0",
    tools: [{
      name, timeout: 60_000,
      handler: (args, { signal, deadline }) => new Promise((resolve, reject) => {
        if (args.quick) return resolve("quick");
        assert.ok(deadline.getTime() - Date.now() < 5000, "the invocation's deadline, not the tool's timeout");
        signal.addEventListener("abort", () => {
          reasons.push((signal.reason as Error).name);
          reject(signal.reason);
        });
      }),
    }],
  });
  const key = `${fresh("req")}/tool/0`;
  const late = await invoke(nc, name, {}, key, { deadline: new Date(Date.now() + 300) });
  assert.deepEqual(late.data.error?.code, "timeout");
  assert.deepEqual(reasons, ["TimeoutError"]);
  // The effect of a timed-out run is unknown: the key is free again.
  const again = await invoke(nc, name, { quick: true }, key);
  assert.equal(again.data.output, "quick");
  assert.equal(svc.runs(name), 2);
});

test("the registry entry is written back when it vanishes, and removed on stop", async (t) => {
  const nc = await conn(t);
  const name = fresh("kept");
  const svc = await serve(t, nc, {
    name: fresh("ts-kept"), version: "2.1.0", heartbeat: 100,
    tools: [{ name, description: "Kept alive.", parameters: wordsSchema, handler: () => "ok" }],
  });
  const kv = await new Kvm(nc).open("lion_tools");
  const entry = await kv.get(name);
  assert.ok(entry);
  const value = entry.json<Record<string, unknown>>();
  conforms("tools/tool.entry", value);
  assert.deepEqual(value, { name, description: "Kept alive.", parameters: wordsSchema, subject: `lion.tool.${name}`, version: "2.1.0" });
  await kv.delete(name);
  await until("the entry to be written back", async () => (await kv.get(name))?.operation === "PUT");
  // Unchanged entries are not rewritten.
  const rev = (await kv.get(name))!.revision;
  await new Promise((r) => setTimeout(r, 350));
  assert.equal((await kv.get(name))!.revision, rev);
  await svc.stop();
  assert.notEqual((await kv.get(name))?.operation, "PUT");
});

test("a registry bucket that vanished is created again with the entry", async (t) => {
  const nc = await conn(t);
  const prefix = "regloss"; // its own buckets: the other tests' registry stays
  const name = fresh("back");
  const svc = await serve(t, nc, { name: fresh("ts-back"), version: "1.0.0", prefix, heartbeat: 100, tools: [{ name, handler: () => "ok" }] });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.delete(`KV_${prefix}_tools`);
  const kvm = new Kvm(nc);
  await until("the bucket and the entry to be back", async () => {
    try {
      return (await (await kvm.open(`${prefix}_tools`)).get(name))?.operation === "PUT";
    } catch {
      return false;
    }
  });
  await svc.stop();
});

test("maxConcurrent bounds the handlers; one that waits past its deadline runs nothing", async (t) => {
  const nc = await conn(t);
  const name = fresh("one");
  const release = gate();
  const ran: string[] = [];
  const svc = await serve(t, nc, {
    name: fresh("ts-one"), version: "1.0.0", maxConcurrent: 1,
    tools: [{ name, handler: async (args) => {
      ran.push(String(args.id));
      if (args.id === "a") await release.promise;
      return args.id;
    } }],
  });
  const a = invoke(nc, name, { id: "a" }, `${fresh("r")}/tool/0`);
  await until("a to run", () => ran.length === 1);
  // b waits for the slot past its deadline; c waits without one.
  const b = invoke(nc, name, { id: "b" }, `${fresh("r")}/tool/0`, { deadline: new Date(Date.now() + 200) });
  await new Promise((r) => setTimeout(r, 50));
  const c = invoke(nc, name, { id: "c" }, `${fresh("r")}/tool/0`);
  assert.equal((await b).data.error?.code, "timeout");
  release.open();
  assert.equal((await a).data.output, "a");
  assert.equal((await c).data.output, "c");
  assert.deepEqual(ran, ["a", "c"]);
  assert.equal(svc.runs(name), 2);
});

test("bad tool declarations are refused", async (t) => {
  const nc = await conn(t);
  const bad = [
    { name: "a.b", handler: () => 1 },
    { name: "ok", parameters: { type: "string" }, handler: () => 1 },
    { name: "ok", parameters: { type: "object", properties: { x: { $ref: "https://example.com/x.json" } } }, handler: () => 1 },
    { name: "ok", description: "x".repeat(9000), handler: () => 1 },
  ];
  for (const tool of bad) {
    await assert.rejects(serveTools(nc, { name: "bad", version: "1.0.0", tools: [tool] }), InvalidConfigError, JSON.stringify(tool).slice(0, 80));
  }
  await assert.rejects(serveTools(nc, { name: "bad", version: "1.0.0", tools: [] }), InvalidConfigError);
});
