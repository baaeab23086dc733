"""The held compaction as a context manager: the seed's flow over HTTP (issue 29, SPEC E1-E4, L5, C9, I3).

begin -> a LeaseRefresher heartbeating while the block (the agent's own model) runs -> a fenced
commit, or an abort when the block leaves without one -> the lease released.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .client import JSON, BeginResult, HeldAttempt, Item, Mode, Origin
from .errors import ConflictError, LineageError, NotFoundError, ValidationError
from .refresher import LeaseRefresher

if TYPE_CHECKING:
    from .conversation import Conversation

#: ``engine(messages, cancelled_event) -> list``: the agent's own compressor.
Engine = Callable[[list[Item], threading.Event], Sequence[Item]]


@dataclass(frozen=True)
class CompactionResult:
    """What an attempt came to. ``outcome``: ``compressed``, ``noop``, ``skipped`` (``reason`` ``locked``,
    ``cancelled``, ``stale``, ``lease_lost``...) or ``disabled``. ``messages``: the conversation's live items
    after it (for a loser, read after the lease decision, unchanged)."""

    outcome: str
    reason: str | None
    session_id: str | None
    previous_session_id: str | None
    messages: list[Item]
    body: JSON = field(default_factory=dict, repr=False)


class CompactionAttempt:
    """``with conversation.compaction(...) as attempt:`` begins on entry; see ``started``, ``messages``,
    ``outcome``, ``reason``, ``cancelled``, ``cancel()`` and ``commit(replacement)``. Leaving the block
    without a commit, by exception or not, aborts and releases the lease; the exception propagates."""

    def __init__(
        self,
        conversation: Conversation,
        *,
        mode: Mode,
        origin: Origin,
        ttl_s: float | None,
        refresher_wait: Callable[[float], bool] | None = None,
    ) -> None:
        self._conv = conversation
        self._mode: Mode = mode
        self._origin: Origin = origin
        self._ttl_s = ttl_s
        self._refresher_wait = refresher_wait
        self._begin: BeginResult | None = None
        self._refresher: LeaseRefresher | None = None
        self._lock = threading.Lock()
        self._result: CompactionResult | None = None
        self._committed = False
        #: Set when the refresher gives up, the lease is lost, or cancel() is called: the attempt must not commit.
        self.cancelled = threading.Event()
        #: Why the lease could not be kept, when it could not (the heartbeat's error).
        self.lease_error: BaseException | None = None
        #: The abort's error, when leaving the block could not release the lease (it then expires with its TTL).
        self.abort_error: BaseException | None = None

    # --- what the begin answered ----------------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._begin is not None and self._begin.started

    @property
    def outcome(self) -> str | None:
        return None if self._begin is None else self._begin.outcome

    @property
    def reason(self) -> str | None:
        return None if self._begin is None else self._begin.reason

    @property
    def holder(self) -> str | None:
        return None if self._begin is None else self._begin.holder

    @property
    def messages(self) -> list[Item] | None:
        """The snapshot this attempt compacts (items through ``attempt.through_seq``); None for a loser."""
        return None if self._begin is None or not self.started else self._begin.messages

    @property
    def attempt(self) -> HeldAttempt | None:
        return None if self._begin is None else self._begin.attempt

    @property
    def refresher(self) -> LeaseRefresher | None:
        return self._refresher

    @property
    def committed(self) -> bool:
        return self._committed

    # --- the block's side -----------------------------------------------------------------------

    def cancel(self) -> bool:
        """Cancels before the commit starts (True). Once a commit began it waits for it and answers False (C9)."""
        with self._lock:
            if self._committed:
                return False
            self.cancelled.set()
            return True

    def commit(self, replacement: Sequence[Item]) -> CompactionResult:
        """Commits the replacement of the snapshot (the fenced commit, E3). After cancellation it does not
        commit: it answers ``skipped``/``cancelled``. A second call answers the first result. A ValidationError
        (a malformed replacement) leaves the attempt running, so it can be fixed and committed again."""
        attempt = self.attempt
        if attempt is None:
            raise RuntimeError(f"this attempt did not start ({self.outcome}/{self.reason}): there is nothing to commit")
        if not isinstance(replacement, (list, tuple)):
            raise TypeError("the replacement must be a list of items")
        with self._lock:
            if self._result is not None:
                return self._result
            if self.cancelled.is_set():
                # C9: a cancelled attempt never writes; leaving the block aborts and frees the lease.
                self._result = CompactionResult("skipped", "cancelled", attempt.session_id, None, list(self.messages or []))
                return self._result
            try:
                body = self._conv.client.commit_compaction(attempt, list(replacement))
            except ValidationError:
                raise
            except LineageError:
                # It may have landed: leaving the block aborts, which answers `committed` if it did.
                raise
            self._committed = True
        self._stop_refresher()
        self._result = self._result_of(body)
        return self._result

    def _result_of(self, body: JSON) -> CompactionResult:
        msgs = body.get("messages")
        if isinstance(msgs, list) and not body.get("truncated"):
            items: list[Item] = msgs
        else:
            items = self._conv.items()
        prev = body.get("previousSessionId")
        sid = body.get("sessionId")
        return CompactionResult(
            outcome=str(body.get("outcome")),
            reason=body.get("reason") if isinstance(body.get("reason"), str) else None,
            session_id=sid if isinstance(sid, str) else None,
            previous_session_id=prev if isinstance(prev, str) else None,
            messages=items,
            body=body,
        )

    # --- the context manager --------------------------------------------------------------------

    def __enter__(self) -> CompactionAttempt:
        if self._begin is not None:
            raise RuntimeError("a CompactionAttempt is entered once")
        client = self._conv.client
        self._begin = client.begin_compaction(self._conv.ensure(), mode=self._mode, origin=self._origin, ttl_s=self._ttl_s)
        attempt = self._begin.attempt
        if attempt is not None:
            ttl_s = (attempt.ttl_ms or round((self._ttl_s or 30) * 1000)) / 1000
            interval = attempt.heartbeat_interval_ms / 1000 if attempt.heartbeat_interval_ms else None
            self._refresher = LeaseRefresher(self._heartbeat, ttl_s=ttl_s, interval_s=interval, wait=self._refresher_wait)
            self._refresher.start(on_done=self._refresher_done)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop_refresher()
        attempt = self.attempt
        if attempt is None or self._committed:
            return
        with self._lock:
            self.cancelled.set()
        try:
            self._conv.client.abort_compaction(attempt)
        except ConflictError as e:
            if e.code == "committed":  # an earlier commit landed though its answer was lost
                self._committed = True
            else:
                self.abort_error = e
        except Exception as e:  # the lease then expires with its TTL; never mask the block's own exception
            self.abort_error = e

    def _heartbeat(self) -> bool:
        attempt = self.attempt
        assert attempt is not None
        try:
            self._conv.client.heartbeat_compaction(attempt)
            return True
        except (ConflictError, NotFoundError) as e:
            if isinstance(e, NotFoundError) or e.code == "lease_lost":
                # The lease is no longer ours: this attempt can never commit (E2); stop heartbeating.
                self.lease_error = e
                self.cancelled.set()
                if self._refresher is not None:
                    self._refresher.stop()
            raise

    def _refresher_done(self, r: LeaseRefresher) -> None:
        if r.gave_up:
            self.lease_error = self.lease_error or r.last_error
            self.cancelled.set()

    def _stop_refresher(self) -> None:
        if self._refresher is not None:
            self._refresher.stop()


def compact_with(
    conversation: Conversation, engine: Engine, *, mode: Mode, origin: Origin, ttl_s: float | None, **kw: Any
) -> CompactionResult:
    """The function form: the engine is called exactly once, by the winner only (C6, C1)."""
    with CompactionAttempt(conversation, mode=mode, origin=origin, ttl_s=ttl_s, **kw) as attempt:
        if not attempt.started:
            # The seed's loser returns its input verbatim: the live items, read after the lease decision.
            items, session = conversation.client.read_conversation(conversation.ensure())
            sid = session.get("sessionId")
            return CompactionResult(
                outcome=str(attempt.outcome),
                reason=attempt.reason,
                session_id=sid if isinstance(sid, str) else None,
                previous_session_id=None,
                messages=items,
                body=attempt._begin.body if attempt._begin else {},
            )
        replacement = engine(list(attempt.messages or []), attempt.cancelled)
        return attempt.commit(replacement)
