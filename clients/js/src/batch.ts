// Batches (docs/batch.md): submit a JSONL input, watch a batch's record,
// read its results in completion order, cancel, retry, set a cost ceiling.
import { createHash } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream } from "@nats-io/jetstream";
import type { JetStreamClient, OrderedConsumerOptions } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { KV } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";

import type { Usage } from "./generated/schemas.js";
import type { Subjects } from "./subjects.js";

/** Bounds of a batch, as the workers enforce them (docs/batch.md, Bounds). */
export const maxBatchIDLength = 64;
export const maxBatchItems = 1_000_000;
export const maxBatchLineBytes = 1 << 20;
export const maxCustomIDLength = 512;
export const defaultBatchConcurrency = 32;
export const maxBatchConcurrency = 10_000;

/** A batch's state: running until every item finished, then completed; canceling, then canceled; expired when its deadline passed first. */
export type BatchState = "running" | "canceling" | "canceled" | "completed" | "expired";
/** An item's status. */
export type ItemStatus = "queued" | "running" | "succeeded" | "failed" | "canceled" | "expired";

/** A batch's items by state; they always add up to total. */
export interface BatchCounts {
  total: number;
  queued: number;
  running: number;
  succeeded: number;
  failed: number;
  canceled: number;
  expired: number;
}

/** A batch's record: the value of its key in the batches bucket. */
export interface Batch {
  id: string;
  input: string;
  total: number;
  template_branch?: string;
  concurrency: number;
  deadline?: string;
  branches?: "delete" | "keep";
  metadata?: Record<string, string>;
  /** The cost ceiling in US dollars: no item starts once the finished ones cost that much. */
  max_cost_usd?: number;
  created: string;
  state: BatchState;
  round: number;
  retry_statuses?: ItemStatus[];
  counts: BatchCounts;
  /** Tokens and cost of the finished items over every round. */
  usage: Usage;
  cost_ceiling_reached?: boolean;
  owner?: string;
  owner_until?: string;
  updated: string;
  ended?: string;
}

/** The record of one finished item, with its sequence in the results stream (read on after it). */
export interface BatchResult {
  custom_id: string;
  status: "succeeded" | "failed" | "canceled" | "expired";
  round: number;
  request_id: string;
  branch_id?: string;
  /** The data of the request's result (succeeded only). */
  result?: { value: unknown; branch_id?: string; usage?: Usage; duration_ms: number; [k: string]: unknown };
  error?: { code: string; message: string };
  usage?: Usage;
  total_usage?: Usage;
  finished: string;
  seq: number;
}

/** How to run a batch ({@link Batches.submit}). */
export interface BatchSpec {
  /** The batch id: 1 to 64 characters of [A-Za-z0-9_-]. Default: derived from the input and the spec, so the same submission gets the same id. */
  id?: string;
  /** The branch each item's branch is cloned from; none: an empty branch per item (a chat item: no branch at all). */
  templateBranch?: string;
  /** Items in flight at most over the fleet, 1 to 10,000 (default 32). */
  concurrency?: number;
  /** When the items not started expire. */
  deadline?: Date;
  /** Keep each item's branch (default: deleted once its result is stored). */
  keepBranches?: boolean;
  /** Kept with the batch as it is. */
  metadata?: Record<string, string>;
  /** The cost ceiling in US dollars (0 or none: no ceiling). */
  maxCostUSD?: number;
}

/** Why a batch call failed: no_batch, bad_input (line says where), not_ended or invalid_option. */
export class BatchError extends Error {
  readonly code: "no_batch" | "bad_input" | "not_ended" | "invalid_option";
  /** The input line (from 1) of a bad_input error, when one line is at fault. */
  readonly line?: number;
  constructor(code: BatchError["code"], message: string, line?: number) {
    super(`lionbus: ${message}`);
    this.name = "BatchError";
    this.code = code;
    this.line = line;
  }
}

const verbsOfItems = new Set(["chat", "chat_and_record", "communicate", "operate", "parse", "interpret", "react", "act", "run"]);
const idRule = /^[A-Za-z0-9_-]+$/;

/** Reports whether id is a usable batch id. */
export function validBatchID(id: string): boolean {
  return id.length >= 1 && id.length <= maxBatchIDLength && idRule.test(id);
}

/**
 * Checks one line of a batch's input as the workers read it: a
 * {"custom_id", "verb", "data"} object, or the OpenAI Batch input shape
 * {"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}.
 * It returns the custom_id, or throws a BatchError (bad_input).
 */
