// A Go replica (pkg/tools, started by the harness) and a TypeScript
// replica of one tool share the results bucket: same keys, same values,
// same claims. Whichever runs a key first, the other answers its result;
// invoked at once on both, the handler runs once.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Kvm } from "@nats-io/kv";
import { resultKey, serveTools } from "../src/index.js";
import type { ToolService } from "../src/index.js";
import { conn, fresh, harness, invoke, until } from "./helpers.js";

const parameters = { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false };

test("a Go and a TypeScript replica of one tool sharing a key run it once", async (t) => {
  const nc = await conn(t);
  const name = fresh("shared").replace("-", "_");
  let goRuns = 0;
  const ran = nc.subscribe(`jsharness.ran.${name}`, { callback: () => { goRuns++; } });
  t.after(() => ran.unsubscribe());
  let tsRuns = 0;
  const startTS = async (delay: number): Promise<ToolService> => {
    const svc = await serveTools(nc, {
      name: "ts-replica", version: "1.0.0", heartbeat: 200,
      tools: [{
        name, description: "A tool served by Go and TypeScript replicas.", parameters,
        handler: async (args, { signal }) => {
          tsRuns++;
          await new Promise((r) => setTimeout(r, delay));
          signal.throwIfAborted();
          return { by: "ts", run: tsRuns, args };
        },
      }],
    });
    t.after(() => svc.stop({ timeout: 1000 }));
    return svc;
  };
  const startGo = async (delay: number) => (await harness<{ id: number }>(nc, "jsharness.gotool.start", { service: "go-replica", tool: name, parameters, delay_ms: delay })).id;
  const stopGo = (id: number) => harness(nc, "jsharness.gotool.stop", { id });
  const kv = await new Kvm(nc).open("lion_tool_results");

  // Go runs first; the TypeScript replica answers its result.
  const go1 = await startGo(0);
  const k1 = `${fresh("req")}/tool/0`;
  const first = await invoke(nc, name, { n: 1 }, k1);
  assert.equal(first.source, "/lionbus/tool/go-replica");
  assert.deepEqual(first.data.output, { by: "go", run: 1, args: { n: 1 } });
  const stored = await kv.get(resultKey(name, k1));
  assert.deepEqual(stored?.json(), { outcome: { output: { by: "go", run: 1, args: { n: 1 } } } }, "the key and the value of Go's record");
  const ts = await startTS(0);
  await stopGo(go1);
  const second = await invoke(nc, name, { n: 1 }, k1);
  assert.equal(second.source, "/lionbus/tool/ts-replica");
  assert.deepEqual(second.data, first.data);
  assert.equal(tsRuns, 0);

  // TypeScript runs first; the Go replica answers its result.
  const k2 = `${fresh("req")}/tool/0`;
  const third = await invoke(nc, name, { n: 2 }, k2);
  assert.deepEqual(third.data.output, { by: "ts", run: 1, args: { n: 2 } });
  const go2 = await startGo(0);
  await ts.stop();
  const fourth = await invoke(nc, name, { n: 2 }, k2);
  assert.equal(fourth.source, "/lionbus/tool/go-replica");
  assert.deepEqual(fourth.data, third.data);
  await stopGo(go2);
  const runsBefore = goRuns;
  assert.equal(goRuns, 1);

  // Both up, invoked at once with one key: one claims it, every other
  // invocation, on either replica, waits for its result. Several rounds
  // make it all but certain that both replicas answered some.
  tsRuns = 0;
  await startTS(400);
  await startGo(400);
  const sources = new Set<string>();
  for (let round = 0; round < 3 && sources.size < 2; round++) {
    const key = `${fresh("req")}/tool/0`;
    const before: number = goRuns + tsRuns;
    const answers = await Promise.all(Array.from({ length: 10 }, () => invoke(nc, name, { n: 3 }, key)));
    for (const a of answers) {
      sources.add(a.source);
      assert.deepEqual(a.data, answers[0].data, "every invocation of the key answered the same result");
      assert.ok(a.data.output);
    }
    await nc.flush();
    assert.equal(goRuns + tsRuns - before, 1, "the handler ran more than once for one key");
  }
  assert.deepEqual([...sources].sort(), ["/lionbus/tool/go-replica", "/lionbus/tool/ts-replica"]);
  assert.ok(goRuns >= runsBefore);

  // Both heartbeat the one registry entry: neither rewrites the other's.
  const reg = await new Kvm(nc).open("lion_tools");
  await until("the registry entry", async () => (await reg.get(name))?.operation === "PUT");
  const rev = (await reg.get(name))!.revision;
  await new Promise((r) => setTimeout(r, 700));
  assert.equal((await reg.get(name))!.revision, rev, "the replicas rewrote each other's registry entry");
});
