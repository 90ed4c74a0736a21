// Tool services (docs/tools.md): tools declared with a JSON Schema, served
// as the endpoints of a NATS micro service on <prefix>.tool.<name> in a
// queue group, registered in <prefix>_tools, invoked at most once per
// idempotency key.
import type { MsgHdrs, NatsConnection, Subscription } from "@nats-io/transport-node";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { Svcm } from "@nats-io/services";
import type { Service, ServiceMsg, ServiceStats } from "@nats-io/services";
import type { KV } from "@nats-io/kv";

import { decodeEvent, isTraceParent, cloudEventsJSON } from "../events.js";
import type { CloudEvent } from "../events.js";
import type { ToolCancelData, ToolEntry, ToolErrorCode, ToolInvokeData } from "../generated/schemas.js";
import { cancelSubject, checkToken, defaultPrefix, Subjects } from "../subjects.js";
import { apiStatus, claimGrace, defaultResultWindow, openBucket, ResultStore, resultKey } from "./results.js";
import type { Claim, Outcome } from "./results.js";
import { compileParameters, maxDescriptionLength } from "./schema.js";
import type { ArgsValidator } from "./schema.js";

/** What a handler gets besides its arguments. */
export interface ToolContext {
  /**
   * Aborts when the invocation's deadline passes (its reason a
   * TimeoutError), the caller cancels it or the service is stopped hard
   * (an AbortError). A handler passes it on (fetch, timers, child
   * processes) and returns, or throws, once it aborted.
   */
  signal: AbortSignal;
  /** When the caller stops waiting. */
  deadline: Date;
  /** The invocation: function, arguments, idempotency_key, request_id, branch_id, deadline. */
  invocation: ToolInvokeData;
  /** The W3C traceparent of the request that made the call, when it had one. */
  traceparent?: string;
}

/**
 * Runs one invocation of a tool: args are the invocation's arguments,
 * already checked against the tool's parameters schema. The value returned
 * is the output (JSON); a thrown {@link ToolError} is answered with its
 * code, anything else thrown with code tool_failed.
 */
export type ToolHandler<A = Record<string, unknown>, O = unknown> = (args: A, ctx: ToolContext) => O | Promise<O>;

/** One tool of a service. */
export interface Tool<A = Record<string, unknown>, O = unknown> {
  /** The tool's name: 1 to 128 characters of [A-Za-z0-9_-]. */
  name: string;
  /** What the tool does, for a model (at most 8 KiB). */
  description?: string;
  /** The JSON Schema (2020-12) of the arguments object, self-contained (default {"type": "object"}). */
  parameters?: Record<string, unknown>;
  /** Bounds an invocation that carries no deadline, in milliseconds (default 30 s). */
  timeout?: number;
  /** The tool's version in its registry entry (default the service's). */
  version?: string;
  /** Runs an invocation. */
  handler: ToolHandler<A, O>;
}

/** Declares a tool, typing its handler's arguments as A. */
export function defineTool<A = Record<string, unknown>, O = unknown>(tool: Tool<A, O>): Tool<A, O> {
  return tool;
}

/** A tool error with a code of the tool's own, for a handler to throw. */
export class ToolError extends Error {
  override name = "ToolError";
  /** The code recorded as the call's action response's error code. */
  readonly code: ToolErrorCode | (string & {});

  constructor(code: ToolErrorCode | (string & {}), message: string) {
    super(message);
    if (!/^[a-z][a-z0-9_]*$/.test(code)) throw new TypeError(`lionbus: tool error code ${JSON.stringify(code)} is not [a-z][a-z0-9_]*`);
    this.code = code;
  }
}

/** Thrown by {@link serveTools} for an unusable configuration. */
export class InvalidConfigError extends Error {
  override name = "InvalidConfigError";
}

/** A log record of a service. */
export type ToolLogger = (level: "debug" | "info" | "warn", message: string, fields?: Record<string, unknown>) => void;

