"""LineageSession: the OpenAI Agents SDK for Python's ``Session`` protocol, kept by the service as a conversation.

The protocol (agents.memory.session.Session, as documented by the SDK): ``session_id: str`` and
``async get_items(limit=None)``, ``async add_items(items)``, ``async pop_item()``,
``async clear_session()``. The SDK cannot be installed on the machines this package is tested on,
so conformance is to that documented protocol (see README.md); nothing here imports the SDK.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any, Callable, Sequence

from .aio import AsyncLineageClient
from .client import MAX_TAIL, Item, LineageClient, Mode
from .compaction import CompactionResult
from .conversation import Conversation
from .errors import ConflictError, LineageError, NotFoundError

#: Mirrors the SDK's TResponseInputItem (a dict) without importing it.
TResponseInputItem = dict[str, Any]
#: ``engine(messages, cancelled_event) -> list`` as Conversation.compact_with takes it.
CompactionEngine = Callable[[list[Item], threading.Event], Sequence[Item]]


class LineageSession:
    """``LineageSession(client, session_id=None, *, compaction_engine=None)``.

    ``session_id`` is the conversation id: stable across rotations and clears (a random UUID when not
    given). Items are the Agents SDK's Responses items (the conversation is created with format
    ``responses``). Calls on one object run in call order.
    """

    #: The SDK's newer protocol versions read this; None means the runner's defaults.
    session_settings: Any = None

    def __init__(
        self,
        client: LineageClient | AsyncLineageClient,
        session_id: str | None = None,
        *,
        compaction_engine: CompactionEngine | None = None,
        compaction_mode: Mode = "in_place",
    ) -> None:
        sync = client.sync if isinstance(client, AsyncLineageClient) else client
        self.session_id: str = session_id if session_id is not None else str(uuid.uuid4())
        self.compaction_engine = compaction_engine
        self.compaction_mode: Mode = compaction_mode
        self._conv: Conversation = sync.conversation(self.session_id, format="responses")
        self._lock: asyncio.Lock | None = None

    @property
    def conversation(self) -> Conversation:
        return self._conv

    def _serial(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def _ensure(self) -> str:
        try:
            return await asyncio.to_thread(self._conv.ensure)
        except ConflictError as e:
            if e.code == "format_mismatch":
                raise LineageError(f"LineageSession needs a conversation of Responses items (the Agents SDK's): {e.message}") from e
            raise

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Every item in order, or the latest ``limit`` in order."""
        if limit is not None and limit <= 0:
            return []
        async with self._serial():
            await self._ensure()
            if limit is None:
                return await asyncio.to_thread(self._conv.items)
            return await asyncio.to_thread(self._conv.tail, limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """One atomic, idempotent append (retries resend the same key and bytes)."""
        if not items:
            return
        async with self._serial():
            await self._ensure()
            await asyncio.to_thread(self._conv.append, list(items))

    async def pop_item(self) -> TResponseInputItem | None:
        """Removes and returns the most recent item (None when empty)."""
        async with self._serial():
            await self._ensure()
            return await asyncio.to_thread(self._conv.pop)

    async def clear_session(self) -> None:
        """Deletes the conversation (every session of its chain); the id stays and the next call creates it again, empty."""
        async with self._serial():
            try:
                await asyncio.to_thread(self._conv.delete)
            except NotFoundError:
                pass  # already gone: cleared all the same

    async def run_compaction(self, args: Any = None) -> CompactionResult | None:
        """Compacts now with ``compaction_engine`` under a held attempt (never another process's work twice);
        without an engine the service's own engine compacts. A long session is compacted part by part until
        done (SPEC P6). Returns None when nothing was done by us (the last attempt's result otherwise)."""
        async with self._serial():
            await self._ensure()
            engine = self.compaction_engine
            while True:
                # SPEC P6: a long session is compacted one bounded part per attempt (``partial``); go on until done.
                if engine is None:
                    body = await asyncio.to_thread(self._conv.compress, self.compaction_mode, "turn")
                    if not _partial(body):
                        return None
                    continue
                result = await asyncio.to_thread(self._conv.compact_with, engine, mode=self.compaction_mode, origin="manual")
                if not _partial(result.body):
                    return result


def _partial(body: Any) -> bool:
    """A ``compressed`` answer that summarized only the oldest bounded part: the rest is still to do."""
    return isinstance(body, dict) and body.get("outcome") == "compressed" and body.get("partial") is True


__all__ = ["LineageSession", "TResponseInputItem", "MAX_TAIL"]
