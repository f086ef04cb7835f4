# SPDX-License-Identifier: MIT
"""A producer publishing inside a web request (stdlib http.server, no framework).

``POST /orders`` with a JSON body publishes one event to the ``fulfilment`` agent. The
idempotency key comes from the client's ``Idempotency-Key`` header when it sends one, so a
browser retrying the form never makes a second event; roost.Client retries 503/429 and
connection errors with the same key by itself.

    ROOST_TOKEN=... python examples/python/web_producer.py --port 8000
    curl -X POST localhost:8000/orders -H 'Idempotency-Key: o-42' -d '{"sku":"x"}'
"""

from __future__ import annotations

import argparse
import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import roost

client = roost.Client(token=os.environ.get("ROOST_TOKEN"), signing_key=roost.SigningKey.from_env())


class Orders(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        if self.path != "/orders":
            self.send_error(404)
            return
        try:
            order = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            result = client.publish("fulfilment", {"order": order},
                                    idempotency_key=self.headers.get("Idempotency-Key"))
        except ValueError:
            self.send_error(400, "the body must be JSON")
            return
        except roost.RoostError as e:
            self.send_error(502, f"roost: {e.code}")
            return
        body = json.dumps({"event_id": result.events[0].event_id,
                           "duplicate": result.duplicate}).encode()
        self.send_response(200 if result.duplicate else 201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8000)
    a = ap.parse_args()
    ThreadingHTTPServer(("127.0.0.1", a.port), Orders).serve_forever()


if __name__ == "__main__":
    main()
