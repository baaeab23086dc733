"""LineageClient: one method per route of functions/openapi.json, plus the held compactions (issue 29).

JSON values are returned as the service sends them (``dict``/``list``, camelCase keys as in the
OpenAPI document); the client adds retries, idempotency keys and typed errors (errors.py).
"""

from __future__ import annotations

import urllib.parse
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal, Sequence

from ._transport import Response, RetryPolicy, Safety, Transport, encode_json
from .errors import ConflictError, LineageError, NotFoundError

if TYPE_CHECKING:
    from .conversation import Conversation

JSON = dict[str, Any]
Item = dict[str, Any]
Mode = Literal["in_place", "rotate"]
Origin = Literal["turn", "review", "manual"]
TurnStrategy = Literal["reject", "enqueue", "interrupt", "rollback"]

#: The latest-N read takes at most this many (the document's maximum).
MAX_TAIL = 1000


def new_idempotency_key() -> str:
    """A key no other request will use: 122 random bits."""
    return f"lsp-{uuid.uuid4()}"


def _q(value: str) -> str:
    return urllib.parse.quote(value, safe="")


@dataclass(frozen=True)
class AppendResult:
    #: The session the items landed on (the live one, for a conversation).
    session_id: str
    session: JSON
    appended: int
    #: The service answered with the stored first response to this key: the items landed earlier, once.
    replayed: bool
    idempotency_key: str


@dataclass
class HeldAttempt:
    """A held compaction attempt as the begin answered it. ``lease_token`` is a secret: it is never logged
    and never shown in ``repr``."""

    attempt_id: str
    lease_token: str = field(repr=False)
    session_id: str
    mode: str
    fence: Any
    through_seq: Any
    expires_at: str | None
    ttl_ms: int | None
    heartbeat_interval_ms: int | None
    #: The compactions path it was begun under (``/conversations/{id}/compactions`` or ``/sessions/{id}/compactions``).
    base_path: str

    @property
    def path(self) -> str:
        return f"{self.base_path}/{_q(self.attempt_id)}"


@dataclass(frozen=True)
class BeginResult:
    """``outcome`` ``started`` (this caller holds the lease: ``attempt`` and the snapshot ``messages``),
    ``skipped`` (``reason`` ``locked``; ``holder``) or ``disabled`` (origin review)."""

    outcome: str
    reason: str | None
    attempt: HeldAttempt | None
    messages: list[Item] | None
    holder: str | None
    body: JSON

    @property
    def started(self) -> bool:
        return self.outcome == "started" and self.attempt is not None