export function checkBatchLine(line: string, n?: number): string {
  const bad = (why: string): never => { throw new BatchError("bad_input", n === undefined ? why : `batch input line ${n}: ${why}`, n); };
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch (err) {
    return bad(`not JSON: ${(err as Error).message}`);
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return bad("not a JSON object");
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!["custom_id", "verb", "data", "method", "url", "body"].includes(k)) bad(`unknown field ${JSON.stringify(k)}`);
  }
  if (typeof o.custom_id !== "string" || o.custom_id === "") return bad("custom_id is missing");
  if (Buffer.byteLength(o.custom_id) > maxCustomIDLength) bad(`custom_id is longer than ${maxCustomIDLength} bytes`);
  if (o.method !== undefined || o.url !== undefined || o.body !== undefined) {
    if (o.verb !== undefined || o.data !== undefined) bad("a line has either verb and data or method, url and body");
    if (o.method !== "POST" || o.url !== "/v1/chat/completions") bad(`method ${JSON.stringify(o.method)} url ${JSON.stringify(o.url)}: only POST /v1/chat/completions is served`);
    const body = o.body as Record<string, unknown> | undefined;
    if (typeof body !== "object" || body === null) bad("body must be an object");
    if (typeof body!.model !== "string" || body!.model === "") bad("body.model is missing");
    const msgs = Array.isArray(body!.messages) ? (body!.messages as Array<Record<string, unknown>>) : [];
    if (!msgs.some((m) => m?.role === "user")) bad("body.messages has no user message");
    return o.custom_id;
  }
  if (typeof o.verb !== "string" || !verbsOfItems.has(o.verb)) {
    bad(`verb ${JSON.stringify(o.verb)} cannot be batched (want one of ${[...verbsOfItems].join(", ")})`);
  }
  if (typeof o.data !== "object" || o.data === null || Array.isArray(o.data)) bad("data must be a JSON object");
  return o.custom_id;
}

/** The lines of input, checked: the number of items; throws a BatchError (bad_input) at the first bad line. */
export function checkBatchInput(input: string): number {
  const seen = new Set<string>();
  let n = 0;
  let lineNo = 0;
  for (const raw of input.split("\n")) {
    lineNo++;
    const line = raw.trim();
    if (line === "") continue;
    if (Buffer.byteLength(line) > maxBatchLineBytes) throw new BatchError("bad_input", `batch input line ${lineNo}: longer than ${maxBatchLineBytes} bytes`, lineNo);
    const id = checkBatchLine(line, lineNo);
    if (seen.has(id)) throw new BatchError("bad_input", `batch input line ${lineNo}: custom_id ${JSON.stringify(id)} is given twice`, lineNo);
    seen.add(id);
    if (++n > maxBatchItems) throw new BatchError("bad_input", `batch input line ${lineNo}: more than ${maxBatchItems} items`, lineNo);
  }
  if (n === 0) throw new BatchError("bad_input", "batch input: no item");
  return n;
}

/** The id a submission of input with spec gets when it names none: "b" and 24 hex digits of a SHA-256 over both. */
export function batchID(input: string, spec: BatchSpec = {}): string {
  const { id: _, ...rest } = spec;
  const h = createHash("sha256").update(input).update(JSON.stringify(rest, Object.keys(rest).sort()));
  return "b" + h.digest("hex").slice(0, 24);
}

const final = new Set<BatchState>(["completed", "canceled", "expired"]);

/** Reports whether a batch in state rests there (completed, canceled, expired). */
export function batchFinal(state: BatchState): boolean {
  return final.has(state);
}

/** The batch operations of a client ({@link LionClient.batches}). */
export class Batches {
  readonly #js: JetStreamClient;
  readonly #subjects: Subjects;
  readonly #timeout: number;
  #kv: Promise<KV> | undefined;

  /** Batch operations on nc for the deployment's subjects; calls to JetStream are bounded by timeout (ms). */
  constructor(nc: NatsConnection, subjects: Subjects, timeout: number) {
    this.#js = jetstream(nc, { timeout });
    this.#subjects = subjects;
    this.#timeout = timeout;
  }

