// The console's decisions that need no page: how a pod's or an object's health reads, where an
// environment value or a volume comes from, a log line's timestamp, a field's name in words, YAML for
// people, an instance route's parts. Run by `node --test crates/uc-console/tests/` (.ci/run).
import { test } from "node:test";
import assert from "node:assert/strict";
import { health, words, toYaml } from "../assets/k8s.js";
import { envSource, volumeSource, splitLine } from "../assets/pod.js";
import { instanceParams } from "../assets/instance.js";

const pod = (phase, ready, waiting) => ({
  kind: "Pod", metadata: {},
  status: { phase, conditions: [{ type: "Ready", status: ready ? "True" : "False" }],
    containerStatuses: [{ state: waiting ? { waiting: { reason: waiting } } : { running: {} } }] },
});

test("a pod is healthy when Ready, not merely Running", () => {
  assert.equal(health(pod("Running", true)), "ok");
  assert.equal(health(pod("Running", false)), "pending");
  assert.equal(health(pod("Pending", false, "CrashLoopBackOff")), "bad");
  assert.equal(health(pod("Pending", false, "ErrImagePull")), "bad");
  assert.equal(health(pod("Pending", false, "ContainerCreating")), "pending");
  assert.equal(health(pod("Failed", false)), "bad");
  assert.equal(health(pod("Succeeded", false)), "ok");
  assert.equal(health({ ...pod("Running", true), metadata: { deletionTimestamp: "2026-01-01T00:00:00Z" } }), "pending");
});

test("other objects read by their Ready or Available condition, phase, or replicas", () => {
  const cond = (type, status) => ({ status: { conditions: [{ type, status }] } });
  assert.equal(health(cond("Available", "True")), "ok");
  assert.equal(health(cond("Ready", "False")), "pending");
  assert.equal(health({ status: { conditions: [{ type: "Ready", status: "False" }, { type: "Failed", status: "True" }] } }), "bad");
  assert.equal(health({ status: { phase: "Bound" } }), "ok");
  assert.equal(health({ status: { phase: "Failed" } }), "bad");
  assert.equal(health({ spec: { replicas: 3 }, status: { readyReplicas: 2 } }), "pending");
  assert.equal(health({ spec: { replicas: 3 }, status: { readyReplicas: 3 } }), "ok");
  assert.equal(health({ data: {} }), "ok");
});

test("an environment value names its source, never a Secret's value", () => {
  assert.equal(envSource({ name: "A", value: "x" }), "x");
  assert.equal(envSource({ name: "A" }), "");
  assert.equal(envSource({ name: "A", valueFrom: { configMapKeyRef: { name: "c", key: "k" } } }), "key k of ConfigMap c");
  assert.equal(envSource({ name: "A", valueFrom: { secretKeyRef: { name: "s", key: "p", optional: true } } }), "key p of Secret s (optional)");
  assert.equal(envSource({ name: "A", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } }), "field status.podIP of the pod");
  assert.equal(envSource({ name: "A", valueFrom: { resourceFieldRef: { resource: "limits.cpu", containerName: "m" } } }), "resource limits.cpu of m");
});

test("a volume's source in words", () => {
  assert.deepEqual(volumeSource({ name: "v", configMap: { name: "c" } }), ["configMap", "ConfigMap c"]);
  assert.deepEqual(volumeSource({ name: "v", secret: { secretName: "s" } }), ["secret", "Secret s"]);
  assert.deepEqual(volumeSource({ name: "v", persistentVolumeClaim: { claimName: "data", readOnly: true } }),
    ["persistentVolumeClaim", "PersistentVolumeClaim data (read-only)"]);
  assert.deepEqual(volumeSource({ name: "v", emptyDir: { medium: "Memory", sizeLimit: "1Gi" } }), ["emptyDir", "empty directory in Memory, at most 1Gi"]);
  assert.deepEqual(volumeSource({ name: "v", hostPath: { path: "/x" } }), ["hostPath", "host path /x"]);
  assert.deepEqual(volumeSource({ name: "v", projected: { sources: [{ serviceAccountToken: {} }, { configMap: {} }] } }),
    ["projected", "projected: serviceAccountToken, configMap"]);
  assert.deepEqual(volumeSource({ name: "v", nfs: { server: "n" } }), ["nfs", '{"server":"n"}']);
});

test("a log line's timestamp is split off only when it is one", () => {
  assert.deepEqual(splitLine("2026-12-01T04:00:00.123456789Z hello world"), ["2026-12-01T04:00:00.123456789Z", "hello world"]);
  assert.deepEqual(splitLine("hello world"), ["", "hello world"]);
  assert.deepEqual(splitLine(""), ["", ""]);
});

test("a field's name in words", () => {
  assert.equal(words("readyReplicas"), "Ready replicas");
  assert.equal(words("podIP"), "Pod IP");
  assert.equal(words("observed_generation"), "Observed generation");
});

test("YAML quotes what would read as something else", () => {
  assert.equal(toYaml({ a: "true", b: "1.5", c: "x: y", d: "plain", e: [] }), 'a: "true"\nb: "1.5"\nc: "x: y"\nd: plain\ne: []');
  assert.equal(toYaml({ list: [{ a: 1, b: 2 }] }), "list:\n- a: 1\n  b: 2");
});

