// Errors of the SDK.
import type { ErrorCode, ErrorData } from "./generated/schemas.js";

/**
 * A lionbus.error answer: the request failed with a stable code (see
 * errorCodes; a newer worker may send a code this version does not
 * list) and a message meant for people.
 */
export class LionError extends Error {
  override name = "LionError";
  /** The stable, machine-readable code, e.g. "branch_not_found". */
  readonly code: ErrorCode | (string & {});
  /** The id of the failed request ("" when it could not be read). */
  readonly requestId: string;

  constructor(data: ErrorData) {
    super(`lionbus: ${data.code}: ${data.message}`);
    this.code = data.code;
    this.requestId = data.request_id;
  }
}

/** Thrown when the wait for an answer ended (its timeout, or its AbortSignal) before the answer came. The request may still be answered later. */
export class WaitError extends Error {
  override name = "WaitError";
  /** The id of the request waited for. */
  readonly requestId: string;

  constructor(requestId: string, reason: string) {
    super(`lionbus: no answer to ${requestId}: ${reason}`);
    this.requestId = requestId;
  }
}
