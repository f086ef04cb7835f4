# SPDX-License-Identifier: MIT
"""A roostd of their own for the benchmark scripts (bench_fairness.py, bench_big_publish.py).

start() runs roostd on a fresh temp data dir (SQLite at store.synchronous=normal, or the --store
URL given), waits for its ready file and returns where it listens; stop() ends it with SIGTERM;
cleanup() removes the dir unless ROOST_BENCH_KEEP is set. call() is one JSON request.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace


def call(c, method, path, token=None, body=None):
    """(status, raw body) of one request on the http.client connection c."""
    headers = {}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    c.request(method, path, body=data, headers=headers)
    r = c.getresponse()
    return r.status, r.read()


def start(roostd, prefix, store=None, sets=(), wait_s=60):
    """roostd with --set for each of sets; .dir, .data, .log_path, .proc and .port."""
    d = tempfile.mkdtemp(prefix=prefix)
    r = SimpleNamespace(dir=d, data=os.path.join(d, "data"),
                        log_path=os.path.join(d, "roostd.log"))
    ready = os.path.join(d, "ready")
    args = [roostd, "--data-dir", r.data, "--listen", "127.0.0.1:0", "--ready-file", ready,
            "--set", "store.synchronous=normal"]
    if store:
        args += ["--store", store]
    for s in sets:
        args += ["--set", s]
    r.log = open(r.log_path, "w")
    r.proc = subprocess.Popen(args, stdout=r.log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + wait_s
    while not (os.path.exists(ready) and os.path.getsize(ready) > 0):
        if r.proc.poll() is not None or time.monotonic() > deadline:
            stop(r)
            sys.exit("roostd did not start: " + open(r.log_path).read())
        time.sleep(0.01)
    r.port = int(open(ready).readline().strip().rsplit(":", 1)[1])
    return r


def mint(roost, r, tenant, scope):
    """A token of tenant with scope, minted with roostd's key in r's data dir."""
    return subprocess.check_output(
        [roost, "token", "mint", "--data-dir", r.data, "--tenant", tenant, "--scope", scope],
        text=True).strip()


def stop(r, wait_s=120):
    if r.proc.poll() is None:
        r.proc.send_signal(signal.SIGTERM)
        r.proc.wait(wait_s)
    r.log.close()


def cleanup(r):
    if not os.environ.get("ROOST_BENCH_KEEP"):
        shutil.rmtree(r.dir, ignore_errors=True)
