// CloudEvents 1.0 over NATS, as lionbus speaks them (docs/protocol.md,
// Content modes): structured mode (the body is the event as JSON) and
// binary mode (ce- headers, the body is the data).
import { headers as natsHeaders } from "@nats-io/transport-node";
import type { MsgHdrs } from "@nats-io/transport-node";

/** A CloudEvent as lionbus sends it: its attributes, its extensions and its data. */
export interface CloudEvent<D = unknown> {
  specversion: "1.0";
  id: string;
  source: string;
  type: string;
  time?: string;
  datacontenttype?: string;
  /** The data, decoded from JSON. */
  data: D;
  /** Extension attributes (branchid, requestid, traceparent, seq, ...) and any other attribute. */
  [attribute: string]: unknown;
}

/** The content type of a structured event. */
export const cloudEventsJSON = "application/cloudevents+json";

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** How a request is put on the wire. */
export type ContentMode = "structured" | "binary";

/** The body and headers of a message carrying ev in mode. */
export function encodeEvent(ev: CloudEvent, mode: ContentMode = "structured", extra?: Record<string, string>): { body: Uint8Array; headers: MsgHdrs } {
  const h = natsHeaders();
  if (mode === "structured") {
    h.set("Content-Type", cloudEventsJSON);
    for (const [k, v] of Object.entries(extra ?? {})) h.set(k, v);
    return { body: encoder.encode(JSON.stringify(ev)), headers: h };
  }
  for (const [k, v] of Object.entries(ev)) {
    if (k === "data" || v === undefined || v === null) continue;
    if (k === "datacontenttype") {
      h.set("Content-Type", String(v));
      continue;
    }
    h.set(`ce-${k}`, encodeURIComponent(String(v)).replace(/%20/g, " "));
  }
  if (!h.has("Content-Type")) h.set("Content-Type", "application/json");
  for (const [k, v] of Object.entries(extra ?? {})) h.set(k, v);
  return { body: encoder.encode(JSON.stringify(ev.data ?? {})), headers: h };
}

/** Thrown by {@link decodeEvent} for a message that is not a CloudEvent lionbus can read. */
export class EventDecodeError extends Error {
  override name = "EventDecodeError";
}

function headerValue(h: MsgHdrs | undefined, name: string): string | undefined {
  if (!h) return undefined;
  const lower = name.toLowerCase();
  for (const [k, v] of h) {
    if (k.toLowerCase() === lower && v.length > 0) return v[0];
  }
  return undefined;
}

function isJSONType(ct: string): boolean {
  const t = ct.split(";")[0].trim().toLowerCase();
  return t === "application/json" || t === "text/json" || t.endsWith("+json");
}

/**
 * Decodes a message into a CloudEvent: binary mode when it has a
 * ce-specversion header, else structured. The data of a JSON content type
 * is parsed; data_base64 is decoded (and parsed when JSON).
 */
export function decodeEvent<D = unknown>(body: Uint8Array, h?: MsgHdrs): CloudEvent<D> {
  let text: string;
  try {
    text = decoder.decode(body);
  } catch {
    throw new EventDecodeError("the message is not UTF-8");
  }
  if (headerValue(h, "ce-specversion") !== undefined) {
    const ev: Record<string, unknown> = {};
    for (const [k, v] of h!) {
      if (!k.toLowerCase().startsWith("ce-") || v.length === 0) continue;
      let value = v[0];
      if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
      try {
        value = decodeURIComponent(value);
      } catch {
        throw new EventDecodeError(`header ${k} is not percent-encoded UTF-8`);
      }
      ev[k.slice(3).toLowerCase()] = value;
    }
    const ct = (ev.datacontenttype as string | undefined) ?? headerValue(h, "Content-Type");
    if (ct !== undefined) ev.datacontenttype = ct;
    ev.data = text === "" ? undefined : ct === undefined || isJSONType(ct) ? parseJSON(text) : text;
    return checkEvent<D>(ev);
  }
  const ev = parseJSON(text);
  if (ev === null || typeof ev !== "object" || Array.isArray(ev)) throw new EventDecodeError("the body is not a JSON object");
  const rec = ev as Record<string, unknown>;
  if (rec.data === undefined && typeof rec.data_base64 === "string") {
    const raw = Buffer.from(rec.data_base64, "base64").toString("utf8");
    const ct = rec.datacontenttype as string | undefined;
    rec.data = ct === undefined || isJSONType(ct) ? parseJSON(raw) : raw;
    delete rec.data_base64;
  }
  return checkEvent<D>(rec);
}

function parseJSON(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new EventDecodeError(`not JSON: ${(err as Error).message}`);
  }
}

function checkEvent<D>(ev: Record<string, unknown>): CloudEvent<D> {
  for (const attr of ["specversion", "id", "source", "type"]) {
    if (typeof ev[attr] !== "string" || ev[attr] === "") throw new EventDecodeError(`attribute ${attr} is missing`);
  }
  if (ev.specversion !== "1.0") throw new EventDecodeError(`specversion ${JSON.stringify(ev.specversion)} is not 1.0`);
  return ev as CloudEvent<D>;
}

const traceParentRE = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** Reports whether tp is a W3C traceparent lionbus accepts (docs/protocol.md, Trace context). */
export function isTraceParent(tp: unknown): tp is string {
  if (typeof tp !== "string" || tp.length < 55 || !traceParentRE.test(tp.slice(0, 55))) return false;
  const [version, trace, span] = tp.split("-");
  if (version === "ff" || /^0+$/.test(trace) || /^0+$/.test(span)) return false;
  return version === "00" ? tp.length === 55 : tp.length === 55 || tp[55] === "-";
}
