// The at-most-once protocol of tool invocations (docs/tools.md, At most
// once): the first result of each idempotency key is remembered in the KV
// bucket <prefix>_tool_results, shared by every replica of a tool in any
// language, with the same keys and values as Go's pkg/tools:
//
//   key    <tool>.<sha256 hex of the idempotency key>
//   value  {"running": true, "until": "<RFC 3339>"}   a replica runs the handler
//          {"outcome": {"output": ...}}               the first result
//          {"outcome": {"error": {"code", "message"}}}
//
// A replica claims a key by creating it; another one that finds it claimed
// waits for the outcome, and takes the claim over once "until" passed (the
// holder died). A handler stopped by its deadline or a cancel leaves no
// outcome: the claim is deleted and the next invocation runs again.
import { createHash } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager, StorageType } from "@nats-io/jetstream";
import type { KV, KvEntry } from "@nats-io/kv";
import { Kvm } from "@nats-io/kv";

/** How long results are remembered by default: 24 h. */
export const defaultResultWindow = 24 * 60 * 60 * 1000;

/** How long past an invocation's deadline its claim on a key holds. */
export const claimGrace = 5000;

/** The outcome of an invocation: its output, or a tool error. */
export interface Outcome {
  output?: unknown;
  error?: { code: string; message: string };
}

interface Record {
  running?: boolean;
  until?: string;
  outcome?: Outcome;
}

/** A replica's hold on a key while its handler runs. */
export interface Claim {
  key: string;
  rev: number;
}

/** The bucket key of an idempotency key of a tool: the key is hashed, so any string may be one. */
export function resultKey(tool: string, key: string): string {
  return `${tool}.${createHash("sha256").update(key, "utf8").digest("hex")}`;
}

const encoder = new TextEncoder();

/**
 * Opens the KV bucket name, creating it with opts when it does not exist
 * (an existing bucket keeps its own settings).
 */
export async function openBucket(nc: NatsConnection, name: string, opts: { description: string; ttl?: number }, timeout: number): Promise<KV> {
  const jsm = await jetstreamManager(nc, { timeout });
  const kvm = new Kvm(nc);
  try {
    const si = await jsm.streams.info(`KV_${name}`);
    return await kvm.open(name, { allow_direct: si.config.allow_direct, timeout });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  return kvm.create(name, { history: 1, storage: StorageType.File, description: opts.description, ttl: opts.ttl ?? 0, timeout });
}

// isNotFound reports whether err is JetStream's "stream not found".
function isNotFound(err: unknown): boolean {
  return apiCode(err) === JetStreamApiCodes.StreamNotFound || /stream not found/i.test(String((err as Error)?.message));
}

/** The JetStream API error code (err_code) of err, when it is a JetStream API error. */
export function apiCode(err: unknown): number | undefined {
  return err instanceof JetStreamApiError ? err.code : undefined;
}

/** The status (503: JetStream is not available yet) of err, when it is a JetStream API error. */
export function apiStatus(err: unknown): number | undefined {
  return err instanceof JetStreamApiError ? err.status : undefined;
}

/** The results bucket of the tools of one service. */
export class ResultStore {
  readonly kv: KV;

  constructor(kv: KV) {
    this.kv = kv;
  }

  /**
   * Returns the remembered outcome of k, or a claim to run the handler
   * for it until until. When another replica holds the claim it waits for
   * that replica's outcome, taking the claim over if it lapses first. It
   * rejects with signal's reason when signal aborts while it waits.
   */
  async begin(k: string, until: Date, signal: AbortSignal): Promise<{ outcome?: Outcome; claim?: Claim }> {
    const running = encoder.encode(JSON.stringify({ running: true, until: until.toISOString() }));
    for (;;) {
      signal.throwIfAborted();
      try {
        const rev = await this.kv.create(k, running);
        return { claim: { key: k, rev } };
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
      }
      // The common repeat: the first result is there already.
      const e = await this.kv.get(k);
      const r = e && e.operation === "PUT" ? decodeRecord(e) : undefined;
      if (r?.outcome) return { outcome: r.outcome };
      const got = await this.#await(k, running, signal);
      if (got) return got;
    }
  }

  // await watches k, held by another replica, until it has an outcome, its
  // claim lapses (it is taken over) or it is deleted (undefined: try to
  // create it again).
  async #await(k: string, running: Uint8Array, signal: AbortSignal): Promise<{ outcome?: Outcome; claim?: Claim } | undefined> {
    const w = await this.kv.watch({ key: k });
    let lapse: ReturnType<typeof setTimeout> | undefined;
    let takeover: Promise<Claim | undefined> | undefined;
    const stop = () => w.stop();
    signal.addEventListener("abort", stop, { once: true });
    // A key that expired, or vanished without a watch event, would leave
    // the watch waiting: look again every second.
    const recheck = setInterval(() => {
      this.kv.get(k).then((e) => {
        if (!e || e.operation !== "PUT") w.stop();
      }, () => {});
    }, 1000);
    try {
      for await (const e of w) {
        if (e.operation !== "PUT") return undefined;
        const r = decodeRecord(e);
        if (r.outcome) return { outcome: r.outcome };
        clearTimeout(lapse);
        const until = Date.parse(r.until ?? "");
        lapse = setTimeout(() => {
          takeover = this.kv.update(k, running, e.revision).then((rev) => ({ key: k, rev }), () => undefined);
          takeover.finally(() => w.stop());
        }, Number.isNaN(until) ? 0 : Math.max(until - Date.now(), 0));
      }
    } finally {
      clearTimeout(lapse);
      clearInterval(recheck);
      signal.removeEventListener("abort", stop);
    }
    signal.throwIfAborted();
    const claim = takeover && (await takeover);
    return claim ? { claim } : undefined;
  }

  /** Stores the outcome under c's key, if c still holds it. */
  async finish(c: Claim, out: Outcome): Promise<void> {
    await this.kv.update(c.key, encoder.encode(JSON.stringify({ outcome: out })), c.rev);
  }

  /** Removes c's claim without an outcome, so that the next invocation of the key runs the handler. */
  async abandon(c: Claim): Promise<void> {
    await this.kv.delete(c.key, { previousSeq: c.rev });
  }
}

function decodeRecord(e: KvEntry): Record {
  try {
    const r = e.json<Record>();
    return r && typeof r === "object" ? r : {};
  } catch (err) {
    throw new Error(`lionbus: result record ${e.key}: ${(err as Error).message}`);
  }
}

function isWrongLastSequence(err: unknown): boolean {
  const code = apiCode(err);
  return code === JetStreamApiCodes.StreamWrongLastSequence || code === JetStreamApiCodes.StreamWrongLastSequenceUnknown;
}
