// Subjects, streams and buckets of lionbus (docs/protocol.md, Names).

/** The subject prefix of a default deployment. */
export const defaultPrefix = "lion";

/** The largest length of a token (request id, branch id, tool name, prefix). */
export const maxTokenLength = 128;

const tokenRE = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * Reports whether s can be one subject token: 1 to 128 characters of
 * [A-Za-z0-9_-] (the token rule of request ids, branch ids, tool names and
 * the prefix).
 */
export function isToken(s: unknown): s is string {
  return typeof s === "string" && tokenRE.test(s);
}

/** Throws a TypeError naming what when s is not a token. */
export function checkToken(what: string, s: unknown): string {
  if (!isToken(s)) {
    throw new TypeError(`lionbus: ${what} ${JSON.stringify(s)} is not 1 to ${maxTokenLength} characters of [A-Za-z0-9_-]`);
  }
  return s;
}

/** Reports whether verb is one or more dot-separated tokens ("communicate", "branch.create", "op.NAME"). */
export function isVerb(verb: unknown): verb is string {
  return typeof verb === "string" && verb.split(".").every((t) => tokenRE.test(t));
}

/** Every name of a deployment, derived from its prefix. */
export class Subjects {
  readonly prefix: string;
  readonly upper: string;

  constructor(prefix: string = defaultPrefix) {
    this.prefix = checkToken("prefix", prefix);
    this.upper = prefix.toUpperCase();
  }

  /** Where requests for verb are published: <prefix>.ops.<verb>. */
  op(verb: string): string { return `${this.prefix}.ops.${verb}`; }
  /** Where the answer to request id is stored: <prefix>.reply.<id>. */
  reply(id: string): string { return `${this.prefix}.reply.${id}`; }
  /** Where the chunks of request id are stored: <prefix>.chunk.<id>. */
  chunk(id: string): string { return `${this.prefix}.chunk.${id}`; }
  /** Where a cancel of request id is published: <prefix>.cancel.<id>. */
  cancel(id: string): string { return `${this.prefix}.cancel.${id}`; }
  /** The signal events of branch: <prefix>.events.<branch>.<token> (token ">" for all). */
  events(branch: string, token: string): string { return `${this.prefix}.events.${branch}.${token}`; }
  /** Where the tool name is invoked: <prefix>.tool.<name>. */
  tool(name: string): string { return `${this.prefix}.tool.${name}`; }
  /** Where the dead letter of key is kept: <prefix>.dlq.<key>. */
  deadLetter(key: string): string { return `${this.prefix}.dlq.${key}`; }

  /** The requests stream, <PREFIX>_OPS. */
  get opsStream(): string { return `${this.upper}_OPS`; }
  /** The answers stream, <PREFIX>_RESULTS. */
  get resultsStream(): string { return `${this.upper}_RESULTS`; }
  /** The chunks stream, <PREFIX>_CHUNKS. */
  get chunksStream(): string { return `${this.upper}_CHUNKS`; }
  /** The signal events stream, <PREFIX>_EVENTS. */
  get eventsStream(): string { return `${this.upper}_EVENTS`; }
  /** The dead-letter stream, <PREFIX>_DLQ. */
  get deadStream(): string { return `${this.upper}_DLQ`; }
  /** The tool registry bucket, <prefix>_tools. */
  get toolsBucket(): string { return `${this.prefix}_tools`; }
  /** The bucket of remembered tool results, <prefix>_tool_results. */
  get toolResultsBucket(): string { return `${this.prefix}_tool_results`; }
}

/** The subject a tool answering subject is told to stop an invocation on: <subject>.cancel. */
export function cancelSubject(subject: string): string {
  return `${subject}.cancel`;
}

/** The token of a signal event type in its subject: lionbus.run.start is run_start. */
export function eventToken(type: string): string {
  return type.replace(/^lionbus\./, "").replaceAll(".", "_");
}
