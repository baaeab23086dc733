"""Typed errors, mirroring the TypeScript client (lib/client/errors.ts).

Every error response of the service is ``{"error": {"code", "message", "requestId"}, ...details}``
(SPEC F1); one class per thing a caller handles differently, each with the status, the API's
code, the request id and whether a later retry may succeed.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any, Mapping


class LineageError(Exception):
    """Base of everything the client raises on purpose.

    ``status`` is the HTTP status (``None`` when there was no response), ``code`` the API's
    error code (``unexpected_response`` for a body that is not the API's JSON, ``network_error``
    when nothing answered), ``request_id`` the service's request id, ``retryable`` whether the
    same request may succeed later (it was refused before anything was applied, or it is safe
    to repeat).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str = "unexpected_response",
        request_id: str | None = None,
        retryable: bool = False,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.request_id = request_id
        self.retryable = retryable
        self.body = body
        #: The Idempotency-Key of the append or create that failed: retry with it later and it still applies at most once.
        self.idempotency_key: str | None = None
        #: An earlier attempt of this request got no answer, so it may have been applied (a retried DELETE answering 404).
        self.earlier_attempt_may_have_applied = False

    @property
    def from_service(self) -> bool:
        """The body is the API's own error JSON (the service itself answered)."""
        return self.status is not None and self.code not in ("unexpected_response", "network_error")


class NotFoundError(LineageError):
    """404: unknown or deleted session, conversation or attempt, or another tenant's (indistinguishable on purpose)."""


class AuthenticationError(LineageError):
    """401/403: a missing or invalid API key, or a Lease-Token that does not hold the attempt (``lease_token_invalid``)."""


class ConflictError(LineageError):
    """409: ``session_ended`` (continue on ``live_session_id``), ``count_mismatch`` (``message_count`` is the
    live count), ``cursor_stale``, ``format_mismatch``, ``lease_lost``, ``committed``, ``commit_in_progress``, ``turn_superseded``, ``turn_ended``,
    ``turn_expired``, ``turn_required``, ``rollback_unavailable``, ``conversation_exists`` (a branch's new id is taken), ``conflict``..."""

    @property
    def live_session_id(self) -> str | None:
        v = _field(self.body, "liveSessionId", str)
        return v if isinstance(v, str) else None

    @property
    def message_count(self) -> int | None:
        n = _field(self.body, "messageCount", int)
        return n if not isinstance(n, bool) else None


class ConversationBusyError(ConflictError):
    """409 ``conversation_busy`` (SPEC T1, T2): another turn holds the conversation. ``active_turn`` is
    ``{turnId, startedAt, expiresAt}`` (never its token); retry after ``retry_after_s``."""

    def __init__(self, message: str, *, retry_after_s: float | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after_s = retry_after_s

    @property
    def active_turn(self) -> dict[str, Any] | None:
        v = _field(self.body, "activeTurn", dict)
        return v if isinstance(v, dict) else None


class ValidationError(LineageError):
    """The request was refused as it is: 400 (``field`` names what is wrong, e.g. ``messages[3].content``; ``from_seq_out_of_range``: a branch point past the last item),
    413 ``payload_too_large``, 415 ``unsupported_media_type``, 422 ``idempotency_key_reused``."""

    @property
    def field(self) -> str | None:
        v = _field(self.body, "field", str)
        return v if isinstance(v, str) else None


class RateLimitedError(LineageError):
    """429: this tenant's limit (or the stage throttle); nothing was applied. Retry after ``retry_after_s``."""

    def __init__(self, message: str, *, retry_after_s: float | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after_s = retry_after_s


class UnavailableError(LineageError):
    """503 ``lease_unavailable`` / ``unavailable`` from the service (decided before anything was written),
    or another 5xx. Retry after ``retry_after_s``."""

    def __init__(self, message: str, *, retry_after_s: float | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after_s = retry_after_s


class OutcomeUnknownError(LineageError):
    """The request may or may not have been applied: the service's 503 ``outcome_unknown`` (the store did not
    confirm a write it may have made), or no answer to a request that is unsafe to repeat (a pop, an in-place
    compress, a begin). Read the state before trying again."""


class NetworkError(LineageError):
    """No response: connection refused or reset, DNS, or the per-attempt timeout. ``may_have_applied`` is
    False only when the request provably never left (connection refused)."""

    def __init__(self, message: str, *, timed_out: bool, may_have_applied: bool) -> None:
        super().__init__(message, code="network_error", retryable=True)
        self.timed_out = timed_out
        self.may_have_applied = may_have_applied


def _field(body: Any, name: str, kind: type) -> Any:
    if isinstance(body, dict):
        v = body.get(name)
        if isinstance(v, kind):
            return v
    return None


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Retry-After as delta-seconds or an HTTP date, in seconds; None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    v = value.strip()
    if v.isdigit():
        return float(v)
    try:
        at = email.utils.parsedate_to_datetime(v).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, at - (time.time() if now is None else now))


def error_from_response(status: int, body: Any, headers: Mapping[str, str]) -> LineageError:
    """The typed error for an error response (``headers`` with lower-case names)."""
    err = body.get("error") if isinstance(body, dict) else None
    api = isinstance(err, dict) and isinstance(err.get("code"), str) and isinstance(err.get("message"), str)
    code: str = err["code"] if api and isinstance(err, dict) else "unexpected_response"
    if api and isinstance(err, dict):
        message = f"{status} {code}: {err['message']}"
        rid = err.get("requestId")
        request_id = rid if isinstance(rid, str) else headers.get("x-request-id")
    else:
        text = body if isinstance(body, str) else ""
        message = f"HTTP {status}" + (f": {text[:200]}" if text else "")
        request_id = headers.get("x-request-id")
    retry_after = parse_retry_after(headers.get("retry-after"))
    kw: dict[str, Any] = {"status": status, "code": code, "request_id": request_id, "body": body}
    if status == 404:
        return NotFoundError(message, **kw)
    if status in (401, 403):
        return AuthenticationError(message, **kw)
    if status == 409 and code == "conversation_busy":
        return ConversationBusyError(message, retry_after_s=retry_after, **kw)
    if status == 409:
        return ConflictError(message, **kw)
    if status in (400, 413, 415, 422):
        return ValidationError(message, **kw)
    if status == 429:
        return RateLimitedError(message, retry_after_s=retry_after, retryable=True, **kw)
    if status == 503 and code == "outcome_unknown":
        return OutcomeUnknownError(message, **kw)
    if status >= 500:
        # The service's own 503 says nothing was applied; any other 5xx (a crash, a gateway) may come after a write.
        return UnavailableError(message, retry_after_s=retry_after, retryable=status == 503 and api, **kw)
    return LineageError(message, **kw)