test("an instance route's apiVersion may be typed with its slash", () => {
  assert.deepEqual(instanceParams(["apps", "v1", "Deployment", "default", "web"]), ["apps/v1", "Deployment", "default", "web"]);
  assert.deepEqual(instanceParams(["apps/v1", "Deployment", "default", "web", "yaml"]), ["apps/v1", "Deployment", "default", "web", "yaml"]);
  assert.deepEqual(instanceParams(["v1", "ConfigMap", "default", "c"]), ["v1", "ConfigMap", "default", "c"]);
});

test("the topology's nodes are the parent's descendants to a depth of 4, each once, with an edge per owner", async () => {
  const { topologyGraph } = await import("../assets/instance.js");
  const o = (kind, name, owner) => ({ kind, metadata: { name, uid: name, ownerReferences: owner ? [{ uid: owner }] : [] } });
  const objects = [o("ReplicaSet", "rs", "d"), o("Pod", "p2", "rs"), o("Pod", "p1", "rs"), o("Service", "s", "d"), o("Pod", "elsewhere", "x")];
  const byOwner = new Map();
  for (const x of objects) for (const r of x.metadata.ownerReferences) byOwner.set(r.uid, [...(byOwner.get(r.uid) || []), x]);
  const { nodes, edges } = topologyGraph(o("Deployment", "d"), byOwner);
  assert.deepEqual(nodes.map((n) => n.id), ["d", "rs", "p1", "p2", "s"]);
  assert.deepEqual(edges.map((e) => `${e.from}>${e.to}`), ["d>rs", "rs>p1", "rs>p2", "d>s"]);
  assert.ok(nodes.every((n) => n.width >= 24 + 14 * 7.4 && n.width <= 320 && n.height === 62));
  // A chain deeper than 4 stops there; an owner loop does not go round.
  const chain = new Map([["a", [o("K", "b", "a")]], ["b", [o("K", "c", "b")]], ["c", [o("K", "d1", "c")]], ["d1", [o("K", "e", "d1")]],
    ["e", [o("K", "f", "e")]]]);
  assert.deepEqual(topologyGraph(o("K", "a"), chain).nodes.map((n) => n.id), ["a", "b", "c", "d1", "e"]);
  const loop = new Map([["a", [o("K", "b", "a")]], ["b", [o("K", "a", "b")]]]);
  assert.deepEqual(topologyGraph(o("K", "a"), loop).nodes.map((n) => n.id), ["a", "b"]);
});

test("siblings of one kind beyond MAX_SIBLINGS are one node counting them by health, the worst its colour", async () => {
  const { topologyGraph, groupCounts, MAX_SIBLINGS } = await import("../assets/instance.js");
  const pod = (name, ready) => ({ kind: "Pod", metadata: { name, uid: name, ownerReferences: [{ uid: "rs" }] },
    status: { phase: "Running", conditions: [{ type: "Ready", status: ready ? "True" : "False" }] } });
  const rs = { kind: "ReplicaSet", metadata: { name: "rs", uid: "rs" } };
  const many = Array.from({ length: MAX_SIBLINGS + 1 }, (_, i) => pod(`p${i}`, i !== 3));
  const svc = { kind: "Service", metadata: { name: "s", uid: "s", ownerReferences: [{ uid: "rs" }] } };
  const { nodes, edges } = topologyGraph(rs, new Map([["rs", [...many, svc]]]));
  assert.deepEqual(nodes.map((n) => n.id), ["rs", "rs/Pod", "s"]);
  assert.deepEqual(edges.map((e) => `${e.from}>${e.to}`), ["rs>rs/Pod", "rs>s"]);
  assert.deepEqual(nodes[1].group, { kind: "Pod", count: MAX_SIBLINGS + 1, ok: MAX_SIBLINGS, pending: 1, bad: 0, health: "pending" });
  assert.equal(groupCounts(nodes[1].group), `${MAX_SIBLINGS} ready · 1 not ready`, "only the counts there are");
  assert.ok(nodes[1].width >= 24 + groupCounts(nodes[1].group).length * 7.4, "wide enough for its counts");
  // As many as MAX_SIBLINGS are each drawn.
  assert.equal(topologyGraph(rs, new Map([["rs", many.slice(1)]])).nodes.length, 1 + MAX_SIBLINGS);
});

test("a condition is coloured by what it says: True is good news for Ready, bad news for InstallPlanFailed", async () => {
  const { conditionHealth } = await import("../assets/k8s.js");
  assert.equal(conditionHealth("Ready", "True"), "ok");
  assert.equal(conditionHealth("Ready", "False"), "bad");
  assert.equal(conditionHealth("Available", "Unknown"), "pending");
  assert.equal(conditionHealth("CatalogSourcesUnhealthy", "False"), "ok");
  assert.equal(conditionHealth("CatalogSourcesUnhealthy", "True"), "bad");
  assert.equal(conditionHealth("InstallPlanFailed", "True"), "bad");
  assert.equal(conditionHealth("InstallPlanMissing", "False"), "ok");
  assert.equal(conditionHealth("InstallPlanPending", "True"), "pending");
  assert.equal(conditionHealth("MemoryPressure", "False"), "ok");
  assert.equal(conditionHealth("Degraded", "True"), "bad");
});
