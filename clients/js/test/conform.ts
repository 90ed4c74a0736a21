// Checks data against the JSON Schema of its event type in schemas/, with
// ajv: what the typed client returns is what the schemas describe.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Ajv2020Module from "ajv/dist/2020.js";

const Ajv2020 = ((Ajv2020Module as unknown as { default?: unknown }).default ?? Ajv2020Module) as typeof Ajv2020Module.default;
const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..", "schemas");
const base = "https://lionbus.github.io/schemas/";
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
for (const sub of ["", "tools"]) {
  for (const f of fs.readdirSync(path.join(dir, sub)).filter((f) => f.endsWith(".json"))) {
    const doc = JSON.parse(fs.readFileSync(path.join(dir, sub, f), "utf8"));
    doc.$id = base + (sub ? sub + "/" : "") + f;
    ajv.addSchema(doc);
  }
}

/** Throws when data does not match the schema of event type typ (file schemas/<typ>.json). */
export function conforms(typ: string, data: unknown): void {
  const v = ajv.getSchema(base + typ + ".json");
  if (!v) throw new Error(`no schema for ${typ}`);
  if (!v(data)) throw new Error(`${typ} data does not match its schema: ${ajv.errorsText(v.errors)}\n${JSON.stringify(data)}`);
}
