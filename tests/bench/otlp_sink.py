"""An OTLP/HTTP trace receiver for measuring what traces cost (common/docs/traces.md):
accepts `POST /v1/traces` (protobuf `ExportTraceServiceRequest`), answers an empty
response, and counts the requests, their bytes and the spans in them; `GET /stats` gives
the counts as JSON. Not a collector: it keeps nothing.

    python3 tests/bench/otlp_sink.py 4318 &
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 <the server under the bench>
    curl -s http://127.0.0.1:4318/stats

Standard library only: the spans are counted by walking the protobuf's length-delimited
fields (resource_spans = 1, scope_spans = 2, spans = 2).
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COUNTS = {"requests": 0, "bytes": 0, "spans": 0}
LOCK = threading.Lock()


def varint(data: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def fields(data: bytes):
    """(field number, bytes) of each length-delimited field; other wire types skipped."""
    i = 0
    while i < len(data):
        key, i = varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, i = varint(data, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            n, i = varint(data, i)
            yield number, data[i:i + n]
            i += n
        else:
            raise ValueError(f"wire type {wire}")


def spans_in(request: bytes) -> int:
    count = 0
    for n, resource_spans in fields(request):
        if n != 1:
            continue
        for m, scope_spans in fields(resource_spans):
            if m != 2:
                continue
            count += sum(1 for k, _ in fields(scope_spans) if k == 2)
    return count


class Sink(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        spans = spans_in(body) if self.path == "/v1/traces" else 0
        with LOCK:
            COUNTS["requests"] += 1
            COUNTS["bytes"] += len(body)
            COUNTS["spans"] += spans
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        with LOCK:
            answer = json.dumps(COUNTS).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