/** A tool service's configuration. */
export interface ServiceOptions {
  /** The micro service's name (`nats micro ls`): [A-Za-z0-9_-]. */
  name: string;
  /** The service's semantic version, e.g. "1.0.0". */
  version: string;
  /** What the service does (micro's INFO). */
  description?: string;
  /** The tools served: at least one. */
  tools: Tool<any, any>[];
  /** The subject prefix (default "lion"). */
  prefix?: string;
  /** How often the registry entries are checked and written back when missing or changed, in milliseconds (default 5 s). */
  heartbeat?: number;
  /** How many handlers run at once (default 64); an invocation waits for a free one until its deadline. */
  maxConcurrent?: number;
  /**
   * How long results are remembered by idempotency key when the service
   * creates the results bucket (an existing bucket keeps its own), in
   * milliseconds (default 24 h); a negative value turns remembering off.
   */
  resultWindow?: number;
  /** How long serveTools keeps trying to open the buckets and write the entries while JetStream does not answer, in milliseconds (default 30 s). */
  startupTimeout?: number;
  /** Receives the service's log records (default none). */
  log?: ToolLogger;
}

// A declared tool, ready to serve.
interface Served {
  tool: Tool<any, any>;
  entry: ToolEntry;
  subject: string;
  validate: ArgsValidator;
  timeout: number;
}

const encoder = new TextEncoder();

/** How long one try of a start-up step may take, and the pauses between tries. */
const startTry = 5000;
const startFirstDelay = 250;
const startMaxDelay = 5000;

/**
 * Starts serving opts.tools on nc: checks the configuration (an
 * InvalidConfigError), opens the registry and results buckets (creating
 * them when missing), adds the micro service with one endpoint per tool
 * and writes the registry entries. Opening the buckets and writing the
 * entries are tried again while JetStream does not answer, for at most
 * opts.startupTimeout. It resolves once serving.
 */
export async function serveTools(nc: NatsConnection, opts: ServiceOptions): Promise<ToolService> {
  const svc = new ToolService(nc, opts);
  await svc.start();
  return svc;
}

/** A running tool service; see {@link serveTools}. */
export class ToolService {
  readonly nc: NatsConnection;
  readonly subjects: Subjects;
  readonly #opts: Required<Omit<ServiceOptions, "description" | "log">> & Pick<ServiceOptions, "description">;
  readonly #log: ToolLogger;
  readonly #tools = new Map<string, Served>();
  readonly #source: string;
  #reg!: KV;
  #results: ResultStore | undefined;
  #svc: Service | undefined;
  #cancels: Subscription[] = [];
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  #stopping = false;
  #stopped: Promise<void> | undefined;
  readonly #hard = new AbortController();
  readonly #running = new Set<Promise<void>>();
  readonly #inflight = new Map<string, Set<AbortController>>();
  readonly #runs = new Map<string, number>();
  #slots: number;
  readonly #slotWaiters: (() => void)[] = [];

  /** Use {@link serveTools}. */
  constructor(nc: NatsConnection, opts: ServiceOptions) {
    if (!nc) throw new InvalidConfigError("lionbus: serveTools needs a connection");
    if (!/^[A-Za-z0-9_-]+$/.test(opts.name ?? "")) throw new InvalidConfigError(`lionbus: service name ${JSON.stringify(opts.name)} must be [A-Za-z0-9_-]+`);
    if (!opts.version) throw new InvalidConfigError(`lionbus: service ${opts.name} has no version`);
    if (!Array.isArray(opts.tools) || opts.tools.length === 0) throw new InvalidConfigError(`lionbus: service ${opts.name} serves no tools`);
    for (const k of ["heartbeat", "maxConcurrent", "startupTimeout"] as const) {
      const v = opts[k];
      if (v !== undefined && !(v > 0)) throw new InvalidConfigError(`lionbus: ${k} must be positive, got ${v}`);
    }
    this.nc = nc;
    try {
      this.subjects = new Subjects(opts.prefix ?? defaultPrefix);
    } catch (err) {
      throw new InvalidConfigError((err as Error).message);
    }
    this.#opts = {
      name: opts.name, version: opts.version, description: opts.description, tools: opts.tools,
      prefix: this.subjects.prefix, heartbeat: opts.heartbeat ?? 5000, maxConcurrent: opts.maxConcurrent ?? 64,
      resultWindow: opts.resultWindow ?? defaultResultWindow, startupTimeout: opts.startupTimeout ?? 30_000,
    };
    this.#log = opts.log ?? (() => {});
    this.#source = `/lionbus/tool/${opts.name}`;
    this.#slots = this.#opts.maxConcurrent;
    for (const t of opts.tools) {
      const served = this.#prepare(t);
      if (this.#tools.has(t.name)) throw new InvalidConfigError(`lionbus: tool ${t.name} declared twice`);
      this.#tools.set(t.name, served);
    }
  }

