// The lionbus client: typed requests, answers, cancel, chunks and events.
import { randomUUID } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import type { ConnectionOptions, Msg, NatsConnection } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { JetStreamClient, JetStreamManager, OrderedConsumerOptions } from "@nats-io/jetstream";

import { Batches } from "./batch.js";
import { Answer, Call } from "./call.js";
import type { BranchlessCallOptions, CallHost, CallOptions } from "./call.js";
import type { ChunkStream, FollowOptions } from "./chunks.js";
import { Mailbox } from "./chunks.js";
import { WaitError } from "./errors.js";
import { decodeEvent, encodeEvent, isTraceParent } from "./events.js";
import type { CloudEvent } from "./events.js";
import type { OpRequest, RunChunkData, SignalData, Usage } from "./generated/schemas.js";
import { VerbMethods } from "./generated/verbs.js";
import type { Verb, Verbs } from "./generated/verbs.js";
import { checkToken, defaultPrefix, isVerb, Subjects } from "./subjects.js";

/** How a {@link LionClient} talks to lionbus. Every field has a default. */
export interface ClientOptions {
  /** The subject prefix of the deployment (default "lion"). */
  prefix?: string;
  /** The source attribute of requests (default "/lionbus/client-js"). */
  source?: string;
  /** Bounds submitting, reading a stored answer and cancelling, in milliseconds (default 10 s). */
  timeout?: number;
  /** Bounds waiting for an answer or following chunks when the call names no bound, in milliseconds (default 2 min). */
  awaitTimeout?: number;
}

/** {@link LionClient.connect}'s options: the client's and nats.js' connection options (servers, credentials, TLS, ...). */
export type ConnectOptions = ClientOptions & ConnectionOptions;

/** The result data of a named operation (op.NAME): its value is the operation's. */
export interface OpResult<V = unknown> {
  value: V;
  duration_ms: number;
  branch_id?: string;
  usage?: Usage;
  replayed?: boolean;
  [k: string]: unknown;
}

/** A signal event (docs/protocol.md, Signal events): narrow it on type to get its data's type. */
export type SignalEvent = { [T in keyof SignalData]: CloudEvent<SignalData[T]> & { type: T } }[keyof SignalData];

/** Where {@link LionClient.watch} starts. */
export interface WatchOptions {
  /** Start with the first event the events stream keeps (24 h). */
  all?: boolean;
  /** Start with the first event stored at or after this time. Without all or since: the next event published. */
  since?: Date;
  /** Ends the watch when aborted. */
  signal?: AbortSignal;
}

/** The waits between the first looks into the results stream while an answer that may be out already is awaited, then every 2 s. */
const rechecks = [5, 25, 100, 500];
const recheckEvery = 2000;
/** How long past a request's deadline its answer is waited for when the call names no timeout. */
const deadlineGrace = 10_000;

/** A subscription to the answer subject of a request. */
interface AnswerWatch {
  id: string;
  box: Mailbox<Msg>;
  stop(): void;
}

/**
 * A lionbus client on a NATS connection. One typed method per verb
 * (communicate, branchCreate, run, ...; see {@link VerbMethods}) submits a
 * request and returns its {@link Call}; await it for the result data.
 *
 * It subscribes to a request's answer before submitting it and also reads
 * the results stream, so no answer is missed; {@link LionClient.result}
 * reads an answer later (kept 24 h), {@link LionClient.cancel} cancels,
 * {@link LionClient.follow} replays and follows chunks, and
 * {@link LionClient.watch} follows a branch's signal events.
 */
export class LionClient extends VerbMethods implements CallHost {
  /** The NATS connection. */
  readonly nc: NatsConnection;
  /** The deployment's names. */
  readonly subjects: Subjects;
  readonly #js: JetStreamClient;
  #jsm: Promise<JetStreamManager> | undefined;
  readonly #source: string;
  readonly #timeout: number;
  readonly #awaitTimeout: number;
  #owned = false;
  #batches: Batches | undefined;

  /** Connects to NATS (opts.servers, default nats://127.0.0.1:4222) and returns a client that closes the connection on close(). */
  static async connect(opts: ConnectOptions = {}): Promise<LionClient> {
    const { prefix, source, timeout, awaitTimeout, ...conn } = opts;
    const nc = await connect({ name: "lionbus-client-js", ...conn });
    const c = new LionClient(nc, { prefix, source, timeout, awaitTimeout });
    c.#owned = true;
    return c;
  }

