// The generated types follow schemas/: regenerating them gives the
// committed files (a schema changed without `make js-gen` fails here), and
// a field added to a schema and not to the types is caught.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const schemas = path.resolve(pkg, "..", "..", "schemas");

function check(schemaDir: string): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [path.join(pkg, "scripts", "generate.mjs"), "--check", "--schemas", schemaDir], { cwd: pkg, encoding: "utf8" });
  return { status: r.status, out: r.stdout + r.stderr };
}

test("the generated types match the schemas", () => {
  const r = check(schemas);
  assert.equal(r.status, 0, r.out);
});

test("a field added to a schema and not to the generated types fails the check", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lionbus-schemas-"));
  try {
    fs.cpSync(schemas, dir, { recursive: true });
    assert.equal(check(dir).status, 0, "an unchanged copy of the schemas must pass");
    const file = path.join(dir, "lionbus.communicate.request.json");
    const doc = JSON.parse(fs.readFileSync(file, "utf8"));
    doc.properties.temperature_hint = { description: "A field the generated types do not have.", type: "number" };
    fs.writeFileSync(file, JSON.stringify(doc, null, 2));
    const r = check(dir);
    assert.equal(r.status, 1, r.out);
    assert.match(r.out, /generated types differ from the schemas/);
    assert.match(r.out, /schemas\.ts/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("a new verb's schemas give it a typed method", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lionbus-schemas-"));
  const out = fs.mkdtempSync(path.join(os.tmpdir(), "lionbus-gen-"));
  try {
    fs.cpSync(schemas, dir, { recursive: true });
    for (const kind of ["request", "result"]) {
      fs.writeFileSync(path.join(dir, `lionbus.batch.${kind}.json`), JSON.stringify({
        $schema: "https://json-schema.org/draft/2020-12/schema", title: `lionbus.batch.${kind}`,
        description: `Data of a batch ${kind}.`, type: "object", properties: { items: { type: "array" } },
      }));
    }
    const r = spawnSync(process.execPath, [path.join(pkg, "scripts", "generate.mjs"), "--schemas", dir, "--out", out], { cwd: pkg, encoding: "utf8" });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const verbs = fs.readFileSync(path.join(out, "verbs.ts"), "utf8");
    assert.match(verbs, /"batch": \{ request: BatchRequest; result: BatchResult \}/);
    assert.match(verbs, /batch\(branch: string, data: BatchRequest = \{\}, opts\?: CallOptions\): Call<BatchResult>/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(out, { recursive: true, force: true });
  }
});
