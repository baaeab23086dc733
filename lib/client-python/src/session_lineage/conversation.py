"""Conversation: one client-chosen id for a whole chain (SPEC K1-K3); its routes act on the live session."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Literal, Sequence

from .client import JSON, MAX_TAIL, AppendResult, Item, Mode, Origin, TurnStrategy
from .compaction import CompactionAttempt, CompactionResult, Engine, compact_with
from .turns import Turn

if TYPE_CHECKING:
    from .client import LineageClient


class Conversation:
    """Made by ``client.conversation(conversation_id, *, format='chat', source=None, metadata=None)``.

    The first call sends one ``PUT /conversations/{id}`` (creates it or finds it); after ``delete()``
    the next call creates it again under the same id.
    """

    def __init__(
        self,
        client: LineageClient,
        conversation_id: str,
        *,
        format: Literal["chat", "responses"] = "chat",
        source: str | None = None,
        metadata: JSON | None = None,
    ) -> None:
        if not conversation_id:
            raise ValueError("conversation_id is required")
        self.client = client
        self.conversation_id = conversation_id
        self.format: Literal["chat", "responses"] = format
        self.source = source
        self.metadata = metadata
        self._ensured = False
        self._lock = threading.Lock()
        #: True when this object's PUT created the conversation.
        self.created = False
        #: The token of the turn held by ``with self.turn()``: this object's writes carry it (SPEC T3).
        self._turn_token: str | None = None

    def ensure(self) -> str:
        """Makes sure the conversation exists (one PUT, on first use) and returns its id."""
        with self._lock:
            if not self._ensured:
                _, created = self.client.put_conversation(
                    self.conversation_id, format=self.format, source=self.source, metadata=self.metadata
                )
                self.created = self.created or created
                self._ensured = True
        return self.conversation_id

    def append(self, items: Sequence[Item], *, idempotency_key: str | None = None, expected_count: int | None = None) -> AppendResult:
        """Atomic and applied at most once, on the live session whatever rotations happen meanwhile (K2, A3)."""
        return self.client.append_to_conversation(
            self.ensure(), items, idempotency_key=idempotency_key, expected_count=expected_count, turn_token=self._turn_token
        )

    def items(self, limit: int | None = None) -> list[Item]:
        """Every item of the live session in order; with ``limit``, at most the first ``limit`` of them."""
        cid = self.ensure()
        if limit is not None:
            if limit <= 0:
                return []
            if limit <= MAX_TAIL:
                page = self.client.list_conversation_messages(cid, limit=limit)
                if len(page["messages"]) >= limit or page.get("nextCursor") is None:
                    return list(page["messages"])[:limit]
        items = self.client.read_conversation(cid)[0]
        return items if limit is None else items[:limit]

    def tail(self, n: int) -> list[Item]:
        """The latest ``n`` items in order (paged when the service shortened the tail to fit one response)."""
        if n <= 0:
            return []
        cid = self.ensure()
        if n <= MAX_TAIL:
            page = self.client.list_conversation_messages(cid, tail=n)
            if not page.get("truncated"):
                return list(page["messages"])
        return self.client.read_conversation(cid)[0][-n:]

    def pop(self) -> Item | None:
        """Removes and returns the last item (None when empty). Retried only when the service says nothing was applied."""
        removed: Any = self.client.pop_conversation(self.ensure(), turn_token=self._turn_token).get("removed")
        return removed if isinstance(removed, dict) else None

    def transaction(self, operation_id: str, transaction: JSON) -> JSON:
        """The Agents SDK's history transaction (SPEC X1: ``append_items`` or ``replace_suffix``), atomic and
        idempotent by ``operation_id``: a retry in another process finds the first try."""
        return self.client.apply_transaction(self.ensure(), operation_id, transaction, turn_token=self._turn_token)

    def turn(
        self,
        strategy: TurnStrategy = "reject",
        *,
        ttl_s: float | None = None,
        wait_s: float | None = None,
        refresher_wait: Callable[[float], bool] | None = None,
    ) -> Turn:
        """``with conversation.turn(strategy) as turn:`` holds the conversation for one writer (SPEC T1-T6):
        begun on entry (``ConversationBusyError`` when busy), heartbeated while the block runs, ended on exit;
        this object's writes inside the block carry the turn's token."""
        return Turn(self, strategy=strategy, ttl_s=ttl_s, wait_s=wait_s, refresher_wait=refresher_wait)

    def compress(self, mode: Mode = "in_place", origin: Origin = "manual", keep_last: int | None = None) -> JSON:
        """The service's own engine compacts the live session (POST …/compress)."""
        return self.client.compress_conversation(self.ensure(), mode=mode, origin=origin, keep_last=keep_last)

    def lineage(self) -> JSON:
        """``{chain, tip}``: root to live tip."""
        return self.client.conversation_lineage(self.ensure())

    def get(self) -> JSON:
        return self.client.get_conversation(self.ensure())

    def delete(self) -> None:
        """Deletes every session of the chain (K3); the next call creates it again, empty, under the same id."""
        with self._lock:
            try:
                self.client.delete_conversation(self.conversation_id)
            finally:
                # Gone or not, the next call makes sure of it again with its PUT.
                self._ensured = False

    def compaction(
        self,
        mode: Mode = "in_place",
        origin: Origin = "manual",
        ttl_s: float | None = None,
        *,
        refresher_wait: Callable[[float], bool] | None = None,
    ) -> CompactionAttempt:
        """The held compaction as a context manager (the agent compacts with its own model; see the README).
        ``refresher_wait`` replaces the refresher's sleep (``wait(interval) -> True to stop``), for tests."""
        return CompactionAttempt(self, mode=mode, origin=origin, ttl_s=ttl_s, refresher_wait=refresher_wait)

    def compact_with(
        self,
        engine: Engine,
        *,
        mode: Mode = "in_place",
        origin: Origin = "manual",
        ttl_s: float | None = None,
        refresher_wait: Callable[[float], bool] | None = None,
    ) -> CompactionResult:
        """``engine(messages, cancelled_event) -> list`` is called exactly once, by the winner only; a loser's
        result carries the live items unchanged, read after the lease decision."""
        return compact_with(self, engine, mode=mode, origin=origin, ttl_s=ttl_s, refresher_wait=refresher_wait)

    def __repr__(self) -> str:
        return f"Conversation({self.conversation_id!r}, format={self.format!r})"
