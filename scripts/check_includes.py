#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The include graph of src/: fails on a cycle or on a forbidden arrow.

A module is a file without its extension (src/server/request.c and request.h are the module
server/request); an arrow A -> B means a file of A has `#include "B.h"`. Quoted includes resolve
against src/ (like the build's -Isrc), then the including file's directory; the public headers
in include/ (roost/...) depend on nothing in src/ and are left out.

Rules (the target graph of doc/internals.md):
  * no cycle among modules (src/server has none; the older cycles outside it are listed in
    KNOWN_CYCLES with their issue, and an entry that no longer matches a cycle fails as stale);
  * src/common includes only src/common; src/store nothing of server, sdk, cli; src/proto nothing
    of server, store, sdk, cli; src/sdk nothing of server, store, cli; src/cli nothing of server,
    store;
  * the leaves of src/server (sse_hub, workers, waiters, metrics) never include the daemon, the
    runtime context, the request, the router, the listener or the handlers (api, api_*): they take
    what they need as arguments.

Usage: check_includes.py [--root DIR]   (default: the checkout this script is in)
       check_includes.py --self-test    (proves each rule fails on a small tree with a violation)
Exit status 0 when the graph is clean, 1 otherwise.
"""
import os
import re
import sys
import tempfile

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')

# Directory (first path component under src/) -> directories it must not include.
FORBIDDEN_DIRS = {
    "store": {"server", "sdk", "cli"},
    "proto": {"server", "store", "sdk", "cli"},
    "sdk": {"server", "store", "cli"},
    "cli": {"server", "store"},
}
# src/common may include only src/common (checked separately: "anything but common").
SERVER_LEAVES = {"server/sse_hub", "server/workers", "server/waiters", "server/metrics"}
SERVER_WIRING = {"server/daemon", "server/runtime", "server/request", "server/router",
                 "server/listener", "server/api"}


# Cycles allowed for now, each to be broken under its issue. A cycle must match an entry exactly:
# one that grows, shrinks or disappears fails the check.
KNOWN_CYCLES = [
    # None today. An entry is ({"dir/module", ...}, "issue N") and must match its cycle exactly.
]


def is_wiring(module):
    return module in SERVER_WIRING or module.startswith("server/api_")


def scan(root):
    """Returns (edges, problems): edges maps module -> {module: (file, line)}."""
    src = os.path.join(root, "src")
    edges = {}
    problems = []
    for dirpath, _dirs, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src)
            module = os.path.splitext(rel)[0].replace(os.sep, "/")
            out = edges.setdefault(module, {})
            with open(path, encoding="utf-8", errors="replace") as f:
                for lineno, text in enumerate(f, 1):
                    m = INCLUDE_RE.match(text)
                    if not m:
                        continue
                    target = m.group(1)
                    where = "src/%s:%d" % (rel.replace(os.sep, "/"), lineno)
                    if os.path.isfile(os.path.join(src, target)):
                        dep = os.path.splitext(os.path.normpath(target))[0]
                    elif os.path.isfile(os.path.join(dirpath, target)):
                        dep = os.path.relpath(os.path.join(dirpath, target), src)
                        dep = os.path.splitext(dep)[0]
                    elif os.path.isfile(os.path.join(root, "include", target)):
                        continue  # public SDK header: no arrow into src/
                    else:
                        problems.append('%s: cannot resolve #include "%s"' % (where, target))
                        continue
                    dep = dep.replace(os.sep, "/")
                    if dep != module and dep not in out:
                        out[dep] = where
    return edges, problems


def forbidden(edges):
    problems = []
    for module, deps in sorted(edges.items()):
        top = module.split("/", 1)[0]
        for dep, where in sorted(deps.items()):
            dep_top = dep.split("/", 1)[0]
            why = None
            if top == "common" and dep_top != "common":
                why = "src/common includes only src/common"
            elif dep_top in FORBIDDEN_DIRS.get(top, ()):
                why = "src/%s must not include src/%s" % (top, dep_top)
            elif module in SERVER_LEAVES and is_wiring(dep):
                why = "a leaf of src/server takes what it needs as arguments"
            if why:
                problems.append("%s: %s -> %s: %s" % (where, module, dep, why))
    return problems


def cycles(edges, known):
    """Tarjan's strongly connected components; every component of two or more is a cycle."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        # Iterative, so a deep graph cannot hit the recursion limit.
        work = [(v, iter(sorted(edges.get(v, {}))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                    advanced = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    problems = []
    matched = set()
    for comp in found:
        members = set(comp)
        allowed = [i for i, (cycle, _issue) in enumerate(known) if cycle == members]
        if allowed:
            matched.add(allowed[0])
            print("known include cycle (%s): %s" % (known[allowed[0]][1], ", ".join(comp)))
            continue
        arrows = ["%s -> %s (%s)" % (a, b, edges[a][b])
                  for a in comp for b in sorted(edges.get(a, {})) if b in members]
        problems.append("include cycle among %s:\n    %s" % (", ".join(comp),
                                                           "\n    ".join(arrows)))
    for i, (cycle, issue) in enumerate(known):
        if i not in matched:
            problems.append("stale KNOWN_CYCLES entry (%s): %s is no longer a cycle; remove it"
                            % (issue, ", ".join(sorted(cycle))))
    return problems


def check(root, known):
    edges, problems = scan(root)
    return problems + forbidden(edges) + cycles(edges, known)


def self_test():
    """Each rule on a tiny tree: a clean one passes, each violation is reported."""
    cases = [
        ("clean", {"server/a.c": ["server/a.h", "server/b.h"], "server/a.h": [],
                   "server/b.c": ["server/b.h", "common/c.h"], "server/b.h": [],
                   "common/c.h": []}, None),
        ("cycle", {"server/a.c": ["server/a.h", "server/b.h"], "server/a.h": [],
                   "server/b.c": ["server/b.h", "server/a.h"], "server/b.h": []}, "include cycle"),
        ("header cycle", {"server/a.h": ["server/b.h"], "server/b.h": ["server/a.h"]},
         "include cycle"),
        ("common", {"common/c.c": ["server/x.h"], "server/x.h": []},
         "src/common includes only src/common"),
        ("store", {"store/s.c": ["sdk/x.h"], "sdk/x.h": []}, "src/store must not include"),
        ("proto", {"proto/p.c": ["store/x.h"], "store/x.h": []}, "src/proto must not include"),
        ("sdk", {"sdk/s.c": ["server/x.h"], "server/x.h": []}, "src/sdk must not include"),
        ("cli", {"cli/c.c": ["store/x.h"], "store/x.h": []}, "src/cli must not include"),
        ("leaf", {"server/sse_hub.c": ["server/request.h"], "server/request.h": []},
         "a leaf of src/server"),
        ("leaf api", {"server/workers.c": ["server/api_json.h"], "server/api_json.h": []},
         "a leaf of src/server"),
        ("unresolved", {"server/a.c": ["server/missing.h"]}, "cannot resolve"),
        ("known cycle", {"store/a.c": ["store/b.h"], "store/b.h": ["store/a.h"], "store/a.h": []},
         None, [({"store/a", "store/b"}, "issue 0")]),
        ("grown cycle", {"store/a.c": ["store/b.h"], "store/b.h": ["store/c.h"],
                         "store/c.h": ["store/a.h"], "store/a.h": []},
         "include cycle", [({"store/a", "store/b"}, "issue 0")]),
        ("stale allowance", {"store/a.c": ["store/b.h"], "store/b.h": []},
         "stale KNOWN_CYCLES entry", [({"store/a", "store/b"}, "issue 0")]),
    ]
    passed = failed = 0
    for case in cases:
        name, files, expect = case[:3]
        known = case[3] if len(case) > 3 else []
        with tempfile.TemporaryDirectory() as root:
            for path, includes in files.items():
                full = os.path.join(root, "src", path)
                os.makedirs(os.path.dirname(full), exist_ok=True)
                with open(full, "w") as f:
                    f.write("".join('#include "%s"\n' % i for i in includes))
            problems = check(root, known)
        text = "\n".join(problems)
        ok = (not problems) if expect is None else (expect in text)
        if ok:
            passed += 1
        else:
            failed += 1
            print("FAIL self-test %s: expected %s, got:\n%s" % (name, expect or "no problem",
                                                              text or "(nothing)"))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


def main(argv):
    if "--self-test" in argv:
        return self_test()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if "--root" in argv:
        root = argv[argv.index("--root") + 1]
    problems = check(root, KNOWN_CYCLES)
    for p in problems:
        print(p)
    if problems:
        print("include graph: %d problem(s)" % len(problems))
        return 1
    print("include graph: clean (no cycle beyond KNOWN_CYCLES, no forbidden arrow)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
