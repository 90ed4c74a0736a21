// Batches from TypeScript, run by the Go worker of the test deployment:
// submit (the same input again submits nothing), watch to the end,
// results in completion order, retry of the failed items, cost ceiling,
// cancel, and bad input refused before anything is sent.
import { test } from "node:test";
import assert from "node:assert/strict";
import { BatchError, batchID, checkBatchInput } from "../src/index.js";
import type { Batch, BatchResult } from "../src/index.js";
import { client, fresh } from "./helpers.js";

/** n items: chats on no branch (the OpenAI Batch shape), every tenth a communicate whose model fails once. */
function items(n: number): string {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    if (i % 10 === 3) {
      lines.push(JSON.stringify({ custom_id: `doc-${i}`, verb: "communicate", data: { instruction: `text ${i}`, chat_model: { provider: "scripted", replies: [{ error: "no" }] } } }));
      continue;
    }
    lines.push(JSON.stringify({ custom_id: `doc-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: "scripted:echo", messages: [{ role: "user", content: `text ${i}` }] } }));
  }
  return lines.join("\n") + "\n";
}

async function ended(records: AsyncIterable<Batch>): Promise<Batch[]> {
  const seen: Batch[] = [];
  for await (const b of records) {
    const c = b.counts;
    assert.equal(c.queued + c.running + c.succeeded + c.failed + c.canceled + c.expired, c.total, `counts ${JSON.stringify(c)} do not add up`);
    seen.push(b);
  }
  return seen;
}

test("a batch submitted from TypeScript runs, is watched to its end, and its results are read in order", async (t) => {
  const lion = await client(t);
  const input = items(20);
  const id = fresh("tsbatch");
  const submitted = await lion.batches.submit(input, { id, concurrency: 4 });
  assert.equal(submitted.total, 20);
  assert.equal(submitted.state, "running");
  const again = await lion.batches.submit(input, { id, concurrency: 4 });
  assert.equal(again.created, submitted.created, "submitting again created another batch");

  const seen = await ended(lion.batches.watch(id));
  const last = seen.at(-1)!;
  assert.equal(last.state, "completed");
  assert.deepEqual([last.counts.succeeded, last.counts.failed], [18, 2]);

  const results: BatchResult[] = [];
  for await (const r of lion.batches.results(id)) results.push(r);
  assert.equal(results.length, 20);
  assert.equal(new Set(results.map((r) => r.custom_id)).size, 20, "a custom_id twice");
  for (let i = 1; i < results.length; i++) assert.ok(results[i].seq > results[i - 1].seq, "results out of order");
  for (const r of results) {
    const i = Number(r.custom_id.slice(4));
    if (i % 10 === 3) {
      assert.equal(r.status, "failed");
      assert.equal(r.error?.code, "provider_error");
    } else {
      assert.equal(r.status, "succeeded");
      assert.equal(r.result?.value, `text ${i}`);
      assert.equal(r.branch_id, undefined, "a stateless item got a branch");
    }
  }
  // From a sequence on: only what came after it.
  const after: BatchResult[] = [];
  for await (const r of lion.batches.results(id, { after: results[9].seq })) after.push(r);
  assert.deepEqual(after.map((r) => r.custom_id), results.slice(10).map((r) => r.custom_id));

  // A retry runs the two failed items again: their scripted model fails
  // again (a new branch each round), so they stay failed in round 2.
  const retried = await lion.batches.retry(id);
  assert.equal(retried.round, 2);
  const round2 = (await ended(lion.batches.watch(id))).at(-1)!;
  assert.equal(round2.state, "completed");
  assert.equal(round2.round, 2);
  const latest: BatchResult[] = [];
  for await (const r of lion.batches.results(id)) latest.push(r);
  assert.equal(latest.filter((r) => r.round === 2).length, 2);

  // The ceiling is set on the record; an ended batch is not canceled.
  assert.equal((await lion.batches.setMaxCost(id, 0.5)).max_cost_usd, 0.5);
  assert.equal((await lion.batches.cancel(id)).state, "completed");
  assert.ok((await lion.batches.list()).some((b) => b.id === id));
});

test("following results while a batch runs reads each once, until it ends", async (t) => {
  const lion = await client(t);
  const id = fresh("tsfollow");
  await lion.batches.submit(items(30), { id, concurrency: 2 });
  const got: string[] = [];
  for await (const r of lion.batches.results(id, { follow: true })) got.push(r.custom_id);
  assert.equal(got.length, 30);
  assert.equal(new Set(got).size, 30);
  assert.equal((await lion.batches.get(id)).state, "completed");
});

test("bad input and bad options are refused before anything is sent", async (t) => {
  const lion = await client(t);
  const good = items(2);
  const cases: Array<[string, string, RegExp, number | undefined]> = [
    ["not JSON", good + "{\n", /line 3: not JSON/, 3],
    ["no custom_id", `{"verb": "chat", "data": {}}\n`, /line 1: custom_id is missing/, 1],
    ["custom_id twice", good + good, /line 3: custom_id "doc-0" is given twice/, 3],
    ["a verb that cannot be batched", `{"custom_id": "x", "verb": "branch.delete", "data": {}}\n`, /cannot be batched/, 1],
    ["both shapes", `{"custom_id": "x", "verb": "chat", "data": {}, "method": "POST", "url": "/v1/chat/completions", "body": {}}\n`, /either verb and data/, 1],
    ["another endpoint", `{"custom_id": "x", "method": "POST", "url": "/v1/embeddings", "body": {"model": "m"}}\n`, /only POST \/v1\/chat\/completions/, 1],
    ["no item", "\n\n", /no item/, undefined],
  ];
  for (const [name, input, want, line] of cases) {
    const id = fresh("tsbad");
    await assert.rejects(lion.batches.submit(input, { id }), (err: unknown) => {
      assert.ok(err instanceof BatchError, `${name}: ${err}`);
      assert.equal(err.code, "bad_input", name);
      assert.match(err.message, want, name);
      assert.equal(err.line, line, name);
      return true;
    });
    await assert.rejects(lion.batches.get(id), (err: unknown) => err instanceof BatchError && err.code === "no_batch", `${name}: the batch exists`);
  }
  for (const spec of [{ id: "a.b" }, { concurrency: 0 }, { concurrency: 10_001 }, { maxCostUSD: -1 }, { maxCostUSD: Number.NaN }]) {
    await assert.rejects(lion.batches.submit(good, spec), (err: unknown) => err instanceof BatchError && err.code === "invalid_option", JSON.stringify(spec));
  }
  await assert.rejects(lion.batches.retry(fresh("tsnone")), (err: unknown) => err instanceof BatchError && err.code === "no_batch");
  assert.equal(checkBatchInput(good), 2);
  assert.equal(batchID(good), batchID(good));
  assert.notEqual(batchID(good), batchID(good, { concurrency: 3 }));
  assert.match(batchID(good), /^b[0-9a-f]{24}$/);
});
