// The parameters schema of a tool: its bounds (the same as the registry's,
// docs/tools.md) and its validator (ajv, JSON Schema 2020-12).
import Ajv2020Module from "ajv/dist/2020.js";
import type { ErrorObject } from "ajv";

/** The largest description of a tool, in bytes. */
export const maxDescriptionLength = 8 << 10;
/** The largest parameters schema, in bytes of JSON. */
export const maxParametersSize = 64 << 10;
/** How deep a parameters schema may nest objects and arrays. */
export const maxSchemaDepth = 64;
/** How many JSON values a parameters schema may hold. */
export const maxSchemaNodes = 20_000;

/** Checks arguments: undefined when they match, else the schema's complaint. */
export type ArgsValidator = (args: unknown) => string | undefined;

// ajv is a CommonJS module: its class is the default export's default.
const Ajv2020 = ((Ajv2020Module as unknown as { default?: unknown }).default ?? Ajv2020Module) as typeof Ajv2020Module.default;

/**
 * Compiles a tool's parameters schema: a JSON Schema (2020-12) object with
 * "type": "object", self-contained (a $ref outside it is an error), within
 * the bounds above. Formats are annotations, as in Go's validator.
 */
export function compileParameters(schema: unknown): ArgsValidator {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) throw new Error("must be a JSON Schema object");
  if ((schema as Record<string, unknown>).type !== "object") throw new Error('must have "type": "object" (the arguments are an object)');
  const size = new TextEncoder().encode(JSON.stringify(schema)).length;
  if (size > maxParametersSize) throw new Error(`${size} bytes, over the ${maxParametersSize} byte limit`);
  checkShape(schema);
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false, validateSchema: true });
  const validate = ajv.compile(schema as object);
  return (args) => (validate(args) ? undefined : describe(validate.errors ?? []));
}

function describe(errors: ErrorObject[]): string {
  const e = errors[0];
  if (!e) return "invalid";
  const at = e.instancePath === "" ? "/" : e.instancePath;
  return `at ${at}: ${e.message ?? e.keyword}`;
}

// checkShape refuses a schema nested deeper than maxSchemaDepth or holding
// more than maxSchemaNodes values, without recursion.
function checkShape(doc: unknown): void {
  const stack: [unknown, number][] = [[doc, 0]];
  let nodes = 0;
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (++nodes > maxSchemaNodes) throw new Error(`more than ${maxSchemaNodes} values`);
    if (v === null || typeof v !== "object") continue;
    if (depth + 1 > maxSchemaDepth) throw new Error(`nested deeper than ${maxSchemaDepth}`);
    for (const child of Object.values(v as object)) stack.push([child, depth + 1]);
  }
}
