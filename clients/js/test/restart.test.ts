// A NATS server restart under a tool service: the service reconnects and
// serves again, the results it remembered survive (the handler does not
// run again for a key it ran before the restart), and its registry entry
// is written back when it goes missing. The server is a second one of the
// harness, restarted on the same port and store while its clients are
// connected.
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { resultKey, serveTools } from "../src/index.js";
import { conn, fresh, harness, invoke, until } from "./helpers.js";

test("a tool service serves again after its NATS server restarted, its results remembered", async (t) => {
  const ctl = await conn(t);
  const { url } = await harness<{ url: string }>(ctl, "jsharness.server2.start", {});
  const nc = await connect({ servers: url, maxReconnectAttempts: -1, reconnectTimeWait: 100, name: "lionbus-js-restart" });
  t.after(() => nc.close());
  const name = fresh("survivor");
  let runs = 0;
  // No worker provisioned this server: the service creates its buckets.
  const svc = await serveTools(nc, { name: "ts-survivor", version: "1.0.0", heartbeat: 100, tools: [{ name, handler: () => ({ run: ++runs }) }] });
  t.after(() => svc.stop({ timeout: 1000 }));
  const key = `${fresh("req")}/tool/0`;
  assert.deepEqual((await invoke(nc, name, {}, key)).data.output, { run: 1 });

  await harness(ctl, "jsharness.server2.restart", {});
  // Serving again once reconnected: the same key answers the first result.
  let again: Awaited<ReturnType<typeof invoke>> | undefined;
  await until("the service to answer after the restart", async () => {
    try {
      again = await invoke(nc, name, {}, key, { timeout: 500 });
      return true;
    } catch {
      return false;
    }
  }, 20_000);
  assert.deepEqual(again!.data.output, { run: 1 });
  assert.equal(runs, 1, "the handler ran again for a key it ran before the restart");
  assert.equal(svc.runs(name), 1);
  assert.deepEqual((await invoke(nc, name, {}, `${fresh("req")}/tool/0`)).data.output, { run: 2 });

  const kvm = new Kvm(nc);
  const results = await kvm.open("lion_tool_results");
  assert.ok(await results.get(resultKey(name, key)));
  const reg = await kvm.open("lion_tools");
  await reg.delete(name);
  await until("the entry to be written back", async () => (await reg.get(name))?.operation === "PUT");
});