  #bucket(): Promise<KV> {
    this.#kv ??= new Kvm(this.#js).open(`${this.#subjects.prefix}_batches`).catch((err: unknown) => {
      this.#kv = undefined;
      throw err;
    });
    return this.#kv;
  }

  /**
   * Submits input (JSONL, one item a line) as the batch spec.id (or an id
   * derived from input and spec). Every line is checked first; a bad one
   * throws a BatchError before anything is sent. The input goes to the
   * batch input object store in chunks, then the record is created; when
   * the batch exists already nothing is sent and its record is returned,
   * so a submitter that died half-way may run again.
   */
  async submit(input: string, spec: BatchSpec = {}): Promise<Batch> {
    const id = spec.id ?? batchID(input, spec);
    if (!validBatchID(id)) throw new BatchError("invalid_option", `batch id ${JSON.stringify(id)}: want 1 to ${maxBatchIDLength} characters of [A-Za-z0-9_-]`);
    const concurrency = spec.concurrency ?? defaultBatchConcurrency;
    if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > maxBatchConcurrency) {
      throw new BatchError("invalid_option", `concurrency ${concurrency}: want 1 to ${maxBatchConcurrency}`);
    }
    checkMaxCost(spec.maxCostUSD ?? 0);
    if (spec.templateBranch !== undefined && !idRule.test(spec.templateBranch)) {
      throw new BatchError("invalid_option", `template branch ${JSON.stringify(spec.templateBranch)} is not a token`);
    }
    const total = checkBatchInput(input);
    const existing = await this.get(id).catch((err: unknown) => {
      if (err instanceof BatchError && err.code === "no_batch") return undefined;
      throw err;
    });
    if (existing) return existing;
    const store = await new Objm(this.#js).open(`${this.#subjects.prefix}_batch_input`);
    await store.putBlob({ name: id, description: "lionbus batch input" }, new TextEncoder().encode(input));
    const now = new Date().toISOString();
    const b: Batch = {
      id, input: id, total, concurrency, branches: spec.keepBranches ? "keep" : "delete",
      created: now, state: "running", round: 1, updated: now,
      counts: { total, queued: total, running: 0, succeeded: 0, failed: 0, canceled: 0, expired: 0 },
      usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 },
    };
    if (spec.templateBranch) b.template_branch = spec.templateBranch;
    if (spec.deadline) b.deadline = spec.deadline.toISOString();
    if (spec.metadata) b.metadata = spec.metadata;
    if (spec.maxCostUSD) b.max_cost_usd = spec.maxCostUSD;
    const kv = await this.#bucket();
    try {
      await kv.create(id, JSON.stringify(b));
    } catch (err) {
      const again = await this.get(id).catch(() => undefined);
      if (again) return again; // submitted at the same time
      throw err;
    }
    return b;
  }

  /** The record of batch id (at most about a second old while it runs); a BatchError no_batch when there is none. */
  async get(id: string): Promise<Batch> {
    return (await this.#get(id)).b;
  }

  async #get(id: string): Promise<{ b: Batch; rev: number }> {
    if (!validBatchID(id)) throw new BatchError("invalid_option", `batch id ${JSON.stringify(id)}`);
    const kv = await this.#bucket();
    const e = await kv.get(id);
    if (!e || e.operation !== "PUT") throw new BatchError("no_batch", `no such batch: ${id}`);
    return { b: e.json<Batch>(), rev: e.revision };
  }

  /** Every batch's record, oldest first. */
  async list(): Promise<Batch[]> {
    const kv = await this.#bucket();
    const out: Batch[] = [];
    for await (const k of await kv.keys()) {
      try {
        out.push(await this.get(k));
      } catch (err) {
        if (!(err instanceof BatchError && err.code === "no_batch")) throw err;
      }
    }
    return out.sort((a, b) => a.created.localeCompare(b.created));
  }

  /** The records of batch id now and at every change, until it has ended (the final record included) or opts.signal aborts. */
  watch(id: string, opts: { signal?: AbortSignal } = {}): AsyncIterable<Batch> {
    const self = this;
    async function* records(): AsyncGenerator<Batch> {
      await self.get(id); // a missing batch fails at once
      const kv = await self.#bucket();
      const w = await kv.watch({ key: id });
      const onAbort = () => w.stop();
      opts.signal?.addEventListener("abort", onAbort);
      try {
        for await (const e of w) {
          if (e.operation !== "PUT") continue;
          const b = e.json<Batch>();
          yield b;
          if (batchFinal(b.state)) return;
        }
      } finally {
        opts.signal?.removeEventListener("abort", onAbort);
        w.stop();
      }
    }
    return { [Symbol.asyncIterator]: records };
  }

  /**
   * The results of batch id in completion order, from the one after
   * stream sequence opts.after (default: the first): those stored, then,
   * with opts.follow, those to come until the batch has ended.
   */
  results(id: string, opts: { after?: number; follow?: boolean; signal?: AbortSignal } = {}): AsyncIterable<BatchResult> {
    if (!validBatchID(id)) throw new BatchError("invalid_option", `batch id ${JSON.stringify(id)}`);
    const self = this;
    const stream = `${self.#subjects.prefix.toUpperCase()}_BATCH_RESULTS`;
    async function* results(): AsyncGenerator<BatchResult> {
      const cfg: Partial<OrderedConsumerOptions> = {
        filter_subjects: [`${self.#subjects.prefix}.batch.result.${id}.*`],
        deliver_policy: DeliverPolicy.All,
      };
      if (opts.after) {
        cfg.deliver_policy = DeliverPolicy.StartSequence;
        cfg.opt_start_seq = opts.after + 1;
      }
      const consumer = await self.#js.consumers.get(stream, cfg);
      // Caught up when a fetch brings nothing, or its last message has
      // nothing pending after it. Following, the batch's state is looked
      // at then: the driver stores every result before it writes a final
      // state, so one more pass after seeing it reads them all.
      let ended = false;
      for (;;) {
        const msgs = await consumer.fetch({ max_messages: 256, expires: 1000 });
        let got = 0;
        let pending = 0;
        for await (const m of msgs) {
          got++;
          pending = m.info.pending;
          yield { ...m.json<Omit<BatchResult, "seq">>(), seq: m.seq };
          if (opts.signal?.aborted) return;
        }
        if (got > 0 && pending > 0) continue;
        if (!opts.follow || ended || opts.signal?.aborted) return;
        ended = batchFinal((await self.get(id)).state);
      }
    }
    return { [Symbol.asyncIterator]: results };
  }

  /** Cancels batch id: no new item starts (within a second) and those in flight are cancelled; an ended batch is left as it is. */
  cancel(id: string): Promise<Batch> {
    return this.#update(id, (b) => {
      if (batchFinal(b.state) || b.state === "canceling") return false;
      b.state = "canceling";
      return true;
    });
  }

  /** Runs again, as a new round, the items of the ended batch id whose status is one of statuses (default failed and expired). */
  retry(id: string, statuses: Array<"failed" | "expired" | "canceled"> = ["failed", "expired"]): Promise<Batch> {
    for (const s of statuses) {
      if (!["failed", "expired", "canceled"].includes(s)) throw new BatchError("invalid_option", `retry status ${JSON.stringify(s)}: want failed, expired or canceled`);
    }
    return this.#update(id, (b) => {
      if (!batchFinal(b.state)) throw new BatchError("not_ended", `batch ${id} is ${b.state}`);
      const n = statuses.reduce((sum, s) => sum + b.counts[s], 0);
      if (n === 0) return false;
      b.round++;
      b.retry_statuses = [...statuses];
      b.state = "running";
      delete b.ended;
      delete b.cost_ceiling_reached;
      if (b.deadline && Date.parse(b.deadline) < Date.now()) delete b.deadline;
      return true;
    });
  }

  /** Sets the cost ceiling of batch id in US dollars (0 removes it), running or ended. */
  setMaxCost(id: string, usd: number): Promise<Batch> {
    checkMaxCost(usd);
    return this.#update(id, (b) => {
      if ((b.max_cost_usd ?? 0) === usd) return false;
      if (usd === 0) delete b.max_cost_usd;
      else b.max_cost_usd = usd;
      return true;
    });
  }

  // update changes the record with a compare-and-set write, again when it
  // changed meanwhile; change returns false to write nothing.
  async #update(id: string, change: (b: Batch) => boolean): Promise<Batch> {
    const kv = await this.#bucket();
    const end = Date.now() + this.#timeout;
    for (;;) {
      const { b, rev } = await this.#get(id);
      if (!change(b)) return b;
      b.updated = new Date().toISOString();
      try {
        await kv.update(id, JSON.stringify(b), rev);
        return b;
      } catch (err) {
        if (Date.now() > end) throw err; // not a lost race: give up
      }
    }
  }
}

function checkMaxCost(usd: number): void {
  if (!(usd >= 0) || !Number.isFinite(usd)) {
    throw new BatchError("invalid_option", `max cost ${usd}: want 0 (no ceiling) or a positive number of US dollars`);
  }
}
