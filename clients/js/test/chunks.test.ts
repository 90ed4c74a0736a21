// Chunk streams: a follower that comes after the answer replays every
// chunk from any seq; a live follower gets them as they come; each chunk
// once, in order, matching the chunk schema.
import { test } from "node:test";
import fs from "node:fs";
import path from "node:path";
import assert from "node:assert/strict";
import type { RunChunkData, RunResult } from "../src/index.js";
import { conforms } from "./conform.js";
import { client, fresh } from "./helpers.js";

async function collect(stream: AsyncIterable<RunChunkData>): Promise<RunChunkData[]> {
  const out: RunChunkData[] = [];
  for await (const c of stream) out.push(c);
  return out;
}

test("a late follower replays the chunks of a run from any seq", async (t) => {
  const lion = await client(t);
  const b = fresh("chunks");
  await lion.branchCreate({ branch_id: b, chat_model: "cli:fake" });
  const call = lion.run(b, { instruction: "List the files" });
  const res = await call; // answered: every chunk is stored
  const n = res.value.chunks ?? 0;
  assert.ok(n >= 3, `the run emitted ${n} chunks`);

  const all = await collect(lion.follow(call.id));
  assert.deepEqual(all.map((c) => c.seq), Array.from({ length: n }, (_, i) => i + 1));
  assert.equal(all[0].type, "system");
  for (const c of all) conforms("lionbus.run.chunk", c);

  const tail = lion.follow<RunResult>(call.id, { from: 3 });
  const rest = await collect(tail);
  assert.deepEqual(rest.map((c) => c.seq), Array.from({ length: n - 2 }, (_, i) => i + 3));
  assert.deepEqual(rest, all.slice(2));
  assert.equal((await tail.answer).result().value.chunks, n);

  // Again, through the call: the same chunks.
  assert.deepEqual(await collect(call.chunks()), all);
});

test("a live follower gets the chunks as they come, then the answer", async (t) => {
  const lion = await client(t);
  const b = fresh("live");
  await lion.branchCreate({ branch_id: b, chat_model: "cli:fake" });
  // GATE: the fake CLI prints half its lines, then waits for the gate file.
  const gateFile = path.join(process.env.FAKECLI_DIR ?? "", "gate");
  assert.ok(process.env.FAKECLI_DIR, "FAKECLI_DIR is not set (run these tests with go test ./clients/js)");
  const call = lion.run(b, { instruction: "GATE: list the files" });
  const stream = call.chunks();
  const got: RunChunkData[] = [];
  for await (const c of stream) {
    got.push(c);
    if (got.length === 1) {
      assert.equal(await lion.result(call.id), undefined, "the run was answered before it was let go on");
      fs.writeFileSync(gateFile, "");
    }
  }
  const res = (await stream.answer).result();
  assert.ok((res.value.chunks ?? 0) > 1);
  assert.deepEqual(got.map((c) => c.seq), Array.from({ length: res.value.chunks ?? 0 }, (_, i) => i + 1));
  assert.ok(got.some((c) => c.type === "text" && (c.content ?? "").length > 0));
});

test("a streamed communicate's chunks are its text deltas", async (t) => {
  const lion = await client(t);
  const b = fresh("stream");
  await lion.branchCreate({ branch_id: b, chat_model: "scripted:echo" });
  const call = lion.communicate(b, { instruction: "streamed words", stream: true });
  const chunks = await collect(call.chunks());
  const text = chunks.filter((c) => c.type === "text").map((c) => c.content).join("");
  assert.equal(text, "streamed words");
  assert.equal((await call).value, "streamed words");
});
