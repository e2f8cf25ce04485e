// The YAML editor's schema check (assets/schema-check.js): what the API server would refuse, with the
// field's path, and what it would drop, as warnings.
import { test } from "node:test";
import assert from "node:assert/strict";
import { check, pathText, resolve } from "../assets/schema-check.js";

const schema = {
  type: "object",
  properties: {
    apiVersion: { type: "string" }, kind: { type: "string" }, metadata: { type: "object" },
    spec: {
      type: "object", required: ["size"],
      properties: {
        size: { type: "integer", minimum: 1, maximum: 7 },
        version: { type: "string", pattern: "^\\d+\\.\\d+\\.\\d+$" },
        mode: { type: "string", enum: ["fast", "safe"] },
        port: { "x-kubernetes-int-or-string": true },
        labels: { type: "object", additionalProperties: { type: "string" } },
        free: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
        members: { type: "array", maxItems: 2, items: { type: "object", required: ["name"], properties: { name: { type: "string", minLength: 1 } } } },
        note: { type: "string", nullable: true },
      },
    },
  },
};
const found = (obj) => check(obj, schema).map((f) => `${f.level} ${pathText(f.path)}: ${f.message}`);

test("a valid object has no findings", () => {
  assert.deepEqual(found({ apiVersion: "x/v1", kind: "X", metadata: { name: "a", labels: { a: "b" } },
    spec: { size: 3, version: "3.5.1", mode: "safe", port: "http", labels: { a: "b" }, free: { any: [1] }, members: [{ name: "m" }], note: null } }), []);
});

test("each refusal names its field's path", () => {
  assert.deepEqual(found({ spec: { size: 9, version: "latest", mode: "slow", port: true, labels: { a: 1 }, members: [{}, { name: "" }, { name: "c" }], note: 3 } }), [
    "error spec.size: must be at most 7",
    'error spec.version: must match ^\\d+\\.\\d+\\.\\d+$',
    'error spec.mode: must be one of "fast", "safe"',
    "error spec.port: must be of type number or string, not boolean",
    "error spec.labels.a: must be of type string, not integer",
    "error spec.members: must have at most 2 items",
    "error spec.members[0]: name is required",
    "error spec.members[1].name: must be at least 1 characters",
    "error spec.note: must be of type string, not integer",
  ]);
  assert.deepEqual(found({ spec: { size: "3" } }), ["error spec.size: must be of type integer, not string"]);
  assert.deepEqual(found({ spec: {} }), ["error spec: size is required"]);
  assert.deepEqual(found({ spec: { size: 0 } }), ["error spec.size: must be at least 1"]);
});

test("what the server accepts is not refused: a null for any field, any number for an int-or-string", () => {
  assert.deepEqual(found({ spec: { size: 1, version: null, labels: null, port: 0.5, members: null } }), []);
});

test("a field the schema does not know is a warning (the server drops it), unless the object is open", () => {
  assert.deepEqual(found({ spec: { size: 1, sise: 2, free: { x: 1 } }, extra: true }), [
    'warning spec.sise: unknown field "sise"',
    'warning extra: unknown field "extra"',
  ]);
});

test("references resolve against the document's components", () => {
  const components = { Meta: { type: "object", properties: { name: { type: "string" } } },
    Obj: { type: "object", properties: { metadata: { allOf: [{ $ref: "#/components/schemas/Meta" }], description: "d" } } } };
  assert.equal(resolve({ $ref: "#/components/schemas/Obj" }, components).type, "object");
  assert.deepEqual(check({ metadata: { name: 5 } }, { $ref: "#/components/schemas/Obj" }, { components }).map((f) => pathText(f.path)), ["metadata.name"]);
});
