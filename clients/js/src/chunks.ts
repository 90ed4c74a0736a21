// Following the chunks of a request (docs/protocol.md, Run chunks).
import type { Answer } from "./call.js";
import type { RunChunkData } from "./generated/schemas.js";

/** Where a chunk stream starts and how long it may take. */
export interface FollowOptions {
  /** The first seq delivered (0 or 1: from the first). Chunks before it are skipped. */
  from?: number;
  /** How long to follow, in milliseconds (default the client's awaitTimeout). */
  timeout?: number;
  /** Stops following when aborted. */
  signal?: AbortSignal;
}

/**
 * The chunks of one request: iterate it (for await) to get every chunk
 * from the start seq, each once, in seq order, first those stored, then
 * the rest as they arrive; the iteration ends once the answer came and
 * every chunk stored before it was delivered. answer resolves with the
 * request's answer.
 */
export interface ChunkStream<R = unknown> extends AsyncIterable<RunChunkData> {
  /** The request's answer (it rejects when following failed before it came). */
  readonly answer: Promise<Answer<R>>;
}

/**
 * A queue between producers and one async consumer: push values or a
 * failure, take them in order.
 */
export class Mailbox<T> {
  #items: T[] = [];
  #failure: { err: unknown } | undefined;
  #wake: (() => void) | undefined;

  push(v: T): void {
    this.#items.push(v);
    this.#notify();
  }

  fail(err: unknown): void {
    if (!this.#failure) this.#failure = { err };
    this.#notify();
  }

  #notify(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }

  /** Resolves with the next value, or rejects with the failure once the values before it are taken. */
  async take(): Promise<T> {
    for (;;) {
      if (this.#items.length > 0) return this.#items.shift()!;
      if (this.#failure) throw this.#failure.err;
      await new Promise<void>((resolve) => { this.#wake = resolve; });
    }
  }
}
