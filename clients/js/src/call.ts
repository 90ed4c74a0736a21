// A submitted request and its answer.
import type { CloudEvent } from "./events.js";
import { LionError } from "./errors.js";
import type { ErrorData } from "./generated/schemas.js";
import type { ChunkStream, FollowOptions } from "./chunks.js";

/** How a request is submitted and waited for. */
export interface CallOptions {
  /**
   * The request id: 1 to 128 characters of [A-Za-z0-9_-] (default a new
   * UUID). It is also the idempotency key: a request submitted twice with
   * one id runs once.
   */
  id?: string;
  /**
   * The deadline attribute: a Date, or milliseconds from now. Past it the
   * worker stops working on the request and answers it timeout; the wait
   * for the answer lasts until a little after it unless timeout says
   * otherwise.
   */
  deadline?: Date | number;
  /** How long to wait for the answer, in milliseconds (default the client's awaitTimeout, or the deadline plus 10 s). */
  timeout?: number;
  /** Stops waiting for the answer when aborted (the request goes on: see {@link Call.cancel}). */
  signal?: AbortSignal;
  /** The branchorder attribute "parallel": the request waits for no other of its branch, and none waits for it. */
  parallel?: boolean;
  /** A subject the answer is also published on (core NATS), besides <prefix>.reply.<id>. */
  replyTo?: string;
  /** The W3C traceparent of the request (default: the worker starts a trace). */
  traceparent?: string;
  /** The source attribute (default the client's). */
  source?: string;
  /** Send the request in binary content mode (ce- headers) instead of structured mode. */
  binary?: boolean;
}

/** The options of a verb that needs no branch: the branch is optional. */
export interface BranchlessCallOptions extends CallOptions {
  /** The branchid attribute (branch.create: the new branch's id, unless the data names it). */
  branch?: string;
}

/** The answer to a request: a lionbus.<verb>.result event, or a lionbus.error event. */
export class Answer<R = unknown> {
  /** The answer event as received. */
  readonly event: CloudEvent<R | ErrorData>;

  constructor(event: CloudEvent<R | ErrorData>) {
    this.event = event;
  }

  /** The event type: lionbus.<verb>.result, or lionbus.error. */
  get type(): string { return this.event.type; }
  /** The id of the request answered. */
  get requestId(): string { return String(this.event.requestid ?? ""); }
  /** The answer event's id: the same for every answer ever sent to one request. */
  get id(): string { return this.event.id; }
  /** The error of a lionbus.error answer, else undefined. */
  get error(): LionError | undefined {
    if (this.event.type !== "lionbus.error") return undefined;
    const d = (this.event.data ?? {}) as Partial<ErrorData>;
    return new LionError({ code: d.code ?? "internal", message: d.message ?? "undecodable error event", request_id: d.request_id ?? this.requestId });
  }
  /** The result data; throws the LionError of an error answer. */
  result(): R {
    const err = this.error;
    if (err) throw err;
    return this.event.data as R;
  }
}

/** What a {@link Call} needs of its client. */
export interface CallHost {
  cancel(id: string): Promise<void>;
  follow<R>(id: string, opts: FollowOptions & { answer?: Promise<Answer<R>> }): ChunkStream<R>;
}

/**
 * A submitted request. Await it for its result data (a lionbus.error answer
 * rejects with a {@link LionError}); answer() gives the answer event
 * whatever it is; cancel() asks the workers to stop it; chunks() follows
 * its streamed chunks.
 */
export class Call<R = unknown> implements Promise<R> {
  /** The request id. */
  readonly id: string;
  /** Resolves once the requests stream stored the request (rejects when it could not be submitted). */
  readonly submitted: Promise<void>;
  readonly #answer: Promise<Answer<R>>;
  readonly #host: CallHost;

  constructor(id: string, submitted: Promise<void>, answer: Promise<Answer<R>>, host: CallHost) {
    this.id = id;
    this.submitted = submitted;
    this.#answer = answer;
    this.#host = host;
    // Nobody may ever look: a failure is reported to whoever does.
    submitted.catch(() => {});
    answer.catch(() => {});
  }

  /** The answer event, an error answer included (it rejects only when no answer came: a WaitError, or the submit's error). */
  answer(): Promise<Answer<R>> {
    return this.#answer;
  }

  /** Asks the workers to cancel the request: a running one is answered canceled (a run ends cleanly with canceled: true). */
  cancel(): Promise<void> {
    return this.#host.cancel(this.id);
  }

  /** The request's chunks (run, and communicate, operate, react with stream: true), from seq opts.from, each once, in order, until the answer. */
  chunks(opts: FollowOptions = {}): ChunkStream<R> {
    return this.#host.follow<R>(this.id, { ...opts, answer: this.#answer });
  }

  then<A = R, B = never>(onfulfilled?: ((value: R) => A | PromiseLike<A>) | null, onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<A | B> {
    return this.#answer.then((a) => a.result()).then(onfulfilled, onrejected);
  }

  /** As Promise.finally. */
  finally(onfinally?: (() => void) | null): Promise<R> {
    return this.then(undefined, undefined).finally(onfinally);
  }

  readonly [Symbol.toStringTag] = "Call";

  /** As Promise.catch. */
  catch<B = never>(onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<R | B> {
    return this.then(undefined, onrejected);
  }
}
