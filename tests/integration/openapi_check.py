#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""doc/openapi.json against roostd's route declaration (src/server/routes.c), both ways.

The declaration comes from `roostd --print-routes`. Every declared route must be described with
the same method, path, path parameters, query parameters (names, types, bounds, enumerations,
required, configuration key of a maximum), body fields (the same, "acks[].event_id" for the
fields of an array's items), body rule, scope, signature policy and store job kind; HEAD only
where the route serves it; and the document must describe nothing else. The error codes of the
document (the Error schema's enumeration and components.x-roost-errors) must be exactly those of
include/roost/roost_error.h, with their statuses.

Usage: openapi_check.py ROOSTD DOC ERROR_H     (exit 0 when they agree, 1 with the differences)
       openapi_check.py --self-test ROOSTD DOC ERROR_H   (each kind of drift is caught)
"""
import copy
import json
import re
import subprocess
import sys

METHODS = ("get", "post", "delete", "put", "patch", "head", "options", "trace")


def resolve(doc, node):
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), ref
        node = doc
        for part in ref[2:].split("/"):
            node = node[part]
    return node


def bounds_of(schema):
    """The declaration's view of one schema: (type, min, max, enum, max_config)."""
    t = schema.get("type")
    if isinstance(t, list):
        t = [x for x in t if x != "null"][0]
    lo = hi = None
    if t == "integer":
        lo, hi = schema.get("minimum"), schema.get("maximum")
    elif t == "string" and schema.get("format") == "date-time":
        t, hi = "date-time", schema.get("maxLength")
    elif t == "string":
        lo, hi = schema.get("minLength"), schema.get("maxLength")
    elif t == "array":
        lo, hi = schema.get("minItems"), schema.get("maxItems")
    elif t is None:
        t = "any"
    return (t, lo, hi, tuple(schema.get("enum", ())), schema.get("x-roost-max-config"))


def declared_bounds(p):
    t = p["type"]
    lo = p.get("min") if t in ("integer", "string", "array") else None
    hi = p.get("max") if t not in ("object", "any") else None
    return (t, lo, hi, tuple(p.get("enum", ())), p.get("max_config"))


def body_fields(doc, schema, prefix=""):
    """{field: (bounds, required)} of a request body schema. oneOf alternatives are merged; a
    field is required when the alternative that has it requires it."""
    schema = resolve(doc, schema)
    out = {}
    for alt in schema.get("oneOf", []):
        out.update(body_fields(doc, alt, prefix))
    required = set(schema.get("required", ()))
    for name, sub in schema.get("properties", {}).items():
        sub = resolve(doc, sub)
        key = prefix + name
        out[key] = (bounds_of(sub), name in required)
        # Fields of an array's inline item objects are "name[].field"; items given by $ref (the
        # events of a publish batch) are described where that schema is (a oneOf alternative).
        items = sub.get("items", {})
        if sub.get("type") == "array" and "$ref" not in items and "properties" in items:
            out.update(body_fields(doc, items, key + "[]."))
    return out


def compare(routes, doc, error_h):
    problems = []
    seen = set()
    for r in routes:
        path, method = r["path"], r["method"].lower()
        where = "%s %s" % (r["method"], path)
        item = doc.get("paths", {}).get(path)
        op = item.get(method) if item else None
        if op is None:
            problems.append("%s: declared, not in the document" % where)
            continue
        seen.add((path, method))
        ops = [(method, op)]
        if r["head"]:
            if "head" not in item:
                problems.append("%s: serves HEAD, the document has no head operation" % where)
            else:
                seen.add((path, "head"))
                ops.append(("head", item["head"]))
        for m, o in ops:
            w = "%s %s" % (m.upper(), path)
            if o.get("x-roost-route") != r["name"]:
                problems.append("%s: x-roost-route %r, declared %r" % (w, o.get("x-roost-route"), r["name"]))
            if o.get("x-roost-job") != r["job"]:
                problems.append("%s: x-roost-job %r, declared %r" % (w, o.get("x-roost-job"), r["job"]))
            if o.get("x-roost-signature") != r["signature"]:
                problems.append("%s: x-roost-signature %r, declared %r" % (w, o.get("x-roost-signature"), r["signature"]))
            if o.get("x-roost-scope") != r["scope"]:
                problems.append("%s: x-roost-scope %r, declared %r" % (w, o.get("x-roost-scope"), r["scope"]))
            sec = o.get("security", doc.get("security"))
            open_route = sec == [] or {} in (sec or [])
            if open_route != (r["auth"] == "none"):
                problems.append("%s: security %r, declared auth %s" % (w, sec, r["auth"]))
            params = [resolve(doc, p) for p in o.get("parameters", [])]
            want_path = set(re.findall(r"\{(\w+)\}", path))
            got_path = {p["name"] for p in params if p["in"] == "path"}
            if want_path != got_path:
                problems.append("%s: path parameters %s, the pattern has %s" % (w, sorted(got_path), sorted(want_path)))
            got_q = {p["name"]: p for p in params if p["in"] == "query"}
            want_q = {p["name"]: p for p in r["params"] if p["in"] == "query"}
            for name in sorted(set(got_q) | set(want_q)):
                if name not in want_q:
                    problems.append("%s: query parameter %s is not declared" % (w, name))
                elif name not in got_q:
                    problems.append("%s: declared query parameter %s is not described" % (w, name))
                else:
                    g, d = bounds_of(got_q[name].get("schema", {})), declared_bounds(want_q[name])
                    if g != d:
                        problems.append("%s: query %s is %r, declared %r" % (w, name, g, d))
                    if bool(got_q[name].get("required")) != want_q[name]["required"]:
                        problems.append("%s: query %s required differs" % (w, name))
            if m == "head":
                continue
            rb = o.get("requestBody")
            if r["body"] == "none" and o.get("x-roost-body") != "handler":
                if rb is not None:
                    problems.append("%s: a request body is described, the route takes none" % w)
                continue
            if rb is None:
                problems.append("%s: the route takes a body (%s), none is described" % (w, r["body"]))
                continue
            if r["body"] != "none" and bool(rb.get("required")) != (r["body"] == "required"):
                problems.append("%s: requestBody.required %r, declared body %s" % (w, rb.get("required"), r["body"]))
            if o.get("x-roost-body") == "handler":
                continue
            schema = rb.get("content", {}).get("application/json", {}).get("schema")
            if schema is None:
                problems.append("%s: the body is not described as application/json" % w)
                continue
            got_b = body_fields(doc, schema)
            want_b = {p["name"]: p for p in r["params"] if p["in"] == "body"}
            for name in sorted(set(got_b) | set(want_b)):
                if name not in want_b:
                    problems.append("%s: body field %s is not declared" % (w, name))
                elif name not in got_b:
                    problems.append("%s: declared body field %s is not described" % (w, name))
                else:
                    g, d = got_b[name][0], declared_bounds(want_b[name])
                    if g != d:
                        problems.append("%s: body %s is %r, declared %r" % (w, name, g, d))
                    if got_b[name][1] != want_b[name]["required"]:
                        problems.append("%s: body %s required %r, declared %r" % (w, name, got_b[name][1], want_b[name]["required"]))
    for path, item in sorted(doc.get("paths", {}).items()):
        for m in METHODS:
            if m in item and (path, m) not in seen:
                problems.append("%s %s: in the document, not declared" % (m.upper(), path))
    # Error codes: the document's list is the table's.
    table = {}
    for m in re.finditer(r'X\((E\w+),\s*(\d+),\s*"([a-z_0-9]+)"', open(error_h).read()):
        table.setdefault(m.group(3), set()).add(int(m.group(2)))
    enum = set(resolve(doc, {"$ref": "#/components/schemas/Error"})["properties"]["error"]["properties"]["code"].get("enum", []))
    if enum != set(table):
        problems.append("Error.code enum: missing %s, extra %s" % (sorted(set(table) - enum), sorted(enum - set(table))))
    listed = {}
    for e in doc.get("components", {}).get("x-roost-errors", []):
        listed.setdefault(e["code"], set()).add(e["status"])
    if listed != table:
        diff = sorted(k for k in set(listed) | set(table) if listed.get(k) != table.get(k))
        problems.append("components.x-roost-errors differs from roost_error.h for %s" % diff)
    return problems


def self_test(routes, doc, error_h):
    """Each kind of drift, made on a copy, must be reported."""
    def first_op(d, path, m):
        return d["paths"][path][m]
    cases = []
    d = copy.deepcopy(doc)
    d["paths"]["/api/v1/agents/{agent}/inbox"]["get"]["parameters"] = [
        p for p in d["paths"]["/api/v1/agents/{agent}/inbox"]["get"]["parameters"] if p.get("name") != "limit"]
    cases.append(("a query parameter left out", d))
    d = copy.deepcopy(doc)
    for p in first_op(d, "/api/v1/agents/{agent}/inbox", "get")["parameters"]:
        if p.get("name") == "limit":
            p["schema"]["maximum"] += 1
    cases.append(("a query bound changed", d))
    d = copy.deepcopy(doc)
    first_op(d, "/api/v1/agents/{agent}/inbox/claim", "post")["requestBody"]["content"]["application/json"]["schema"]["properties"]["extra"] = {"type": "string"}
    cases.append(("an undeclared body field", d))
    d = copy.deepcopy(doc)
    d["paths"]["/api/v1/nowhere"] = {"get": {"responses": {"200": {"description": "x"}}}}
    cases.append(("an undeclared route", d))
    d = copy.deepcopy(doc)
    del d["paths"]["/healthz"]["head"]
    cases.append(("a HEAD route without its head operation", d))
    d = copy.deepcopy(doc)
    first_op(d, "/api/v1/admin/stats", "get")["x-roost-scope"] = "agent:{agent}:read"
    cases.append(("a scope changed", d))
    d = copy.deepcopy(doc)
    d["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"].pop()
    cases.append(("an error code left out", d))
    r2 = copy.deepcopy(routes)
    r2[0]["params"] = [p for p in r2[0]["params"] if p["name"] != "priority"]
    failures = 0
    for what, d in cases:
        if not compare(routes, d, error_h):
            print("self-test: not caught: %s" % what)
            failures += 1
    if not compare(r2, doc, error_h):
        print("self-test: not caught: a described body field the declaration lacks")
        failures += 1
    if compare(routes, doc, error_h):
        print("self-test: the real document does not pass")
        failures += 1
    print("%d passed, %d failed" % (len(cases) + 2 - failures, failures))
    return 1 if failures else 0


def main(argv):
    selftest = len(argv) > 1 and argv[1] == "--self-test"
    args = argv[2:] if selftest else argv[1:]
    if len(args) != 3:
        print(__doc__)
        return 2
    roostd, doc_path, error_h = args
    routes = json.loads(subprocess.check_output([roostd, "--print-routes"]))
    with open(doc_path, encoding="utf-8") as f:
        doc = json.load(f)
    if selftest:
        return self_test(routes, doc, error_h)
    problems = compare(routes, doc, error_h)
    for p in problems:
        print(p)
    ops = sum(1 for item in doc["paths"].values() for m in METHODS if m in item)
    print("openapi_check: %d declared routes, %d operations, %d differences" % (len(routes), ops, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
