"""session-lineage: the Python client of the session-lineage service (standard library only).

See README.md: LineageClient / AsyncLineageClient (every route), Conversation and its held
compaction (``with conversation.compaction() as attempt``, ``conversation.compact_with(engine)``),
LeaseRefresher (SPEC L5) and LineageSession (the OpenAI Agents SDK's Session protocol).
"""

from .aio import AsyncCompactionAttempt, AsyncConversation, AsyncLineageClient
from .client import AppendResult, BeginResult, HeldAttempt, LineageClient, new_idempotency_key
from .compaction import CompactionAttempt, CompactionResult
from .conversation import Conversation
from .errors import (
    AuthenticationError,
    ConflictError,
    ConversationBusyError,
    LineageError,
    NetworkError,
    NotFoundError,
    OutcomeUnknownError,
    RateLimitedError,
    UnavailableError,
    ValidationError,
)
from .refresher import LeaseRefresher
from .session import LineageSession
from .turns import Turn

__version__ = "0.1.0"

__all__ = [
    "AppendResult",
    "AsyncCompactionAttempt",
    "AsyncConversation",
    "AsyncLineageClient",
    "AuthenticationError",
    "BeginResult",
    "CompactionAttempt",
    "CompactionResult",
    "ConflictError",
    "Conversation",
    "ConversationBusyError",
    "HeldAttempt",
    "LeaseRefresher",
    "LineageClient",
    "LineageError",
    "LineageSession",
    "NetworkError",
    "NotFoundError",
    "OutcomeUnknownError",
    "RateLimitedError",
    "Turn",
    "UnavailableError",
    "ValidationError",
    "new_idempotency_key",
]
