#!/usr/bin/env python3
"""Generates src/proto_schema.json: the Kubernetes protobuf message layouts (from the k8s-pb crate's
prost code) with each field's JSON name (from k8s-openapi's serde code), so the API server can decode
`application/vnd.kubernetes.protobuf` request bodies into JSON without code generation at build time.

Run after changing the k8s-pb or k8s-openapi version:
    python3 crates/uc-apiserver/tools/gen_proto_schema.py
(both crates must be in the cargo registry: `cargo fetch` in a project depending on them).
"""

import glob
import json
import os
import re
import sys

REGISTRY = os.path.expanduser("~/.cargo/registry/src")
PB = sorted(glob.glob(f"{REGISTRY}/*/k8s-pb-0.9*/src"))[-1]
OPENAPI = sorted(glob.glob(f"{REGISTRY}/*/k8s-openapi-0.29*/src/v1_33"))[-1]
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "proto_schema.json")


def norm(field):
    field = field.removeprefix("r#")
    return field.rstrip("_")


def openapi_names():
    """(module path, struct) -> {rust field: json name} from k8s-openapi's Serialize impls."""
    names = {}
    for path in glob.glob(f"{OPENAPI}/**/*.rs", recursive=True):
        rel = os.path.relpath(os.path.dirname(path), OPENAPI).replace(os.sep, ".")
        src = open(path).read()
        for m in re.finditer(r"impl crate::serde::Serialize for (\w+) \{(.*?)\n\}\n", src, re.S):
            struct, body = m.group(1), m.group(2)
            fields = {}
            for f, j in re.findall(r"&self\.(\w+) \{\s*crate::serde::ser::SerializeStruct::serialize_field\(&mut state, \"([^\"]+)\"", body):
                fields[norm(f)] = j
            for j, f in re.findall(r"serialize_field\(&mut state, \"([^\"]+)\", &self\.(\w+)\)", body):
                fields[norm(f)] = j
            names[(rel, struct)] = fields
    return names


def camel(snake):
    head, *rest = snake.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


ATTR = re.compile(r"#\[prost\((\w+)(?: = \"([^\"]*)\")?, (?:(optional|repeated|required), )?tag = \"(\d+)\"\)\]")


def fields_of(body):
    """(kind, arg, label, tag, name, type) for each prost field; types may span lines."""
    out = []
    for m in ATTR.finditer(body):
        rest = body[m.end():]
        decl = re.match(r"\s*pub (r#\w+|\w+):", rest)
        if not decl:
            continue
        i, depth, ty = decl.end(), 0, []
        while i < len(rest):
            c = rest[i]
            if c == "<":
                depth += 1
            elif c == ">":
                depth -= 1
            elif c == "," and depth == 0:
                break
            ty.append(c)
            i += 1
        out.append((m.group(1), m.group(2) or "", m.group(3) or "", m.group(4), decl.group(1), " ".join("".join(ty).split())))
    return out


def resolve(module, rust_type):
    """Full dotted name of a message type referenced from `module`."""
    t = re.sub(r"::core::option::Option<|::prost::alloc::vec::Vec<|::prost::alloc::boxed::Box<|::prost::alloc::collections::BTreeMap<|>", "", rust_type).strip()
    t = [p for p in t.split(",") if p.strip()][-1].strip()  # a map's value type
    parts = t.split("::")
    base = module.split(".")
    while parts and parts[0] == "super":
        parts.pop(0)
        base.pop()
    return ".".join(base + parts)


def main():
    names = openapi_names()
    messages = {}
    for path in glob.glob(f"{PB}/**/mod.rs", recursive=True):
        module = os.path.relpath(os.path.dirname(path), PB).replace(os.sep, ".")
        src = open(path).read().replace(" {}\n", " {\n}\n")
        for m in re.finditer(r"pub struct (\w+) \{(.*?)\n\}", src, re.S):
            struct, body = m.group(1), m.group(2)
            json_names = names.get((module, struct), {})
            fields = []
            for kind, arg, label, tag, fname, ftype in fields_of(body):
                f = norm(fname)
                jname = json_names.get(f, camel(f))
                entry = [int(tag), jname, "map" if kind == "btree_map" else kind, label or "optional"]
                if kind == "message":
                    entry.append(resolve(module, ftype))
                elif kind == "btree_map":
                    value = arg.split(",")[1].strip()
                    entry.append(resolve(module, ftype) if value == "message" else value)
                fields.append(entry)
            messages[f"{module}.{struct}"] = sorted(fields)
    with open(OUT, "w") as f:
        json.dump({"source": "k8s-pb 0.9 + k8s-openapi 0.29 (v1_33)", "messages": messages}, f, separators=(",", ":"), sort_keys=True)
    print(f"{len(messages)} messages written to {OUT}", file=sys.stderr)


main()
