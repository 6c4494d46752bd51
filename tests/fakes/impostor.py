"""A server of another process on a port, answering 200 with ``{"status": "ok"}``
to every GET, like a gateway's /healthz would: readiness checks must not be
fooled by it."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _Answers200(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"status": "ok"}')

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def impostor_server() -> Iterator[int]:
    """Serve on a free loopback port (yielded) until the block ends."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answers200)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
