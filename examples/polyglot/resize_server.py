#!/usr/bin/env python3
"""An `http` handler: a local service leasehold POSTs each attempt to.

Usage: python3 resize_server.py [PORT]   (0 picks a free port; the port is printed first)

The request body is the attempt as JSON (docs/HANDLERS.md), with an Idempotency-Key
header; the response body is the outcome. Results are remembered per key, so a retried
attempt gets the first answer.
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

done = {}
lock = threading.Lock()


class Resize(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: leasehold reuses connections

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        attempt = json.loads(body)
        key = self.headers.get("Idempotency-Key", attempt["idempotencyKey"])
        payload = attempt.get("payload") or {}
        width = payload.get("width")
        if not isinstance(width, int) or width <= 0:
            answer = {"fail": {"code": "BAD_WIDTH", "message": f"width {width!r}"}}
        else:
            with lock:
                if key not in done:
                    done[key] = {"image": payload.get("image"), "width": width, "thumb": f"{key}.png"}
                answer = {"ok": done[key]}
        out = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8089
    server = ThreadingHTTPServer(("127.0.0.1", port), Resize)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
