"""AsyncLineageClient: LineageClient's surface as ``async`` methods.

Each call runs the blocking client in a worker thread (``asyncio.to_thread``): the standard
library has no asyncio HTTP client, and this keeps one implementation of retries and errors.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from types import TracebackType
from typing import Any, Awaitable, Callable, Literal, Sequence

from .client import JSON, AppendResult, BeginResult, HeldAttempt, Item, LineageClient, Mode, Origin
from .compaction import CompactionAttempt, CompactionResult
from .conversation import Conversation

Format = Literal["chat", "responses"]
Policy = Literal["service", "agent"]


class AsyncLineageClient:
    """``AsyncLineageClient(base_url, api_key, *, timeout_s=30, max_retries=3)``."""

    def __init__(self, base_url: str, api_key: str, *, timeout_s: float = 30, max_retries: int = 3) -> None:
        self.sync = LineageClient(base_url, api_key, timeout_s=timeout_s, max_retries=max_retries)

    @classmethod
    def wrap(cls, client: LineageClient) -> AsyncLineageClient:
        """The async surface of an existing client."""
        self = cls.__new__(cls)
        self.sync = client
        return self

    # sessions
    async def create_session(
        self, *, format: Format | None = None, source: str | None = None, metadata: JSON | None = None, idempotency_key: str | None = None
    ) -> JSON:
        return await asyncio.to_thread(self.sync.create_session, format=format, source=source, metadata=metadata, idempotency_key=idempotency_key)

    async def get_session(self, session_id: str) -> JSON:
        return await asyncio.to_thread(self.sync.get_session, session_id)

    async def delete_session(self, session_id: str) -> None:
        await asyncio.to_thread(self.sync.delete_session, session_id)

    async def append(
        self, session_id: str, items: Sequence[Item], *, idempotency_key: str | None = None, expected_count: int | None = None
    ) -> AppendResult:
        return await asyncio.to_thread(self.sync.append, session_id, items, idempotency_key=idempotency_key, expected_count=expected_count)

    async def list_messages(self, session_id: str, *, limit: int | None = None, cursor: str | None = None, tail: int | None = None) -> JSON:
        return await asyncio.to_thread(self.sync.list_messages, session_id, limit=limit, cursor=cursor, tail=tail)

    async def tail(self, session_id: str, n: int) -> list[Item]:
        return await asyncio.to_thread(self.sync.tail, session_id, n)

    async def read_all(self, session_id: str, *, page_size: int | None = None) -> list[Item]:
        return await asyncio.to_thread(self.sync.read_all, session_id, page_size=page_size)

    async def pop(self, session_id: str) -> JSON:
        return await asyncio.to_thread(self.sync.pop, session_id)

    async def lineage(self, session_id: str) -> JSON:
        return await asyncio.to_thread(self.sync.lineage, session_id)

    async def compress(
        self, session_id: str, *, mode: Mode = "in_place", origin: Origin = "manual", keep_last: int | None = None, force: bool | None = None
    ) -> JSON:
        return await asyncio.to_thread(self.sync.compress, session_id, mode=mode, origin=origin, keep_last=keep_last, force=force)

    # conversations
    def conversation(
        self, conversation_id: str, *, format: Format = "chat", source: str | None = None, metadata: JSON | None = None
    ) -> AsyncConversation:
        return AsyncConversation(self.sync.conversation(conversation_id, format=format, source=source, metadata=metadata))

    async def put_conversation(
        self, conversation_id: str, *, format: Format | None = None, source: str | None = None, metadata: JSON | None = None, compaction: Policy | None = None
    ) -> tuple[JSON, bool]:
        return await asyncio.to_thread(
            self.sync.put_conversation, conversation_id, format=format, source=source, metadata=metadata, compaction=compaction
        )

    async def get_conversation(self, conversation_id: str) -> JSON:
        return await asyncio.to_thread(self.sync.get_conversation, conversation_id)

    async def list_conversations(self, *, limit: int | None = None, cursor: str | None = None) -> JSON:
        return await asyncio.to_thread(self.sync.list_conversations, limit=limit, cursor=cursor)

    async def update_conversation(self, conversation_id: str, *, metadata: JSON | None = None, compaction: Policy | None = None) -> JSON:
        return await asyncio.to_thread(self.sync.update_conversation, conversation_id, metadata=metadata, compaction=compaction)

    async def delete_conversation(self, conversation_id: str) -> None:
        await asyncio.to_thread(self.sync.delete_conversation, conversation_id)

    async def append_to_conversation(
        self, conversation_id: str, items: Sequence[Item], *, idempotency_key: str | None = None, expected_count: int | None = None
    ) -> AppendResult:
        return await asyncio.to_thread(
            self.sync.append_to_conversation, conversation_id, items, idempotency_key=idempotency_key, expected_count=expected_count
        )

    async def list_conversation_messages(
        self, conversation_id: str, *, limit: int | None = None, cursor: str | None = None, tail: int | None = None
    ) -> JSON:
        return await asyncio.to_thread(self.sync.list_conversation_messages, conversation_id, limit=limit, cursor=cursor, tail=tail)

    async def read_conversation(self, conversation_id: str, *, page_size: int | None = None) -> tuple[list[Item], JSON]:
        return await asyncio.to_thread(self.sync.read_conversation, conversation_id, page_size=page_size)

    async def pop_conversation(self, conversation_id: str) -> JSON:
        return await asyncio.to_thread(self.sync.pop_conversation, conversation_id)

    async def conversation_lineage(self, conversation_id: str) -> JSON:
        return await asyncio.to_thread(self.sync.conversation_lineage, conversation_id)

    async def history(self, conversation_id: str, *, limit: int | None = None, cursor: str | None = None) -> JSON:
        return await asyncio.to_thread(self.sync.history, conversation_id, limit=limit, cursor=cursor)

    async def session_history(self, session_id: str, *, limit: int | None = None, cursor: str | None = None) -> JSON:
        return await asyncio.to_thread(self.sync.session_history, session_id, limit=limit, cursor=cursor)

    async def export_conversation(self, conversation_id: str, *, page_size: int | None = None) -> str:
        return await asyncio.to_thread(self.sync.export_conversation, conversation_id, page_size=page_size)

    async def import_conversation(self, conversation_id: str, ndjson: str, *, idempotency_key: str | None = None) -> JSON:
        return await asyncio.to_thread(self.sync.import_conversation, conversation_id, ndjson, idempotency_key=idempotency_key)

    async def read_history(self, conversation_id: str, *, page_size: int | None = None) -> list[JSON]:
        return await asyncio.to_thread(self.sync.read_history, conversation_id, page_size=page_size)

    async def apply_transaction(self, conversation_id: str, operation_id: str, transaction: JSON) -> JSON:
        return await asyncio.to_thread(self.sync.apply_transaction, conversation_id, operation_id, transaction)

    async def branch(
        self, conversation_id: str, new_conversation_id: str, *, from_seq: int | None = None, idempotency_key: str | None = None
    ) -> JSON:
        return await asyncio.to_thread(
            self.sync.branch, conversation_id, new_conversation_id, from_seq=from_seq, idempotency_key=idempotency_key
        )

    async def apply_session_transaction(self, session_id: str, operation_id: str, transaction: JSON) -> JSON:
        return await asyncio.to_thread(self.sync.apply_session_transaction, session_id, operation_id, transaction)

    async def compress_conversation(
        self, conversation_id: str, *, mode: Mode = "in_place", origin: Origin = "manual", keep_last: int | None = None, force: bool | None = None
    ) -> JSON:
        return await asyncio.to_thread(
            self.sync.compress_conversation, conversation_id, mode=mode, origin=origin, keep_last=keep_last, force=force
        )

    # held compactions
    async def begin_compaction(
        self, conversation_id: str, *, mode: Mode = "in_place", origin: Origin = "manual", ttl_s: float | None = None
    ) -> BeginResult:
        return await asyncio.to_thread(self.sync.begin_compaction, conversation_id, mode=mode, origin=origin, ttl_s=ttl_s)

    async def begin_session_compaction(
        self, session_id: str, *, mode: Mode = "in_place", origin: Origin = "manual", ttl_s: float | None = None
    ) -> BeginResult:
        return await asyncio.to_thread(self.sync.begin_session_compaction, session_id, mode=mode, origin=origin, ttl_s=ttl_s)

    async def heartbeat_compaction(self, attempt: HeldAttempt) -> JSON:
        return await asyncio.to_thread(self.sync.heartbeat_compaction, attempt)

    async def commit_compaction(self, attempt: HeldAttempt, messages: Sequence[Item]) -> JSON:
        return await asyncio.to_thread(self.sync.commit_compaction, attempt, messages)

    async def abort_compaction(self, attempt: HeldAttempt) -> JSON:
        return await asyncio.to_thread(self.sync.abort_compaction, attempt)

    async def compaction_status(self, attempt: HeldAttempt) -> JSON:
        return await asyncio.to_thread(self.sync.compaction_status, attempt)


#: An async engine may be a plain function or a coroutine function.
AsyncEngine = Callable[[list[Item], threading.Event], Sequence[Item] | Awaitable[Sequence[Item]]]


class AsyncConversation:
    """Conversation's surface as ``async`` methods; ``compaction()`` is an ``async with`` context manager."""

    def __init__(self, conversation: Conversation) -> None:
        self.sync = conversation

    @property
    def conversation_id(self) -> str:
        return self.sync.conversation_id

    async def append(self, items: Sequence[Item], *, idempotency_key: str | None = None, expected_count: int | None = None) -> AppendResult:
        return await asyncio.to_thread(self.sync.append, items, idempotency_key=idempotency_key, expected_count=expected_count)

    async def items(self, limit: int | None = None) -> list[Item]:
        return await asyncio.to_thread(self.sync.items, limit)

    async def tail(self, n: int) -> list[Item]:
        return await asyncio.to_thread(self.sync.tail, n)

    async def pop(self) -> Item | None:
        return await asyncio.to_thread(self.sync.pop)

    async def compress(self, mode: Mode = "in_place", origin: Origin = "manual", keep_last: int | None = None) -> JSON:
        return await asyncio.to_thread(self.sync.compress, mode, origin, keep_last)

    async def lineage(self) -> JSON:
        return await asyncio.to_thread(self.sync.lineage)

    async def get(self) -> JSON:
        return await asyncio.to_thread(self.sync.get)

    async def delete(self) -> None:
        await asyncio.to_thread(self.sync.delete)

    def compaction(self, mode: Mode = "in_place", origin: Origin = "manual", ttl_s: float | None = None) -> AsyncCompactionAttempt:
        return AsyncCompactionAttempt(self.sync.compaction(mode, origin, ttl_s))

    async def compact_with(
        self, engine: AsyncEngine, *, mode: Mode = "in_place", origin: Origin = "manual", ttl_s: float | None = None
    ) -> CompactionResult:
        """As Conversation.compact_with; ``engine`` may be a coroutine function (it runs on the event loop)."""
        async with self.compaction(mode, origin, ttl_s) as attempt:
            if not attempt.started:
                items, session = await asyncio.to_thread(self.sync.client.read_conversation, self.sync.ensure())
                sid = session.get("sessionId")
                return CompactionResult(str(attempt.outcome), attempt.reason, sid if isinstance(sid, str) else None, None, items)
            out: Any = engine(list(attempt.messages or []), attempt.cancelled)
            if inspect.isawaitable(out):
                out = await out
            return await attempt.commit(out)


class AsyncCompactionAttempt:
    """``async with conversation.compaction() as attempt``: the same attempt, its blocking calls in a thread."""

    def __init__(self, attempt: CompactionAttempt) -> None:
        self.sync = attempt

    @property
    def started(self) -> bool:
        return self.sync.started

    @property
    def outcome(self) -> str | None:
        return self.sync.outcome

    @property
    def reason(self) -> str | None:
        return self.sync.reason

    @property
    def messages(self) -> list[Item] | None:
        return self.sync.messages

    @property
    def cancelled(self) -> threading.Event:
        return self.sync.cancelled

    def cancel(self) -> bool:
        return self.sync.cancel()

    async def commit(self, replacement: Sequence[Item]) -> CompactionResult:
        return await asyncio.to_thread(self.sync.commit, replacement)

    async def __aenter__(self) -> AsyncCompactionAttempt:
        await asyncio.to_thread(self.sync.__enter__)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        # Shielded: a cancelled task still aborts and frees the lease (I3).
        await asyncio.shield(asyncio.to_thread(self.sync.__exit__, exc_type, exc, tb))
