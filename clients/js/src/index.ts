// @lionbus/client: the TypeScript SDK of lionbus. See docs/typescript.md.
export { LionClient } from "./client.js";
export type { ClientOptions, ConnectOptions, OpResult, SignalEvent, WatchOptions } from "./client.js";
export { Answer, Call } from "./call.js";
export { batchFinal, batchID, BatchError, Batches, checkBatchInput, checkBatchLine, defaultBatchConcurrency, maxBatchConcurrency, maxBatchIDLength, maxBatchItems, maxBatchLineBytes, maxCustomIDLength, validBatchID } from "./batch.js";
export type { Batch, BatchCounts, BatchResult, BatchSpec, BatchState, ItemStatus } from "./batch.js";
export type { BranchlessCallOptions, CallOptions } from "./call.js";
export type { ChunkStream, FollowOptions } from "./chunks.js";
export { LionError, WaitError } from "./errors.js";
export { cloudEventsJSON, decodeEvent, encodeEvent, EventDecodeError, isTraceParent } from "./events.js";
export type { CloudEvent, ContentMode } from "./events.js";
export { cancelSubject, checkToken, defaultPrefix, eventToken, isToken, isVerb, maxTokenLength, Subjects } from "./subjects.js";
export { branchlessVerbs, VerbMethods, verbs } from "./generated/verbs.js";
export type { Verb, Verbs } from "./generated/verbs.js";
export * from "./generated/schemas.js";
export { defineTool, InvalidConfigError, serveTools, ToolError, ToolService } from "./tools/service.js";
export type { ServiceOptions, Tool, ToolContext, ToolHandler, ToolLogger } from "./tools/service.js";
export { claimGrace, defaultResultWindow, resultKey } from "./tools/results.js";
export type { Outcome } from "./tools/results.js";
export { compileParameters, maxDescriptionLength, maxParametersSize, maxSchemaDepth, maxSchemaNodes } from "./tools/schema.js";
// The nats.js connection this package is built on, so that an application
// needs no second copy of it.
export { connect } from "@nats-io/transport-node";
export type { ConnectionOptions, NatsConnection } from "@nats-io/transport-node";
