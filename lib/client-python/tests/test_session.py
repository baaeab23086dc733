"""LineageSession against the OpenAI Agents SDK for Python's documented Session protocol:
session_id, async get_items(limit=None), add_items(items), pop_item(), clear_session()."""

from __future__ import annotations

import asyncio
import inspect
import threading
import uuid
from typing import Any

from session_lineage import AsyncLineageClient, LineageClient, LineageSession

PROTOCOL = ("get_items", "add_items", "pop_item", "clear_session")


def msg(role: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": text}


def fn_call(i: int) -> list[dict[str, Any]]:
    return [
        {"type": "function_call", "call_id": f"c{i}", "name": "lookup", "arguments": '{"q": 1}'},
        {"type": "function_call_output", "call_id": f"c{i}", "output": "42"},
    ]


def test_it_has_the_protocols_shape() -> None:
    s = LineageSession(LineageClient("http://127.0.0.1:9", "k"))
    assert isinstance(s.session_id, str) and uuid.UUID(s.session_id)  # a random UUID when not given
    for name in PROTOCOL:
        assert inspect.iscoroutinefunction(getattr(s, name)), name
    assert list(inspect.signature(s.get_items).parameters) == ["limit"]
    assert inspect.signature(s.get_items).parameters["limit"].default is None
    assert list(inspect.signature(s.add_items).parameters) == ["items"]
    assert LineageSession(LineageClient("http://127.0.0.1:9", "k"), "mine").session_id == "mine"


def test_the_sdk_memory_session_behaviour_add_get_limit_pop_clear(client: LineageClient) -> None:
    async def main() -> None:
        s = LineageSession(client, f"py-s-{uuid.uuid4()}")
        assert await s.get_items() == []  # a new session is empty
        assert await s.pop_item() is None
        items = [msg("user", "hello"), *fn_call(1), msg("assistant", "hi there")]
        await s.add_items(items)
        await s.add_items([])  # nothing to add: nothing sent
        assert await s.get_items() == items  # deep-equal, in order
        assert await s.get_items(limit=2) == items[-2:]  # the latest `limit`, in order
        assert await s.get_items(limit=100) == items
        assert await s.get_items(limit=0) == []
        assert await s.pop_item() == items[-1]
        assert await s.get_items() == items[:-1]
        await s.clear_session()
        assert await s.get_items() == []  # cleared, same id, usable again
        await s.add_items([msg("user", "again")])
        assert await s.get_items() == [msg("user", "again")]
        await s.clear_session()
        await s.clear_session()  # clearing a cleared session is fine

    asyncio.run(main())


def test_session_id_is_stable_across_rotations_and_two_sessions_share_the_conversation(base_url: str, api_key: str) -> None:
    async def main() -> None:
        sid = f"py-s-{uuid.uuid4()}"
        a = LineageSession(AsyncLineageClient(base_url, api_key), sid)
        b = LineageSession(LineageClient(base_url, api_key), sid)
        await a.add_items([msg("user", f"turn {i} " + "words " * 40) for i in range(12)])
        out = a.conversation.compress(mode="rotate")
        assert out["outcome"] == "compressed"
        await b.add_items([msg("user", "after the rotation")])  # the live child, no 409
        assert a.session_id == b.session_id == sid
        assert (await a.get_items(limit=1)) == [msg("user", "after the rotation")]
        await a.clear_session()

    asyncio.run(main())


def test_add_items_is_atomic_and_idempotent_calls_run_in_order(client: LineageClient) -> None:
    async def main() -> None:
        s = LineageSession(client, f"py-s-{uuid.uuid4()}")
        # Concurrent calls on one object land in call order, each whole.
        await asyncio.gather(*(s.add_items([msg("user", f"{i}a"), msg("assistant", f"{i}b")]) for i in range(5)))
        got = await s.get_items()
        assert got == [m for i in range(5) for m in (msg("user", f"{i}a"), msg("assistant", f"{i}b"))]
        await s.clear_session()

    asyncio.run(main())


def test_run_compaction_with_an_engine_compacts_under_a_held_attempt_or_with_the_service(client: LineageClient) -> None:
    calls: list[int] = []

    def engine(messages: list[dict[str, Any]], cancelled: threading.Event) -> list[dict[str, Any]]:
        calls.append(len(messages))
        return [msg("user", "summary of everything"), messages[-1]]

    async def main() -> None:
        s = LineageSession(client, f"py-s-{uuid.uuid4()}")
        await s.add_items([msg("user", f"turn {i} " + "words " * 40) for i in range(12)])
        assert await s.run_compaction() is None  # no engine: the service's own
        if not _held_routes(client):
            return
        s.compaction_engine = engine
        r = await s.run_compaction()
        assert r is not None and r.outcome == "compressed" and len(calls) == 1
        assert await s.get_items() == r.messages
        await s.clear_session()

    asyncio.run(main())


def _held_routes(client: LineageClient) -> bool:
    from test_held_compaction import held_routes_available

    return held_routes_available(client)


def _long(conv_id: str, client: LineageClient) -> list[dict[str, Any]]:
    """A conversation over one attempt's bound (COMPACTION_ATTEMPT_MAX_BYTES, 4 MiB by default): 6 x ~0.9 MB."""
    items = [msg("user", f"part {i} " + "lorem ipsum dolor sit amet " * 33_000) for i in range(6)]
    conv = client.conversation(conv_id, format="responses")
    for item in items:
        conv.append([item])
    return items


def test_P6_run_compaction_goes_on_while_the_service_answers_partial(client: LineageClient, conv_id: str) -> None:
    async def main() -> None:
        _long(conv_id, client)
        s = LineageSession(client, conv_id)
        answers: list[dict[str, Any]] = []
        compress = s.conversation.compress

        def counted(*a: Any, **kw: Any) -> dict[str, Any]:
            body = compress(*a, **kw)
            answers.append(body)
            return body

        setattr(s.conversation, "compress", counted)
        assert await s.run_compaction() is None
        # More than one bounded part, each answered partial but the last, which is not.
        assert len(answers) >= 2, answers
        assert all(a["outcome"] == "compressed" and a.get("partial") is True for a in answers[:-1])
        assert answers[-1].get("partial") is not True  # the last part: compressed, or noop when what is left is small
        assert len(await s.get_items()) < 6
        await s.clear_session()

    asyncio.run(main())


def test_P6_run_compaction_with_an_engine_calls_it_once_per_part_until_done(client: LineageClient, conv_id: str) -> None:
    async def main() -> None:
        items = _long(conv_id, client)
        seen: list[int] = []

        def engine(messages: list[dict[str, Any]], cancelled: threading.Event) -> list[dict[str, Any]]:
            seen.append(len(messages))
            return [msg("assistant", f"summary of {len(messages)} items")]

        s = LineageSession(client, conv_id, compaction_engine=engine)
        result = await s.run_compaction()
        assert result is not None and result.outcome == "compressed" and result.body.get("partial") is not True
        assert len(seen) >= 2 and all(n < len(items) for n in seen), seen  # parts, never the whole 5 MB at once
        live = await s.get_items()
        # The last summary is there; what is left is smaller than the input (C8 may keep one real user turn).
        assert any(i["role"] == "assistant" and str(i["content"]).startswith("summary of") for i in live), live
        assert len(live) < len(items)
        await s.clear_session()

    asyncio.run(main())
