"""One API operation, attempted until it succeeds, fails for good, or runs out of retries.

Mirrors lib/client/transport.ts and retry.ts: a per-attempt timeout, typed errors, and retries
only where repeating the request is safe (``Safety``), with full-jitter backoff and Retry-After.
The same bytes (and so the same Idempotency-Key header) go out on every attempt.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Literal, Mapping

from .errors import LineageError, NetworkError, OutcomeUnknownError, error_from_response

#: ``repeatable``: a repeat cannot apply it twice (reads, deletes, keyed appends and creates, a rotation,
#: a commit, which replays its first outcome): retried after network errors, timeouts and any 5xx.
#: ``once``: a repeat could apply it twice (pop, in-place compress, a begin): retried only after the
#: service's own 503 or 429 (which say nothing was applied) or a refused connection.
Safety = Literal["repeatable", "once"]

USER_AGENT = "session-lineage-python/0.1.0"


@dataclass(frozen=True)
class RetryPolicy:
    #: Attempts in all, the first included (``max_retries + 1``).
    max_attempts: int = 4
    #: First backoff ceiling, doubled per retry up to max_delay_s; each wait is drawn uniformly below it.
    base_delay_s: float = 0.1
    max_delay_s: float = 2.0
    #: A Retry-After longer than this is not waited out: the error (with retry_after_s) goes to the caller.
    max_retry_after_s: float = 10.0

    def delay_s(self, retry: int, retry_after_s: float | None, rnd: Callable[[], float] = random.random) -> float | None:
        jitter: float = rnd()
        """The wait before retry number ``retry`` (1 for the first); None means do not retry."""
        if retry_after_s is not None:
            if retry_after_s > self.max_retry_after_s:
                return None
            # Up to one base delay of jitter, so a crowd told "2 s" does not come back in step.
            return float(retry_after_s + jitter * self.base_delay_s)
        return float(jitter * min(self.max_delay_s, self.base_delay_s * 2 ** (retry - 1)))


@dataclass(frozen=True)
class Response:
    status: int
    body: Any
    headers: Mapping[str, str]
    attempts: int


class Transport:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout_s: float,
        policy: RetryPolicy,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not base_url:
            raise ValueError("base_url is required")
        if not api_key:
            raise ValueError("api_key is required")
        if timeout_s <= 0:
            raise ValueError("timeout_s must be > 0")
        if policy.max_attempts < 1:
            raise ValueError("max_retries must be >= 0")
        self.base_url = base_url.rstrip("/")
        self._auth = f"Bearer {api_key}"
        self.timeout_s = timeout_s
        self.policy = policy
        self._sleep = sleep
        self._opener = urllib.request.build_opener()

    def request(
        self,
        method: str,
        path: str,
        *,
        safety: Safety,
        query: Mapping[str, str | int | None] | None = None,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Response:
        url = self.base_url + path
        q = {k: str(v) for k, v in (query or {}).items() if v is not None}
        if q:
            url += "?" + urllib.parse.urlencode(q)
        all_headers = {"authorization": self._auth, "accept": "application/json", "user-agent": USER_AGENT, **(headers or {})}
        if body is not None:
            all_headers.setdefault("content-type", "application/json")
        may_have_applied = False
        n = 0
        while True:
            n += 1
            outcome = self._once(method, url, body, all_headers)
            if isinstance(outcome, Response):
                return Response(outcome.status, outcome.body, outcome.headers, n)
            failure = outcome
            retry, applied = _classify(failure, safety)
            earlier = may_have_applied
            may_have_applied = may_have_applied or applied
            delay = self.policy.delay_s(n, _retry_after(failure)) if retry and n < self.policy.max_attempts else None
            if delay is None:
                raise self._final(failure, n, safety, may_have_applied, earlier)
            self._sleep(delay)

    def _final(self, failure: LineageError, n: int, safety: Safety, may_have_applied: bool, earlier: bool) -> LineageError:
        final = failure
        if isinstance(failure, NetworkError):
            tries = f" (after {n} attempt{'s' if n > 1 else ''})"
            if safety == "once" and may_have_applied:
                final = OutcomeUnknownError(f"{failure.message}{tries}: the request may have been applied", code="outcome_unknown")
            else:
                final = NetworkError(failure.message + tries, timed_out=failure.timed_out, may_have_applied=may_have_applied)
            final.__cause__ = failure.__cause__
        final.earlier_attempt_may_have_applied = earlier
        return final

    def _once(self, method: str, url: str, body: bytes | None, headers: Mapping[str, str]) -> Response | LineageError:
        req = urllib.request.Request(url, data=body, method=method, headers=dict(headers))
        try:
            with self._opener.open(req, timeout=self.timeout_s) as r:
                raw = r.read()
                hdrs = {k.lower(): v for k, v in r.headers.items()}
                status = r.status
        except urllib.error.HTTPError as e:
            try:
                raw = e.read()
            except (OSError, http.client.HTTPException):
                raw = b""
            hdrs = {k.lower(): v for k, v in (e.headers or {}).items()}
            return error_from_response(e.code, _decode(raw), hdrs)
        except (TimeoutError, socket.timeout) as e:
            return _network(f"no response within {self.timeout_s} s", e, timed_out=True, applied=True)
        except urllib.error.URLError as e:
            if isinstance(e.reason, (TimeoutError, socket.timeout)):
                return _network(f"no response within {self.timeout_s} s", e, timed_out=True, applied=True)
            # Connection refused: the request never left, so even a `once` request may be sent again.
            refused = isinstance(e.reason, ConnectionRefusedError)
            return _network(f"request failed: {e.reason}", e, timed_out=False, applied=not refused)
        except (OSError, http.client.HTTPException) as e:
            refused = isinstance(e, ConnectionRefusedError)
            return _network(f"request failed: {type(e).__name__}: {e}", e, timed_out=False, applied=not refused)
        if not raw:
            return Response(status, None, hdrs, 1)
        if hdrs.get("content-type", "").startswith("application/x-ndjson"):
            return Response(status, raw.decode("utf-8"), hdrs, 1)  # SPEC H5's export: JSON Lines, as text
        try:
            return Response(status, json.loads(raw), hdrs, 1)
        except ValueError as e:
            err = LineageError(f"HTTP {status}: the response is not JSON: {e}", status=status, body=raw[:200].decode("utf-8", "replace"))
            err.__cause__ = e
            return err


def _network(message: str, cause: BaseException, *, timed_out: bool, applied: bool) -> NetworkError:
    err = NetworkError(message, timed_out=timed_out, may_have_applied=applied)
    err.__cause__ = cause
    return err


def _decode(raw: bytes) -> Any:
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _classify(failure: LineageError, safety: Safety) -> tuple[bool, bool]:
    """(retry, may_have_applied) for one failed attempt."""
    if isinstance(failure, NetworkError):
        return safety == "repeatable" or not failure.may_have_applied, failure.may_have_applied
    status = failure.status or 0
    # 429 (a tenant limit, or the stage throttle) is refused before anything runs: nothing was applied.
    if status == 429:
        return True, False
    if status >= 500:
        # The service's own 503 is decided before anything is written (but outcome_unknown: a write the
        # store did not confirm); any other 5xx (a crash, a gateway timeout) may come after a commit.
        if status == 503 and failure.from_service and failure.code != "outcome_unknown":
            return True, False
        return safety == "repeatable", True
    return False, False


def _retry_after(failure: LineageError) -> float | None:
    v = getattr(failure, "retry_after_s", None)
    return v if isinstance(v, (int, float)) and failure.status in (429, 503) else None


def encode_json(value: Any, what: str) -> bytes:
    """The request body's bytes, computed once so every retry sends the same ones. NaN, infinities and
    values JSON cannot carry are refused before anything is sent."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what} is not JSON the service can store and return as it is: {e}") from e