  #prepare(t: Tool<any, any>): Served {
    try {
      checkToken("tool name", t?.name);
    } catch (err) {
      throw new InvalidConfigError((err as Error).message);
    }
    if (typeof t.handler !== "function") throw new InvalidConfigError(`lionbus: tool ${t.name} has no handler`);
    if (t.timeout !== undefined && !(t.timeout > 0)) throw new InvalidConfigError(`lionbus: tool ${t.name}: timeout must be positive`);
    const description = t.description ?? "";
    if (encoder.encode(description).length > maxDescriptionLength) {
      throw new InvalidConfigError(`lionbus: tool ${t.name}: description is over ${maxDescriptionLength} bytes`);
    }
    const parameters = t.parameters ?? { type: "object" };
    let validate: ArgsValidator;
    try {
      validate = compileParameters(parameters);
    } catch (err) {
      throw new InvalidConfigError(`lionbus: tool ${t.name}: parameters: ${(err as Error).message}`);
    }
    const subject = this.subjects.tool(t.name);
    const entry: ToolEntry = { name: t.name, description, parameters: parameters as ToolEntry["parameters"], subject };
    const version = t.version ?? this.#opts.version;
    if (version) entry.version = version;
    return { tool: t, entry, subject, validate, timeout: t.timeout ?? 30_000 };
  }

  /** @internal Opens the buckets, adds the endpoints and registers the tools. */
  async start(): Promise<void> {
    const end = Date.now() + this.#opts.startupTimeout;
    this.#reg = await this.#untilReady(end, "open the registry bucket", (timeout) =>
      openBucket(this.nc, this.subjects.toolsBucket, { description: "lionbus tool registry" }, timeout));
    if (this.#opts.resultWindow > 0) {
      const kv = await this.#untilReady(end, "open the results bucket", (timeout) =>
        openBucket(this.nc, this.subjects.toolResultsBucket, { description: "lionbus tool results by idempotency key", ttl: this.#opts.resultWindow }, timeout));
      this.#results = new ResultStore(kv);
    }
    try {
      this.#svc = await new Svcm(this.nc as never).add({ name: this.#opts.name, version: this.#opts.version, description: this.#opts.description ?? "" });
      for (const t of this.#tools.values()) {
        this.#svc.addEndpoint(t.tool.name, {
          subject: t.subject,
          queue: t.tool.name,
          metadata: { description: (t.entry.description ?? "").slice(0, 256) },
          handler: (err, msg) => {
            if (!err) this.#receive(t, msg);
          },
        });
        this.#cancels.push(this.nc.subscribe(cancelSubject(t.subject), { callback: (err, m) => { if (!err) this.#receiveCancel(m.data, m.headers); } }));
      }
      await this.nc.flush();
      await this.#untilReady(end, "write the registry entries", () => this.#register());
    } catch (err) {
      for (const s of this.#cancels) s.unsubscribe();
      await this.#svc?.stop().catch(() => {});
      throw err;
    }
    let beating = false;
    this.#heartbeat = setInterval(() => {
      if (beating) return;
      beating = true;
      this.#beat().finally(() => { beating = false; });
    }, this.#opts.heartbeat);
    this.#log("info", "tool service started", { service: this.#opts.name, tools: this.#tools.size });
  }

  async #untilReady<T>(end: number, what: string, f: (timeout: number) => Promise<T>): Promise<T> {
    let delay = startFirstDelay;
    for (let attempt = 1; ; attempt++) {
      const timeout = Math.max(Math.min(startTry, end - Date.now()), 1);
      try {
        return await withTimeout(f(timeout), timeout, what);
      } catch (err) {
        if (permanent(err)) throw err;
        const pause = delay - Math.floor(Math.random() * (delay / 4));
        if (Date.now() + pause >= end) throw new Error(`lionbus: ${what}: ${(err as Error).message} (gave up after ${attempt} attempts)`, { cause: err });
        this.#log("warn", `${what}: retrying`, { attempt, retry_in_ms: pause, error: String(err) });
        await new Promise((r) => setTimeout(r, pause));
        delay = Math.min(2 * delay, startMaxDelay);
      }
    }
  }

  // beat writes the registry entries back when they are missing or differ.
  // When the registry bucket itself is gone (a server that lost its store,
  // a bucket deleted by hand) it is opened again, created when missing.
  async #beat(): Promise<void> {
    try {
      await this.#register();
    } catch (err) {
      this.#log("warn", "registry heartbeat failed", { error: String(err) });
      if (!/stream not found|no responders|503/i.test(String(err))) return;
      try {
        this.#reg = await openBucket(this.nc, this.subjects.toolsBucket, { description: "lionbus tool registry" }, this.#opts.heartbeat);
        await this.#register();
        this.#log("info", "registry bucket opened again", { bucket: this.subjects.toolsBucket });
      } catch (err2) {
        this.#log("warn", "could not open the registry bucket again", { error: String(err2) });
      }
    }
  }

  // register writes every tool's registry entry that is missing or differs.
  // An entry equal in meaning (another replica wrote it, maybe in Go) is
  // left as it is.
  async #register(): Promise<void> {
    for (const t of this.#tools.values()) {
      const cur = await this.#reg.get(t.tool.name);
      if (cur && cur.operation === "PUT") {
        try {
          if (sameJSON(cur.json(), t.entry)) continue;
        } catch {
          // not JSON: write ours
        }
      }
      await this.#reg.put(t.tool.name, encodeEntry(t.entry));
    }
  }

  /** How many times the handler of the named tool was started by this service (an invocation answered from the results bucket does not count). */
  runs(name: string): number {
    return this.#runs.get(name) ?? 0;
  }

  /** The micro service's statistics, per tool: the invocations received. */
  stats(): Promise<ServiceStats> {
    if (!this.#svc) throw new Error("lionbus: the service is not started");
    return this.#svc.stats();
  }

  /**
   * Stops the service: it takes no more invocations, waits for the running
   * handlers for at most opts.timeout milliseconds (default 10 s; then it
   * aborts them and waits for them to return), and removes the registry
   * entries of its tools unless another replica of the service still
   * answers. A second call returns the first's promise.
   */
  stop(opts: { timeout?: number } = {}): Promise<void> {
    this.#stopped ??= this.#stop(opts.timeout ?? 10_000);
    return this.#stopped;
  }

  async #stop(timeout: number): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#heartbeat);
    for (const s of this.#cancels) s.unsubscribe();
    await this.#svc?.stop().catch(() => {});
    const all = Promise.all([...this.#running]);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<void>((resolve) => { timer = setTimeout(resolve, timeout); });
    await Promise.race([all, late]);
    clearTimeout(timer);
    this.#hard.abort(abortError("the tool service stopped"));
    await all;
    if (!(await this.#peerAlive())) {
      for (const name of this.#tools.keys()) {
        try {
          await this.#reg.delete(name);
        } catch (err) {
          this.#log("warn", "could not unregister", { tool: name, error: String(err) });
        }
      }
    }
    this.#log("info", "tool service stopped", { service: this.#opts.name });
  }

  // peerAlive reports whether another instance of the service answers a
  // micro PING.
  async #peerAlive(): Promise<boolean> {
    try {
      await this.nc.request(`$SRV.PING.${this.#opts.name}`, undefined, { timeout: 250 });
      return true;
    } catch {
      return false;
    }
  }

  #receive(t: Served, msg: ServiceMsg): void {
    if (this.#stopping) {
      this.#respond(msg, undefined, { error: { code: "busy", message: `tool service ${this.#opts.name} is stopping` } });
      return;
    }
    const p = this.#serve(t, msg).catch((err) => this.#log("warn", "could not answer an invocation", { tool: t.tool.name, error: String(err) }));
    this.#running.add(p);
    p.finally(() => this.#running.delete(p));
  }

  async #serve(t: Served, msg: ServiceMsg): Promise<void> {
    let ev: CloudEvent<ToolInvokeData>;
    try {
      ev = decodeEvent<ToolInvokeData>(msg.data, msg.headers as unknown as MsgHdrs | undefined);
    } catch (err) {
      this.#respond(msg, undefined, { error: { code: "bad_invocation", message: `not a CloudEvent: ${(err as Error).message}` } });
      return;
    }
    const trace = isTraceParent(ev.traceparent) ? ev.traceparent : undefined;
    const inv = ev.data;
    let problem: string | undefined;
    if (ev.type !== "lionbus.tool.invoke") problem = `type is ${JSON.stringify(String(ev.type).slice(0, 80))}, want lionbus.tool.invoke`;
    else if (!inv || typeof inv !== "object") problem = "the data is not an invocation";
    else if (inv.function !== t.tool.name) problem = `function is ${JSON.stringify(String(inv.function).slice(0, 80))}, this is tool ${t.tool.name}`;
    if (problem) {
      this.#respond(msg, trace, { error: { code: "bad_invocation", message: problem } });
      return;
    }
    const args = inv.arguments ?? {};
    const given = inv.deadline ? Date.parse(inv.deadline) : NaN;
    const deadline = new Date(Number.isNaN(given) ? Date.now() + t.timeout : given);
    // Arguments are checked before anything else happens: no claim, no handler.
    const complaint = t.validate(args);
    if (complaint !== undefined) {
      this.#respond(msg, trace, { error: { code: "invalid_arguments", message: `arguments do not match the schema of ${t.tool.name}: ${complaint}` } });
      return;
    }
    const ctl = new AbortController();
    const untilDeadline = setTimeout(() => ctl.abort(timeoutError()), Math.max(deadline.getTime() - Date.now(), 0));
    const onHard = () => ctl.abort(this.#hard.signal.reason);
    this.#hard.signal.addEventListener("abort", onHard, { once: true });
    const untrack = this.#track(inv.idempotency_key, ctl);
    try {
      let claim: Claim | undefined;
      if (this.#results && inv.idempotency_key) {
        try {
          const got = await this.#results.begin(resultKey(t.tool.name, inv.idempotency_key), new Date(deadline.getTime() + claimGrace), ctl.signal);
          if (got.outcome) {
            this.#log("debug", "answered from the results bucket", { tool: t.tool.name, key: inv.idempotency_key });
            this.#respond(msg, trace, got.outcome);
            return;
          }
          claim = got.claim;
        } catch (err) {
          this.#respond(msg, trace, abortedOutcome(ctl.signal) ?? { error: { code: "tool_failed", message: `remembered results unavailable: ${(err as Error).message}` } });
          return;
        }
      }
      const { out, ran } = await this.#run(t, args, inv, deadline, trace, ctl.signal);
      if (claim && this.#results) {
        try {
          await (ran ? this.#results.finish(claim, out) : this.#results.abandon(claim));
        } catch (err) {
          this.#log("warn", "could not store the result", { tool: t.tool.name, key: inv.idempotency_key, error: String(err) });
        }
      }
      this.#respond(msg, trace, out);
    } finally {
      clearTimeout(untilDeadline);
      this.#hard.signal.removeEventListener("abort", onHard);
      untrack();
    }
  }

  // run runs t's handler once a slot is free. ran is false when the handler
  // did not run or failed after its signal aborted: nothing is remembered.
  async #run(t: Served, args: Record<string, unknown>, inv: ToolInvokeData, deadline: Date, trace: string | undefined, signal: AbortSignal): Promise<{ out: Outcome; ran: boolean }> {
    if (!(await this.#acquire(signal))) return { out: abortedOutcome(signal)!, ran: false };
    try {
      this.#runs.set(t.tool.name, this.runs(t.tool.name) + 1);
      let output: unknown;
      try {
        output = await t.tool.handler(args, { signal, deadline, invocation: inv, ...(trace ? { traceparent: trace } : {}) });
      } catch (err) {
        const stopped = abortedOutcome(signal);
        if (stopped) return { out: stopped, ran: false }; // its effect is unknown
        if (err instanceof ToolError) return { out: { error: { code: err.code, message: err.message } }, ran: true };
        return { out: { error: { code: "tool_failed", message: err instanceof Error ? err.message : String(err) } }, ran: true };
      }
      if (output === undefined) return { out: {}, ran: true };
      try {
        return { out: { output: JSON.parse(JSON.stringify(output)) }, ran: true };
      } catch (err) {
        return { out: { error: { code: "tool_failed", message: `output is not JSON-encodable: ${(err as Error).message}` } }, ran: true };
      }
    } finally {
      this.#release();
    }
  }

  async #acquire(signal: AbortSignal): Promise<boolean> {
    while (this.#slots === 0) {
      if (signal.aborted) return false;
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        };
        // An aborted waiter leaves the queue, so that a freed slot wakes a live one.
        const onAbort = () => {
          const i = this.#slotWaiters.indexOf(wake);
          if (i >= 0) this.#slotWaiters.splice(i, 1);
          resolve();
        };
        this.#slotWaiters.push(wake);
        signal.addEventListener("abort", onAbort, { once: true });
      });
    }
    if (signal.aborted) return false;
    this.#slots--;
    return true;
  }

  #release(): void {
    this.#slots++;
    this.#slotWaiters.shift()?.();
  }

  #track(key: string, ctl: AbortController): () => void {
    if (!key) return () => {};
    let set = this.#inflight.get(key);
    if (!set) this.#inflight.set(key, (set = new Set()));
    set.add(ctl);
    return () => {
      set.delete(ctl);
      if (set.size === 0) this.#inflight.delete(key);
    };
  }

  // receiveCancel handles a lionbus.tool.cancel event: the handlers running
  // for its idempotency key are aborted.
  #receiveCancel(data: Uint8Array, h: MsgHdrs | undefined): void {
    let ev: CloudEvent<ToolCancelData>;
    try {
      ev = decodeEvent<ToolCancelData>(data, h);
    } catch {
      return;
    }
    const key = ev.type === "lionbus.tool.cancel" ? ev.data?.idempotency_key : undefined;
    const set = key ? this.#inflight.get(key) : undefined;
    if (!set) return;
    for (const ctl of set) ctl.abort(abortError("the invocation was cancelled"));
    this.#log("info", "invocation cancelled by the caller", { key });
  }

  #respond(msg: ServiceMsg, trace: string | undefined, out: Outcome): void {
    const ev: CloudEvent<Outcome> = {
      specversion: "1.0",
      id: crypto.randomUUID(),
      source: this.#source,
      type: "lionbus.tool.result",
      time: new Date().toISOString(),
      datacontenttype: "application/json",
      data: out,
    };
    const h = natsHeaders();
    h.set("Content-Type", cloudEventsJSON);
    if (trace) {
      ev.traceparent = trace;
      h.set("traceparent", trace);
    }
    // @nats-io/services has its own copy of nats-core: the headers are the same at run time.
    if (!msg.respond(encoder.encode(JSON.stringify(ev)), { headers: h as never })) {
      this.#log("warn", "could not answer an invocation: it has no reply subject");
    }
  }
}

