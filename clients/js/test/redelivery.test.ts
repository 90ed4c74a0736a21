// At most once per idempotency key across a redelivery: worker A runs the
// TypeScript handler and dies before it acknowledges the request; worker B
// gets the request again and calls the tool with the same key; the SDK
// answers the first result and the handler ran once. Its own prefix keeps
// the killed worker away from the other tests.
import { test } from "node:test";
import assert from "node:assert/strict";
import { LionClient, serveTools } from "../src/index.js";
import type { ActResult } from "../src/index.js";
import { conn, fresh, gate, harness } from "./helpers.js";

test("the same idempotency key from a redelivered request runs the TypeScript handler once", async (t) => {
  const nc = await conn(t);
  const prefix = "redeliver";
  const { id: workerA } = await harness<{ id: number }>(nc, "jsharness.worker.start", { prefix, ack_wait_ms: 1000 });
  const name = "refund";
  const started = gate();
  const release = gate();
  let runs = 0;
  const svc = await serveTools(nc, {
    name: "ts-billing", version: "1.0.0", prefix,
    tools: [{
      name, parameters: { type: "object", properties: { order: { type: "integer" } }, required: ["order"] },
      handler: async (args) => {
        const run = ++runs;
        started.open();
        // The effect is done; the answer comes only once worker A is dead,
        // so A never records or acknowledges the request.
        await release.promise;
        return { refund_run: run, order: args.order };
      },
    }],
  });
  t.after(() => svc.stop({ timeout: 1000 }));
  const lion = new LionClient(nc, { prefix });
  const b = fresh("refunds");
  await lion.branchCreate({ branch_id: b, tools: [name] });
  const call = lion.act(b, { action_requests: [{ function: name, arguments: { order: 42 } }] });
  await started.promise;
  await harness(nc, "jsharness.worker.kill", { id: workerA });
  release.open();
  await harness(nc, "jsharness.worker.start", { prefix }); // worker B
  const res: ActResult = await call;
  assert.equal(res.value.length, 1);
  assert.deepEqual(res.value[0].output, { refund_run: 1, order: 42 });
  assert.equal(runs, 1, "the handler ran again");
  assert.equal(svc.runs(name), 1);
  // Both workers invoked it: B's invocation was answered from the results bucket.
  const stats = await svc.stats();
  assert.equal(stats.endpoints?.[0].num_requests, 2);
});
