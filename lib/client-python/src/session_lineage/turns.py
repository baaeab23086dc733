"""Turn: one writer per conversation at a time (SPEC T1-T6), as a context manager.

``with conversation.turn(strategy="reject") as turn:`` begins a turn (``ConversationBusyError`` when
another one holds the conversation), heartbeats it with a ``LeaseRefresher`` (L5) while the block runs,
and ends it when the block exits, however it exits. Every write made through that ``Conversation``
inside the block carries the turn's token, so it lands only while the turn is current: after another
process interrupted it, or after it expired, writes answer ``ConflictError`` (``turn_superseded``,
``turn_expired``) and nothing lands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from .client import JSON, TurnStrategy
from .errors import ConflictError, LineageError, NotFoundError
from .refresher import LeaseRefresher

if TYPE_CHECKING:
    from .conversation import Conversation

#: Heartbeat refusals that mean the turn is no longer ours: the refresher stops trying.
_GONE = ("turn_superseded", "turn_ended", "turn_expired")
_DEFAULT_TTL_S = 300.0


class Turn:
    def __init__(
        self,
        conversation: Conversation,
        *,
        strategy: TurnStrategy = "reject",
        ttl_s: float | None = None,
        wait_s: float | None = None,
        refresher_wait: Callable[[float], bool] | None = None,
    ) -> None:
        self.conversation = conversation
        self.strategy: TurnStrategy = strategy
        self.ttl_s = _DEFAULT_TTL_S if ttl_s is None else ttl_s
        self.wait_s = wait_s
        self._refresher_wait = refresher_wait
        self._grant: JSON | None = None
        self._refresher: LeaseRefresher | None = None
        #: Why the heartbeat stopped early (``turn_superseded``…), or None while the turn is held.
        self.lost: str | None = None

    @property
    def turn_id(self) -> str:
        return str(self._held()["turnId"])

    @property
    def token(self) -> str:
        """The secret the turn's writes carry (``Turn-Token``); never log it."""
        return str(self._held()["turnToken"])

    @property
    def fence(self) -> int:
        return int(self._held()["fence"])

    def _held(self) -> JSON:
        if self._grant is None:
            raise RuntimeError("the turn has not begun (use it as `with conversation.turn() as turn:`)")
        return self._grant

    def _heartbeat(self) -> bool:
        try:
            self.conversation.client.heartbeat_turn(self.conversation.conversation_id, self._held(), ttl_s=self.ttl_s)
            return True
        except ConflictError as e:
            if e.code in _GONE:
                self.lost = e.code
                if self._refresher is not None:
                    self._refresher.stop()
            return False

    def __enter__(self) -> Turn:
        cid = self.conversation.ensure()
        self._grant = self.conversation.client.begin_turn(cid, strategy=self.strategy, ttl_s=self.ttl_s, wait_s=self.wait_s)
        self.conversation._turn_token = self.token
        self._refresher = LeaseRefresher(self._heartbeat, ttl_s=self.ttl_s, wait=self._refresher_wait).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.conversation._turn_token == self.token:
            self.conversation._turn_token = None
        if self._refresher is not None:
            self._refresher.stop()
        try:
            self.conversation.client.end_turn(self.conversation.conversation_id, self._held())
        except (ConflictError, NotFoundError):
            pass  # superseded, expired or the conversation deleted: the turn is not ours to end
        except LineageError:
            if exc[0] is None:
                raise  # the turn expires at its TTL anyway (T6); only a clean exit reports it