function timeoutError(): Error {
  return new DOMException("the invocation's deadline passed", "TimeoutError");
}

function abortError(message: string): Error {
  return new DOMException(message, "AbortError");
}

// abortedOutcome is the error outcome of an invocation whose signal
// aborted (timeout or canceled), else undefined.
function abortedOutcome(signal: AbortSignal): Outcome | undefined {
  if (!signal.aborted) return undefined;
  const reason = signal.reason as { name?: string } | undefined;
  if (reason?.name === "TimeoutError") return { error: { code: "timeout", message: "the invocation's deadline passed" } };
  return { error: { code: "canceled", message: "the invocation was cancelled" } };
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const t = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms); });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

// permanent reports whether a start-up error stays the same however long
// one waits: the server refused the request itself (a JetStream API error
// other than 503).
function permanent(err: unknown): boolean {
  const status = apiStatus(err);
  return status !== undefined && status !== 503;
}

// encodeEntry encodes an entry as Go's encoding/json does (field order of
// pkg/tools.Entry, <, > and & escaped), so that a Go replica of the tool
// finds its own bytes and does not write the entry back.
function encodeEntry(e: ToolEntry): Uint8Array {
  const ordered: Record<string, unknown> = { name: e.name, description: e.description ?? "", parameters: e.parameters, subject: e.subject };
  if (e.version) ordered.version = e.version;
  const s = JSON.stringify(ordered).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  return encoder.encode(s);
}

// sameJSON reports whether two JSON values are equal in meaning.
function sameJSON(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((v, i) => sameJSON(v, (b as unknown[])[i]));
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => sameJSON((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