class LineageClient:
    """``LineageClient(base_url, api_key, *, timeout_s=30, max_retries=3)``.

    Every append and create carries an ``Idempotency-Key`` (generated unless given); every retry
    sends the same key and the same bytes. Retries: network errors, timeouts, 5xx and 429/503
    ``Retry-After`` for requests that are safe to repeat; ``pop``, an in-place ``compress`` and a
    compaction begin only when the service said nothing was applied.
    """

    def __init__(self, base_url: str, api_key: str, *, timeout_s: float = 30, max_retries: int = 3) -> None:
        self._t = Transport(base_url, api_key, timeout_s=timeout_s, policy=RetryPolicy(max_attempts=max_retries + 1))

    @property
    def base_url(self) -> str:
        return self._t.base_url

    def _call(
        self,
        method: str,
        path: str,
        safety: Safety,
        *,
        body: Any = None,
        query: dict[str, str | int | None] | None = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> Response:
        data = raw if raw is not None else (None if body is None else encode_json(body, "the request"))
        return self._t.request(method, path, safety=safety, query=query, body=data, headers=headers)

    def _keyed(self, key: str, method: str, path: str, body: Any, turn_token: str | None = None) -> Response:
        raw = encode_json(body, "the request")
        try:
            return self._call(method, path, "repeatable", raw=raw, headers={"idempotency-key": key, **_turn(turn_token)})
        except LineageError as e:
            e.idempotency_key = key
            raise

    def _delete_tolerant(self, path: str) -> None:
        try:
            self._call("DELETE", path, "repeatable")
        except NotFoundError as e:
            # A 404 after an attempt that got no answer: that attempt is what deleted it.
            if not e.earlier_attempt_may_have_applied:
                raise

    # --- sessions -------------------------------------------------------------------------------

    def create_session(
        self,
        *,
        format: Literal["chat", "responses"] | None = None,
        source: str | None = None,
        metadata: JSON | None = None,
        idempotency_key: str | None = None,
    ) -> JSON:
        """POST /sessions (a retried create makes one session, SPEC A3)."""
        body = _present(format=format, source=source, metadata=metadata)
        r = self._keyed(idempotency_key or new_idempotency_key(), "POST", "/sessions", body)
        return _obj(r.body["session"])

    def get_session(self, session_id: str) -> JSON:
        return _obj(self._call("GET", f"/sessions/{_q(session_id)}", "repeatable").body["session"])

    def delete_session(self, session_id: str) -> None:
        self._delete_tolerant(f"/sessions/{_q(session_id)}")

    def append(
        self, session_id: str, items: Sequence[Item], *, idempotency_key: str | None = None, expected_count: int | None = None
    ) -> AppendResult:
        """POST /sessions/{id}/messages: atomic, applied at most once (SPEC A3, A4, A7)."""
        return self._append(f"/sessions/{_q(session_id)}/messages", items, idempotency_key, expected_count)

    def list_messages(
        self, session_id: str, *, limit: int | None = None, cursor: str | None = None, tail: int | None = None
    ) -> JSON:
        """GET /sessions/{id}/messages: one page (``messages``, ``nextCursor``, ``truncated``, ``session``)."""
        q: dict[str, str | int | None] = {"limit": limit, "cursor": cursor, "tail": tail}
        return _obj(self._call("GET", f"/sessions/{_q(session_id)}/messages", "repeatable", query=q).body)

    def tail(self, session_id: str, n: int) -> list[Item]:
        return list(self.list_messages(session_id, tail=n)["messages"])

    def read_all(self, session_id: str, *, page_size: int | None = None) -> list[Item]:
        """Every active item, page by page (started over when an in-place compaction made the cursor stale)."""
        return self._read_all(lambda c: self.list_messages(session_id, limit=page_size, cursor=c))[0]

    def pop(self, session_id: str) -> JSON:
        """DELETE /sessions/{id}/messages/last: ``{removed, session}``. Retried only when nothing was applied."""
        return _obj(self._call("DELETE", f"/sessions/{_q(session_id)}/messages/last", "once").body)

    def lineage(self, session_id: str) -> JSON:
        return _obj(self._call("GET", f"/sessions/{_q(session_id)}/lineage", "repeatable").body)

    def compress(
        self, session_id: str, *, mode: Mode = "in_place", origin: Origin = "manual", keep_last: int | None = None, force: bool | None = None
    ) -> JSON:
        """POST /sessions/{id}/compress with the service's engine. A rotation is retried like a read (a repeat is
        adopted); an in-place compaction only after the service said nothing was applied."""
        return self._compress(f"/sessions/{_q(session_id)}/compress", mode, origin, keep_last, force)

    # --- conversations (SPEC K1-K3) -------------------------------------------------------------

    def conversation(
        self,
        conversation_id: str,
        *,
        format: Literal["chat", "responses"] = "chat",
        source: str | None = None,
        metadata: JSON | None = None,
    ) -> Conversation:
        """A handle on one conversation, created on first use with PUT (no request until then)."""
        from .conversation import Conversation

        return Conversation(self, conversation_id, format=format, source=source, metadata=metadata)

    def put_conversation(
        self,
        conversation_id: str,
        *,
        format: Literal["chat", "responses"] | None = None,
        source: str | None = None,
        metadata: JSON | None = None,
        compaction: Literal["service", "agent"] | None = None,
        turns: Literal["optional", "required"] | None = None,
        retention: JSON | None = None,
    ) -> tuple[JSON, bool]:
        """PUT /conversations/{id}: ``(conversation, created)``. Safe to repeat. ``retention``:
        ``{"archivedSeconds": n, "endedSessionSeconds": n}`` (SPEC H3, each >= 60, bounded by the tenant's)."""
        body = _present(format=format, source=source, metadata=metadata, compaction=compaction, turns=turns, retention=retention)
        r = self._call("PUT", f"/conversations/{_q(conversation_id)}", "repeatable", body=body)
        return _obj(r.body["conversation"]), r.status == 201

    def get_conversation(self, conversation_id: str) -> JSON:
        return _obj(self._call("GET", f"/conversations/{_q(conversation_id)}", "repeatable").body["conversation"])

    def list_conversations(self, *, limit: int | None = None, cursor: str | None = None) -> JSON:
        """GET /conversations: ``{conversations, nextCursor}``, most recently active first."""
        return _obj(self._call("GET", "/conversations", "repeatable", query={"limit": limit, "cursor": cursor}).body)

    def update_conversation(
        self,
        conversation_id: str,
        *,
        metadata: JSON | None = None,
        compaction: Literal["service", "agent"] | None = None,
        turns: Literal["optional", "required"] | None = None,
        retention: JSON | None = None,
    ) -> JSON:
        """PATCH /conversations/{id}: replaces its metadata; sets its compaction policy, its turn policy (SPEC T5) or its
        retention (SPEC H3)."""
        body = _present(metadata=metadata, compaction=compaction, turns=turns, retention=retention)
        return _obj(self._call("PATCH", f"/conversations/{_q(conversation_id)}", "repeatable", body=body).body["conversation"])

    def delete_conversation(self, conversation_id: str) -> None:
        """DELETE /conversations/{id}: every session of its chain (K3)."""
        self._delete_tolerant(f"/conversations/{_q(conversation_id)}")

    def append_to_conversation(
        self,
        conversation_id: str,
        items: Sequence[Item],
        *,
        idempotency_key: str | None = None,
        expected_count: int | None = None,
        turn_token: str | None = None,
    ) -> AppendResult:
        """POST /conversations/{id}/messages: on the live session, at most once across retries and rotations.
        With ``turn_token`` it lands only while that turn is the conversation's current one (SPEC T3)."""
        return self._append(f"/conversations/{_q(conversation_id)}/messages", items, idempotency_key, expected_count, turn_token)

    def list_conversation_messages(
        self, conversation_id: str, *, limit: int | None = None, cursor: str | None = None, tail: int | None = None
    ) -> JSON:
        q: dict[str, str | int | None] = {"limit": limit, "cursor": cursor, "tail": tail}
        return _obj(self._call("GET", f"/conversations/{_q(conversation_id)}/messages", "repeatable", query=q).body)

    def read_conversation(self, conversation_id: str, *, page_size: int | None = None) -> tuple[list[Item], JSON]:
        """Every item of the live session and the session as read with the last page."""
        return self._read_all(lambda c: self.list_conversation_messages(conversation_id, limit=page_size, cursor=c))

    def pop_conversation(self, conversation_id: str, *, turn_token: str | None = None) -> JSON:
        path = f"/conversations/{_q(conversation_id)}/messages/last"
        return _obj(self._call("DELETE", path, "once", headers=_turn(turn_token)).body)

    def conversation_lineage(self, conversation_id: str) -> JSON:
        return _obj(self._call("GET", f"/conversations/{_q(conversation_id)}/lineage", "repeatable").body)

    def history(self, conversation_id: str, *, limit: int | None = None, cursor: str | None = None) -> JSON:
        """GET /conversations/{id}/history (SPEC H1): ``{entries, nextCursor}``, every item the conversation held, in
        order; each entry ``{sessionId, generation, seq, compactedAt?, summary?, item}``. A page may be short (it
        never crosses a session): follow ``nextCursor`` until it is None, or use :meth:`read_history`."""
        q: dict[str, str | int | None] = {"limit": limit, "cursor": cursor}
        return _obj(self._call("GET", f"/conversations/{_q(conversation_id)}/history", "repeatable", query=q).body)

    def session_history(self, session_id: str, *, limit: int | None = None, cursor: str | None = None) -> JSON:
        """GET /sessions/{id}/history: the history of the session's conversation up to and including that session."""
        q: dict[str, str | int | None] = {"limit": limit, "cursor": cursor}
        return _obj(self._call("GET", f"/sessions/{_q(session_id)}/history", "repeatable", query=q).body)

    def export_conversation(self, conversation_id: str, *, page_size: int | None = None) -> str:
        """GET /conversations/{id}/export, every page (SPEC H5): the conversation line, then one line per history entry,
        as JSON Lines text (write it to a file; :meth:`import_conversation` restores it)."""
        out: list[str] = []
        cursor: str | None = None
        while True:
            r = self._call("GET", f"/conversations/{_q(conversation_id)}/export", "repeatable", query={"limit": page_size, "cursor": cursor})
            out.append(r.body if isinstance(r.body, str) else "")
            cursor = r.headers.get("x-next-cursor")
            if not cursor:
                return "".join(out)

    def import_conversation(self, conversation_id: str, ndjson: str, *, idempotency_key: str | None = None) -> JSON:
        """POST /conversations/{id}/import (SPEC H5): an export restored into the new conversation ``conversation_id``
        (409 ``conflict`` when it exists). ``{conversationId, rootSessionId, liveSessionId, sessions, items, sessionIds}``.
        With ``idempotency_key`` (one is made when omitted) a retry is the same import."""
        key = idempotency_key or new_idempotency_key()
        headers = {"idempotency-key": key, "content-type": "application/x-ndjson"}
        path = f"/conversations/{_q(conversation_id)}/import"
        return _obj(self._call("POST", path, "repeatable", raw=ndjson.encode("utf-8"), headers=headers).body)

    def read_history(self, conversation_id: str, *, page_size: int | None = None) -> list[JSON]:
        """Every history entry of the conversation, paged to the end."""
        entries: list[JSON] = []
        cursor: str | None = None
        while True:
            page = self.history(conversation_id, limit=page_size, cursor=cursor)
            entries.extend(_obj(e) for e in page["entries"])
            cursor = page["nextCursor"]
            if cursor is None:
                return entries

    def apply_transaction(self, conversation_id: str, operation_id: str, transaction: JSON, *, turn_token: str | None = None) -> JSON:
        """POST /conversations/{id}/transactions (SPEC X1): the Agents SDK's history transaction, atomic and
        idempotent by ``operation_id`` (scoped to the conversation), so a retry resends it safely: the same id with
        the same transaction replays, with another one it is 422 ``idempotency_key_reused``; a ``replace_suffix``
        whose expected suffix is not the live tail is 409 ``suffix_mismatch`` and changes nothing."""
        body = {"operationId": operation_id, "transaction": transaction}
        path = f"/conversations/{_q(conversation_id)}/transactions"
        return _obj(self._call("POST", path, "repeatable", body=body, headers=_turn(turn_token)).body)

    def branch(
        self, conversation_id: str, new_conversation_id: str, *, from_seq: int | None = None, idempotency_key: str | None = None
    ) -> JSON:
        """POST /conversations/{id}/branches (SPEC H2): a new conversation ``new_conversation_id`` holding a copy of the
        live session's items 1..``from_seq`` (default: all), whose ``branchedFrom`` names where it came from. Every
        retry sends one Idempotency-Key, so a retried branch creates one branch (409 ``conversation_exists`` when the
        id is taken, 400 ``from_seq_out_of_range`` past the last item)."""
        body = _present(conversationId=new_conversation_id, fromSeq=from_seq)
        path = f"/conversations/{_q(conversation_id)}/branches"
        return _obj(self._keyed(idempotency_key or new_idempotency_key(), "POST", path, body).body["conversation"])

    # --- turns (SPEC T1-T6) ---------------------------------------------------------------------

    def begin_turn(
        self, conversation_id: str, *, strategy: TurnStrategy = "reject", ttl_s: float | None = None, wait_s: float | None = None
    ) -> JSON:
        """POST /conversations/{id}/turns: ``{turnId, turnToken, fence, startedAt, expiresAt}``, or
        ``ConversationBusyError``. Not repeated after a lost answer (a second begin would meet the first)."""
        body = _present(strategy=strategy, ttlMs=_ms(ttl_s), waitMs=_ms(wait_s))
        return _obj(self._call("POST", f"/conversations/{_q(conversation_id)}/turns", "once", body=body).body["turn"])

    def heartbeat_turn(self, conversation_id: str, turn: JSON, *, ttl_s: float | None = None) -> JSON:
        """Extends the turn to now + ttl; ``ConflictError`` ``turn_superseded``/``turn_ended``/``turn_expired`` when it is not current."""
        path = f"/conversations/{_q(conversation_id)}/turns/{_q(str(turn['turnId']))}/heartbeat"
        r = self._call("POST", path, "repeatable", body=_present(ttlMs=_ms(ttl_s)), headers=_turn(str(turn["turnToken"])))
        return _obj(r.body["turn"])

    def end_turn(self, conversation_id: str, turn: JSON) -> None:
        """Ends the turn (again: a no-op)."""
        path = f"/conversations/{_q(conversation_id)}/turns/{_q(str(turn['turnId']))}"
        self._call("DELETE", path, "repeatable", headers=_turn(str(turn["turnToken"])))

    def current_turn(self, conversation_id: str) -> JSON | None:
        """``{turnId, startedAt, expiresAt}`` of the current turn (never its token), or None."""
        t = self._call("GET", f"/conversations/{_q(conversation_id)}/turns/current", "repeatable").body.get("turn")
        return t if isinstance(t, dict) else None

    def apply_session_transaction(self, session_id: str, operation_id: str, transaction: JSON) -> JSON:
        """POST /sessions/{id}/transactions: the same on one session (the operation id scoped to it)."""
        body = {"operationId": operation_id, "transaction": transaction}
        return _obj(self._call("POST", f"/sessions/{_q(session_id)}/transactions", "repeatable", body=body).body)

    def compress_conversation(
        self,
        conversation_id: str,
        *,
        mode: Mode = "in_place",
        origin: Origin = "manual",
        keep_last: int | None = None,
        force: bool | None = None,
    ) -> JSON:
        return self._compress(f"/conversations/{_q(conversation_id)}/compress", mode, origin, keep_last, force)

    # --- held compactions (issue 29, SPEC E1-E8) ------------------------------------------------

    def begin_compaction(
        self, conversation_id: str, *, mode: Mode = "in_place", origin: Origin = "manual", ttl_s: float | None = None
    ) -> BeginResult:
        """POST /conversations/{id}/compactions: take the lease on the live session and its snapshot, or learn who holds it."""
        return self._begin(f"/conversations/{_q(conversation_id)}/compactions", mode, origin, ttl_s)

    def begin_session_compaction(
        self, session_id: str, *, mode: Mode = "in_place", origin: Origin = "manual", ttl_s: float | None = None
    ) -> BeginResult:
        """POST /sessions/{id}/compactions."""
        return self._begin(f"/sessions/{_q(session_id)}/compactions", mode, origin, ttl_s)

    def heartbeat_compaction(self, attempt: HeldAttempt) -> JSON:
        """POST …/compactions/{attemptId}/heartbeat: extends the lease (409 ``lease_lost`` when it is no longer ours)."""
        r = self._call("POST", f"{attempt.path}/heartbeat", "repeatable", body={}, headers=_lease(attempt))
        a = _obj(r.body.get("attempt", {}))
        if isinstance(a.get("expiresAt"), str):
            attempt.expires_at = a["expiresAt"]
        return a

    def commit_compaction(self, attempt: HeldAttempt, messages: Sequence[Item]) -> JSON:
        """POST …/compactions/{attemptId}/commit: the fenced commit; a repeat answers the first outcome (E3), so it is retried."""
        return _obj(self._call("POST", f"{attempt.path}/commit", "repeatable", body={"messages": list(messages)}, headers=_lease(attempt)).body)

    def abort_compaction(self, attempt: HeldAttempt) -> JSON:
        """DELETE …/compactions/{attemptId}: releases the lease, writes nothing else (409 ``committed`` after a commit)."""
        r = self._call("DELETE", attempt.path, "repeatable", headers=_lease(attempt))
        return _obj(r.body) if r.body is not None else {"outcome": "skipped", "reason": "cancelled"}

    def compaction_status(self, attempt: HeldAttempt) -> JSON:
        """GET …/compactions/{attemptId}: ``{attemptId, sessionId, mode, status, expiresAt, outcome?}``."""
        return _obj(self._call("GET", attempt.path, "repeatable", headers=_lease(attempt)).body["attempt"])

    # --- shared ---------------------------------------------------------------------------------

    def _append(
        self, path: str, items: Sequence[Item], key: str | None, expected_count: int | None, turn_token: str | None = None
    ) -> AppendResult:
        key = key or new_idempotency_key()
        body: JSON = {"messages": list(items)}
        if expected_count is not None:
            body["expectedCount"] = expected_count
        r = self._keyed(key, "POST", path, body, turn_token)
        session = _obj(r.body["session"])
        return AppendResult(
            session_id=str(session["sessionId"]),
            session=session,
            appended=int(r.body["appended"]),
            replayed=r.headers.get("idempotent-replayed") == "true",
            idempotency_key=key,
        )

    def _compress(self, path: str, mode: Mode, origin: Origin, keep_last: int | None, force: bool | None) -> JSON:
        body = _present(mode=mode, origin=origin, keepLast=keep_last, force=force)
        # A repeated rotation is adopted (it names the one child); a repeated in-place compaction would compact twice.
        safety: Safety = "repeatable" if mode == "rotate" else "once"
        return _obj(self._call("POST", path, safety, body=body).body)

    def _begin(self, base: str, mode: Mode, origin: Origin, ttl_s: float | None) -> BeginResult:
        body = _present(mode=mode, origin=origin, ttlMs=None if ttl_s is None else round(ttl_s * 1000))
        # A begin whose answer was lost holds a lease whose token we never saw: never repeated unless nothing was applied.
        r = self._call("POST", base, "once", body=body)
        b = _obj(r.body)
        a = b.get("attempt")
        attempt = None
        if b.get("outcome") == "started" and isinstance(a, dict):
            attempt = HeldAttempt(
                attempt_id=str(a["attemptId"]),
                lease_token=str(a["leaseToken"]),
                session_id=str(a["sessionId"]),
                mode=str(a.get("mode", mode)),
                fence=a.get("fence"),
                through_seq=a.get("throughSeq"),
                expires_at=a.get("expiresAt"),
                ttl_ms=a.get("ttlMs"),
                heartbeat_interval_ms=a.get("heartbeatIntervalMs"),
                base_path=base,
            )
        messages: list[Item] | None = None
        if attempt is not None:
            messages = list(b.get("messages") or [])
            cursor = b.get("nextCursor")
            if b.get("truncated") and isinstance(cursor, str):
                # The snapshot passed one response: the rest is paged inside the snapshot's generation.
                sid = attempt.session_id
                messages += self._read_all(lambda c: self.list_messages(sid, cursor=c), first=cursor)[0]
            elif b.get("truncated"):
                # A cut snapshot with no way to page the rest: compacting a part of it would drop the
                # rest, so the attempt is given back at once rather than handed to an engine.
                try:
                    self.abort_compaction(attempt)
                finally:
                    raise LineageError(
                        "the compaction snapshot passed one response (4.5 MB) and the service gave no cursor for the rest; "
                        "the attempt was aborted",
                        code="snapshot_truncated",
                    )
        reason = b.get("reason")
        holder = b.get("holder")
        return BeginResult(
            outcome=str(b.get("outcome")),
            reason=reason if isinstance(reason, str) else None,
            attempt=attempt,
            messages=messages,
            holder=holder if isinstance(holder, str) else None,
            body=b,
        )

    def _read_all(self, page: Callable[[str | None], JSON], *, first: str | None = None, max_restarts: int = 3) -> tuple[list[Item], JSON]:
        for restart in range(max_restarts + 1):
            try:
                items: list[Item] = []
                session: JSON = {}
                for p in _pages(page, first):
                    items.extend(p["messages"])
                    session = _obj(p["session"])
                return items, session
            except ConflictError as e:
                if e.code != "cursor_stale" or restart >= max_restarts or first is not None:
                    raise
        raise AssertionError("unreachable")


def _pages(page: Callable[[str | None], JSON], first: str | None) -> Iterator[JSON]:
    cursor = first
    while True:
        p = _obj(page(cursor))
        yield p
        nxt = p.get("nextCursor")
        if not isinstance(nxt, str):
            return
        cursor = nxt


def _lease(attempt: HeldAttempt) -> dict[str, str]:
    return {"lease-token": attempt.lease_token}


def _turn(token: str | None) -> dict[str, str]:
    return {} if token is None else {"turn-token": token}


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else int(round(seconds * 1000))


def _present(**fields: Any) -> JSON:
    return {k: v for k, v in fields.items() if v is not None}


def _obj(v: Any) -> JSON:
    if not isinstance(v, dict):
        raise LineageError(f"the service answered {type(v).__name__} where the document promises an object")
    return v


__all__ = ["LineageClient", "AppendResult", "HeldAttempt", "BeginResult", "new_idempotency_key"]
