// Shared by the tests: they run against the deployment that
// clients/js/sdk_test.go starts (go test ./clients/js), found in NATS_URL.
import { randomUUID } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/transport-node";
import { LionClient } from "../src/index.js";
import type { ClientOptions } from "../src/index.js";

/** The NATS URL of the test deployment. */
export function natsURL(): string {
  const url = process.env.NATS_URL;
  if (!url) throw new Error("NATS_URL is not set: run these tests with `go test ./clients/js` (it starts NATS and a worker)");
  return url;
}

/** A new connection, drained when the test ends. */
export async function conn(t: { after(fn: () => unknown): void }): Promise<NatsConnection> {
  const nc = await connect({ servers: natsURL(), name: "lionbus-js-test" });
  t.after(() => nc.drain().catch(() => {}));
  return nc;
}

/** A client on a new connection, closed when the test ends. */
export async function client(t: { after(fn: () => unknown): void }, opts: ClientOptions = {}): Promise<LionClient> {
  const lion = await LionClient.connect({ servers: natsURL(), ...opts });
  t.after(() => lion.close().catch(() => {}));
  return lion;
}

/** A fresh name with prefix p (a token). */
export function fresh(p: string): string {
  return `${p}-${randomUUID().slice(0, 8)}`;
}

/** Asks the harness to do something (see sdk_test.go); rejects with the harness's error. */
export async function harness<T = Record<string, unknown>>(nc: NatsConnection, subject: string, req: unknown): Promise<T> {
  const m = await nc.request(subject, JSON.stringify(req), { timeout: 30_000 });
  const v = m.json<Record<string, unknown>>();
  if (typeof v.error === "string") throw new Error(`harness ${subject}: ${v.error}`);
  return v as T;
}

/** Resolves once cond() holds, polling every 20 ms; rejects after ms. */
export async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A promise with its resolve, for a test to release a handler. */
export function gate<T = void>(): { promise: Promise<T>; open: (v: T) => void } {
  let open!: (v: T) => void;
  const promise = new Promise<T>((resolve) => { open = resolve; });
  return { promise, open };
}

/** A tool's answer to an invocation: its data and the source of the replica that answered. */
export interface ToolAnswer {
  source: string;
  data: { output?: unknown; error?: { code: string; message: string } };
}

/**
 * Invokes a tool as a worker's invoker does (docs/tools.md): a
 * lionbus.tool.invoke CloudEvent as a NATS request on <prefix>.tool.<name>.
 */
export async function invoke(nc: NatsConnection, name: string, args: Record<string, unknown>, key: string, opts: { deadline?: Date; prefix?: string; timeout?: number } = {}): Promise<ToolAnswer> {
  const data: Record<string, unknown> = { function: name, arguments: args, idempotency_key: key, request_id: key.split("/")[0] };
  if (opts.deadline) data.deadline = opts.deadline.toISOString();
  const ev = { specversion: "1.0", id: randomUUID(), source: "/lionbus/test/invoker", type: "lionbus.tool.invoke", datacontenttype: "application/json", data };
  const m = await nc.request(`${opts.prefix ?? "lion"}.tool.${name}`, JSON.stringify(ev), { timeout: opts.timeout ?? 15_000 });
  const answer = m.json<{ type: string; source: string; data: ToolAnswer["data"] }>();
  if (answer.type !== "lionbus.tool.result") throw new Error(`answer of type ${answer.type}`);
  return { source: answer.source, data: answer.data };
}