  /** A client on nc, which it does not close. It sends nothing yet. */
  constructor(nc: NatsConnection, opts: ClientOptions = {}) {
    super();
    for (const [k, v] of [["timeout", opts.timeout], ["awaitTimeout", opts.awaitTimeout]] as const) {
      if (v !== undefined && !(v > 0)) throw new RangeError(`lionbus: ${k} must be positive, got ${v}`);
    }
    this.nc = nc;
    this.subjects = new Subjects(opts.prefix ?? defaultPrefix);
    this.#js = jetstream(nc);
    this.#source = opts.source ?? "/lionbus/client-js";
    this.#timeout = opts.timeout ?? 10_000;
    this.#awaitTimeout = opts.awaitTimeout ?? 120_000;
  }

  /** Submits a request for verb (typed by {@link Verbs}) on branch and returns its call. */
  call<V extends Verb>(verb: V, branch: string | undefined, data: Verbs[V]["request"], opts?: CallOptions): Call<Verbs[V]["result"]> {
    return this.submit<Verbs[V]["result"]>(verb, branch, data, opts);
  }

  /**
   * Submits a request for any verb, also one this version has no types of
   * (a verb added to the worker later): the result data is R.
   */
  submit<R = unknown>(verb: string, branch: string | undefined, data: unknown, opts: CallOptions = {}): Call<R> {
    if (!isVerb(verb)) throw new TypeError(`lionbus: verb ${JSON.stringify(verb)} is not dot-separated tokens`);
    if (branch !== undefined) checkToken("branch id", branch);
    const given = opts.id !== undefined;
    const id = given ? checkToken("request id", opts.id) : randomUUID();
    const ev: CloudEvent = {
      specversion: "1.0",
      id,
      source: opts.source ?? this.#source,
      type: `lionbus.${verb}.request`,
      datacontenttype: "application/json",
      data: data ?? {},
    };
    if (branch !== undefined) ev.branchid = branch;
    let deadline: Date | undefined;
    if (opts.deadline !== undefined) {
      deadline = typeof opts.deadline === "number" ? new Date(Date.now() + opts.deadline) : opts.deadline;
      if (Number.isNaN(deadline.getTime())) throw new TypeError("lionbus: deadline is not a time");
      ev.deadline = deadline.toISOString();
    }
    if (opts.parallel) ev.branchorder = "parallel";
    if (opts.traceparent !== undefined) {
      if (!isTraceParent(opts.traceparent)) throw new TypeError(`lionbus: ${JSON.stringify(opts.traceparent)} is not a W3C traceparent`);
      ev.traceparent = opts.traceparent;
    }
    if (opts.replyTo !== undefined) {
      const own = this.subjects.reply(id);
      if (opts.replyTo === "" || /[\s*>]/.test(opts.replyTo)) throw new TypeError(`lionbus: reply subject ${JSON.stringify(opts.replyTo)} is not a literal subject`);
      if (opts.replyTo.startsWith(this.subjects.prefix + ".") && opts.replyTo !== own) {
        throw new TypeError(`lionbus: reply subject ${opts.replyTo} is inside ${this.subjects.prefix}.>; only the request's own ${own} may be used there`);
      }
      ev.replyto = opts.replyTo;
    }
    let wait = opts.timeout ?? this.#awaitTimeout;
    if (opts.timeout === undefined && deadline) wait = Math.max(deadline.getTime() - Date.now(), 0) + deadlineGrace;

    const w = this.#watch(id); // before the request: its answer cannot be missed
    const { body, headers } = encodeEvent(ev, opts.binary ? "binary" : "structured");
    const submitted = this.#js
      .publish(this.subjects.op(verb), body, { msgID: id, headers, expect: { streamName: this.subjects.opsStream }, timeout: this.#timeout })
      .then(() => undefined, (err: unknown) => { throw new Error(`lionbus: submit ${verb} ${id}: ${(err as Error).message}`, { cause: err }); });
    const answer = submitted
      .then(() => this.#wait<R>(w, given, wait, opts.signal))
      .finally(() => w.stop());
    return new Call<R>(id, submitted, answer, this);
  }

  /** The batch operations (docs/batch.md): submit, get, list, watch, results, cancel, retry, setMaxCost. */
  get batches(): Batches {
    this.#batches ??= new Batches(this.nc, this.subjects, this.#timeout);
    return this.#batches;
  }

  /** Submits a request for the named operation op.NAME (registered in the worker). */
  op<V = unknown>(name: string, data: OpRequest = {}, opts: BranchlessCallOptions = {}): Call<OpResult<V>> {
    checkToken("operation name", name);
    return this.submit<OpResult<V>>(`op.${name}`, opts.branch, data, opts);
  }

  /**
   * Waits for the answer of request id, submitted earlier (by this client
   * or another): an answer stored already is returned at once. It rejects
   * with a WaitError when opts.timeout (default awaitTimeout) passes or
   * opts.signal aborts first.
   */
  async await<R = unknown>(id: string, opts: { timeout?: number; signal?: AbortSignal } = {}): Promise<Answer<R>> {
    checkToken("request id", id);
    const w = this.#watch(id);
    try {
      return await this.#wait<R>(w, true, opts.timeout ?? this.#awaitTimeout, opts.signal);
    } finally {
      w.stop();
    }
  }

  /** The stored answer of request id (answers are kept 24 h), or undefined when there is none (not answered yet, unknown, or expired). */
  async result<R = unknown>(id: string): Promise<Answer<R> | undefined> {
    checkToken("request id", id);
    const m = await this.#last(this.subjects.resultsStream, this.subjects.reply(id));
    return m ? new Answer<R>(m as CloudEvent<R>) : undefined;
  }

  /** Asks the workers to cancel request id (docs/protocol.md, Cancelling a request); an answered request is not affected. */
  async cancel(id: string): Promise<void> {
    checkToken("request id", id);
    this.nc.publish(this.subjects.cancel(id));
    await this.nc.flush();
  }

  /**
   * The chunks of request id from seq opts.from: those the chunks stream
   * keeps (1 h) first, then live ones, each once and in order, until the
   * answer came and every chunk stored before it was delivered (a worker
   * stores all of a request's chunks before answering). A follower that
   * comes late, or again, replays from any seq.
   */
  follow<R = unknown>(id: string, opts: FollowOptions & { answer?: Promise<Answer<R>> } = {}): ChunkStream<R> {
    checkToken("request id", id);
    const ms = opts.timeout ?? this.#awaitTimeout;
    let answer = opts.answer;
    if (!answer) {
      const w = this.#watch(id);
      answer = this.#wait<R>(w, true, ms, opts.signal).finally(() => w.stop());
    }
    answer.catch(() => {});
    const from = Math.max(opts.from ?? 0, 1);
    const self = this;
    const got = answer;
    async function* chunks(): AsyncGenerator<RunChunkData> {
      const box = new Mailbox<{ chunk?: RunChunkData; answered?: true }>();
      const consumer = await self.#js.consumers.get(self.subjects.chunksStream, {
        filter_subjects: [self.subjects.chunk(id)],
        deliver_policy: DeliverPolicy.All,
      });
      const msgs = await consumer.consume();
      const timer = setTimeout(() => box.fail(new WaitError(id, `chunks not complete within ${ms} ms`)), ms);
      const onAbort = () => box.fail(new WaitError(id, "following was aborted"));
      opts.signal?.addEventListener("abort", onAbort);
      (async () => {
        try {
          for await (const m of msgs) {
            box.push({ chunk: decodeEvent<RunChunkData>(m.data, m.headers).data });
          }
        } catch (err) {
          box.fail(err);
        }
      })();
      got.then(() => box.push({ answered: true }), (err) => box.fail(err));
      let seen = from - 1;
      let last = Infinity;
      try {
        for (;;) {
          if (seen >= last) return;
          const item = await box.take();
          if (item.answered) {
            last = await self.#lastChunk(id);
          } else if (item.chunk && item.chunk.seq > seen) {
            seen = item.chunk.seq;
            yield item.chunk;
          }
        }
      } finally {
        clearTimeout(timer);
        opts.signal?.removeEventListener("abort", onAbort);
        msgs.stop();
      }
    }
    return { answer: got, [Symbol.asyncIterator]: chunks };
  }

  /**
   * The signal events of branch (lifecycle, message-added, tool hook and
   * LNDL round events), in order, from the events stream (24 h): from the
   * next one published, or opts.since, or the first kept (opts.all). It
   * ends when opts.signal aborts or the loop breaks. Events that cannot be
   * decoded are skipped.
   */
  watch(branch: string, opts: WatchOptions = {}): AsyncIterable<SignalEvent> {
    checkToken("branch id", branch);
    const self = this;
    async function* events(): AsyncGenerator<SignalEvent> {
      const cfg: Partial<OrderedConsumerOptions> = {
        filter_subjects: [self.subjects.events(branch, ">")],
        deliver_policy: DeliverPolicy.New,
      };
      if (opts.all) cfg.deliver_policy = DeliverPolicy.All;
      else if (opts.since) {
        cfg.deliver_policy = DeliverPolicy.StartTime;
        cfg.opt_start_time = opts.since.toISOString();
      }
      if (opts.signal?.aborted) return;
      const consumer = await self.#js.consumers.get(self.subjects.eventsStream, cfg);
      const msgs = await consumer.consume();
      const onAbort = () => msgs.stop();
      opts.signal?.addEventListener("abort", onAbort);
      try {
        for await (const m of msgs) {
          let ev: CloudEvent;
          try {
            ev = decodeEvent(m.data, m.headers);
          } catch {
            continue;
          }
          yield ev as SignalEvent;
        }
      } finally {
        opts.signal?.removeEventListener("abort", onAbort);
        msgs.stop();
      }
    }
    return { [Symbol.asyncIterator]: events };
  }

  /** Closes the connection when the client opened it (connect), else does nothing. */
  async close(): Promise<void> {
    if (this.#owned) await this.nc.drain();
  }

  #watch(id: string): AnswerWatch {
    const box = new Mailbox<Msg>();
    const sub = this.nc.subscribe(this.subjects.reply(id), {
      callback: (err, m) => (err ? box.fail(err) : box.push(m)),
    });
    return { id, box, stop: () => sub.unsubscribe() };
  }

  // wait returns the answer delivered to w or stored in the results stream.
  // With early (the answer may be out already) it looks into the stream at
  // once and after each of rechecks, since the server delivers an answer to
  // subscribers before the stream stored it; later, and from the start
  // without early, every recheckEvery, in case a delivery was missed.
  async #wait<R>(w: AnswerWatch, early: boolean, ms: number, signal?: AbortSignal): Promise<Answer<R>> {
    const end = Date.now() + ms;
    const next = w.box.take().then((m) => new Answer<R>(decodeEvent(m.data, m.headers)));
    next.catch(() => {});
    let aborted: Promise<never> | undefined;
    let onAbort: (() => void) | undefined;
    if (signal) {
      if (signal.aborted) throw new WaitError(w.id, "the wait was aborted");
      aborted = new Promise<never>((_, reject) => {
        onAbort = () => reject(new WaitError(w.id, "the wait was aborted"));
        signal.addEventListener("abort", onAbort, { once: true });
      });
      aborted.catch(() => {});
    }
    try {
      for (let i = 0; ; i++) {
        if (early || i > 0) {
          const stored = await this.result<R>(w.id);
          if (stored) return stored;
        }
        const left = end - Date.now();
        if (left <= 0) throw new WaitError(w.id, `no answer within ${ms} ms`);
        let timer: ReturnType<typeof setTimeout> | undefined;
        const tick = new Promise<undefined>((resolve) => {
          timer = setTimeout(() => resolve(undefined), Math.min(early && i < rechecks.length ? rechecks[i] : recheckEvery, left));
        });
        const got = await Promise.race([next, tick, ...(aborted ? [aborted] : [])]).finally(() => clearTimeout(timer));
        if (got) return got;
      }
    } finally {
      if (onAbort) signal?.removeEventListener("abort", onAbort);
    }
  }

  async #manager(): Promise<JetStreamManager> {
    this.#jsm ??= jetstreamManager(this.nc, { checkAPI: false, timeout: this.#timeout });
    return this.#jsm;
  }

  // last reads the last message of subject in stream with a direct get.
  async #last(stream: string, subject: string): Promise<CloudEvent | undefined> {
    const jsm = await this.#manager();
    const m = await jsm.direct.getMessage(stream, { last_by_subj: subject });
    return m ? decodeEvent(m.data, m.header) : undefined;
  }

  async #lastChunk(id: string): Promise<number> {
    const ev = await this.#last(this.subjects.chunksStream, this.subjects.chunk(id));
    const seq = (ev?.data as RunChunkData | undefined)?.seq;
    return typeof seq === "number" ? seq : 0;
  }
}

