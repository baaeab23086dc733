"""A local HTTP proxy in front of the service that can drop or replace answers (test support).

Faults the real service cannot be made to produce on demand: a response lost after the request
was applied (the proxy forwards the request, reads the answer, and closes the connection without
sending it), or an answer that never reached the service (a 503/429 the proxy makes up). Every
request is recorded with its headers and body bytes, so tests can compare retries byte for byte.
"""

from __future__ import annotations

import http.client
import re
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    #: What the proxy did: forwarded, dropped (forwarded, answer lost), or answered (made up, not forwarded).
    action: str = "forwarded"


@dataclass
class Rule:
    method: str
    path: re.Pattern[str]
    #: "drop": forward, then lose the answer; "answer": reply with status/body/headers without forwarding.
    action: str
    times: int = 1
    status: int = 503
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        u = urllib.parse.urlsplit(upstream)
        self.upstream_host = u.hostname or "127.0.0.1"
        self.upstream_port = u.port or 80
        self.seen: list[Seen] = []
        self._rules: list[Rule] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                proxy._serve(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def drop(self, method: str, path: str, times: int = 1) -> None:
        """The next `times` matching requests reach the service; their answers are lost."""
        self._add(Rule(method, re.compile(path), "drop", times))

    def answer(self, method: str, path: str, status: int, body: bytes = b"", headers: dict[str, str] | None = None, times: int = 1) -> None:
        """The next `times` matching requests are answered here and never reach the service."""
        self._add(Rule(method, re.compile(path), "answer", times, status, body, headers or {}))

    def requests(self, method: str, path: str) -> list[Seen]:
        p = re.compile(path)
        with self._lock:
            return [s for s in self.seen if s.method == method and p.search(s.path)]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _add(self, rule: Rule) -> None:
        with self._lock:
            self._rules.append(rule)

    def _take(self, method: str, path: str) -> Rule | None:
        with self._lock:
            for r in self._rules:
                if r.method == method and r.path.search(path) and r.times > 0:
                    r.times -= 1
                    return r
        return None

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("content-length") or 0)
        body = h.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in h.headers.items()}
        rule = self._take(h.command, h.path)
        seen = Seen(h.command, h.path, headers, body, "forwarded" if rule is None else ("dropped" if rule.action == "drop" else "answered"))
        with self._lock:
            self.seen.append(seen)
        h.close_connection = True
        if rule is not None and rule.action == "answer":
            h.send_response(rule.status)
            for k, v in {"content-type": "application/json", **rule.headers}.items():
                h.send_header(k, v)
            h.send_header("content-length", str(len(rule.body)))
            h.end_headers()
            h.wfile.write(rule.body)
            return
        conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=60)
        try:
            fwd = {k: v for k, v in headers.items() if k not in ("host", "connection", "content-length")}
            conn.request(h.command, h.path, body=body if length else None, headers=fwd)
            r = conn.getresponse()
            data = r.read()
            if rule is not None:  # drop: applied upstream, the answer never arrives
                return
            h.send_response(r.status)
            for k, v in r.getheaders():
                if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                    h.send_header(k, v)
            h.send_header("content-length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        finally:
            conn.close()
