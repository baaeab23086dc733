"""Every route of functions/openapi.json through LineageClient, AsyncLineageClient and Conversation."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from conftest import chat
from session_lineage import AsyncLineageClient, ConflictError, LineageClient, NotFoundError, ValidationError


def test_session_routes_create_get_append_page_tail_pop_lineage_compress_delete(client: LineageClient) -> None:
    s = client.create_session(format="chat", source="pytest", metadata={"k": "v"})  # POST /sessions
    sid = s["sessionId"]
    assert s["format"] == "chat" and s["source"] == "pytest" and s["metadata"] == {"k": "v"}
    assert client.get_session(sid)["sessionId"] == sid  # GET /sessions/{id}
    r = client.append(sid, chat(12))  # POST /sessions/{id}/messages
    assert (r.appended, r.replayed, r.session["messageCount"]) == (12, False, 12)
    first = client.list_messages(sid, limit=5)  # GET /sessions/{id}/messages
    assert len(first["messages"]) == 5 and isinstance(first["nextCursor"], str)
    rest = client.list_messages(sid, limit=100, cursor=first["nextCursor"])
    assert first["messages"] + rest["messages"] == chat(12) and rest["nextCursor"] is None
    assert client.read_all(sid, page_size=4) == chat(12)
    assert client.tail(sid, 2) == chat(12)[-2:]
    popped = client.pop(sid)  # DELETE /sessions/{id}/messages/last
    assert popped["removed"] == chat(12)[-1] and popped["session"]["messageCount"] == 11
    rotated = client.compress(sid, mode="rotate")  # POST /sessions/{id}/compress
    assert rotated["outcome"] == "compressed" and rotated["previousSessionId"] == sid
    child = rotated["sessionId"]
    assert child != sid
    chain = client.lineage(child)  # GET /sessions/{id}/lineage
    assert [e["sessionId"] for e in chain["chain"]] == [sid, child] and chain["tip"] == child
    with pytest.raises(ConflictError) as ended:
        client.append(sid, chat(1))
    assert ended.value.code == "session_ended" and ended.value.live_session_id == child
    client.delete_session(child)  # DELETE /sessions/{id}
    with pytest.raises(NotFoundError):
        client.get_session(child)


def test_conversation_routes_put_get_list_patch_append_page_pop_lineage_compress_delete(client: LineageClient, conv_id: str) -> None:
    conv, created = client.put_conversation(conv_id, format="chat", source="pytest", metadata={"a": 1})  # PUT
    assert created and conv["conversationId"] == conv_id
    again, created_again = client.put_conversation(conv_id)
    assert not created_again and again["rootSessionId"] == conv["rootSessionId"]
    assert client.get_conversation(conv_id)["metadata"] == {"a": 1}  # GET
    assert client.update_conversation(conv_id, metadata={"b": 2})["metadata"] == {"b": 2}  # PATCH
    listed = client.list_conversations(limit=100)  # GET /conversations
    assert conv_id in [c["conversationId"] for c in listed["conversations"]]
    r = client.append_to_conversation(conv_id, chat(10))  # POST …/messages
    assert r.appended == 10 and r.session_id == conv["liveSessionId"]
    page = client.list_conversation_messages(conv_id, tail=3)  # GET …/messages
    assert page["messages"] == chat(10)[-3:]
    assert client.read_conversation(conv_id, page_size=3)[0] == chat(10)
    assert client.pop_conversation(conv_id)["removed"] == chat(10)[-1]  # DELETE …/messages/last
    out = client.compress_conversation(conv_id, mode="rotate")  # POST …/compress
    assert out["outcome"] == "compressed" and out["sessionId"] != conv["liveSessionId"]
    lin = client.conversation_lineage(conv_id)  # GET …/lineage
    assert lin["tip"] == out["sessionId"] and len(lin["chain"]) == 2
    assert client.get_conversation(conv_id)["liveSessionId"] == out["sessionId"]
    client.delete_conversation(conv_id)  # DELETE
    with pytest.raises(NotFoundError):
        client.get_conversation(conv_id)


def test_conversation_object_creates_on_first_use_and_follows_rotations(client: LineageClient, conv_id: str) -> None:
    conv = client.conversation(conv_id, source="pytest", metadata={"team": "py"})
    conv.append(chat(10))  # first use: PUT, then the append
    assert conv.created and conv.get()["metadata"] == {"team": "py"}
    assert conv.items() == chat(10) and conv.items(limit=4) == chat(10)[:4] and conv.tail(3) == chat(10)[-3:]
    assert conv.pop() == chat(10)[-1]
    rotated = conv.compress(mode="rotate")
    assert rotated["outcome"] == "compressed"
    conv.append(chat(1, start=100))  # lands on the live child, same conversation id
    lin = conv.lineage()
    assert lin["tip"] == rotated["sessionId"] and conv.items()[-1] == chat(1, start=100)[0]
    in_place = conv.compress(mode="in_place", keep_last=1)
    assert in_place["outcome"] in ("compressed", "noop")
    conv.delete()
    with pytest.raises(NotFoundError):
        client.get_conversation(conv_id)
    assert conv.items() == []  # the next use creates it again, empty, under the same id
    assert conv.pop() is None
    conv.delete()


def test_append_with_expected_count_lands_only_at_that_position(client: LineageClient, conv_id: str) -> None:
    conv = client.conversation(conv_id)
    conv.append(chat(2), expected_count=0)
    with pytest.raises(ConflictError) as e:
        conv.append(chat(1), expected_count=0)
    assert e.value.code == "count_mismatch" and e.value.message_count == 2
    conv.delete()


def test_a_caller_chosen_idempotency_key_applies_once(client: LineageClient, conv_id: str) -> None:
    conv = client.conversation(conv_id)
    key = f"k-{uuid.uuid4()}"
    first = conv.append(chat(3), idempotency_key=key)
    second = conv.append(chat(3), idempotency_key=key)
    assert not first.replayed and second.replayed and second.idempotency_key == key
    assert len(conv.items()) == 3
    conv.delete()


def test_X1_history_transactions_append_replace_replay_mismatch_and_reuse(client: LineageClient, conv_id: str) -> None:
    conv = client.conversation(conv_id, format="chat")
    first = conv.transaction("op-1", {"type": "append_items", "items": chat(3)})  # POST /conversations/{id}/transactions
    assert (first["appended"], first["session"]["messageCount"]) == (3, 3)
    # The same operation id with the same transaction replays: nothing is applied twice.
    assert client.apply_transaction(conv_id, "op-1", {"type": "append_items", "items": chat(3)})["appended"] == 3
    assert len(conv.items()) == 3
    replaced = conv.transaction("op-2", {"type": "replace_suffix", "expectedSuffix": chat(3)[-1:], "replacement": chat(2, start=10)})
    assert (replaced["removed"], replaced["appended"]) == (1, 2)
    assert conv.items() == chat(3)[:2] + chat(2, start=10)
    with pytest.raises(ConflictError) as mismatch:  # the expected suffix is not the live tail: nothing changes
        conv.transaction("op-3", {"type": "replace_suffix", "expectedSuffix": chat(1, start=99), "replacement": []})
    assert mismatch.value.code == "suffix_mismatch" and len(conv.items()) == 4
    with pytest.raises(ValidationError) as reused:  # the same id with another transaction
        conv.transaction("op-1", {"type": "append_items", "items": chat(1, start=77)})
    assert reused.value.code == "idempotency_key_reused" and len(conv.items()) == 4
    sid = client.get_conversation(conv_id)["liveSessionId"]
    on_session = client.apply_session_transaction(sid, "op-s", {"type": "append_items", "items": chat(1, start=30)})  # the session twin
    assert on_session["appended"] == 1 and conv.items()[-1] == chat(1, start=30)[0]
    conv.delete()


def test_async_client_has_the_same_surface(base_url: str, api_key: str, conv_id: str) -> None:
    async def main() -> None:
        c = AsyncLineageClient(base_url, api_key)
        s = await c.create_session(format="responses")
        sid = s["sessionId"]
        item = {"type": "message", "role": "user", "content": "hi"}
        assert (await c.append(sid, [item, item])).appended == 2
        assert (await c.get_session(sid))["messageCount"] == 2
        assert (await c.list_messages(sid, limit=1))["messages"] == [item]
        assert await c.tail(sid, 1) == [item] and await c.read_all(sid) == [item, item]
        assert (await c.pop(sid))["removed"] == item
        assert (await c.lineage(sid))["tip"] == sid
        assert (await c.compress(sid))["outcome"] in ("noop", "compressed", "skipped")
        await c.delete_session(sid)
        conv, created = await c.put_conversation(conv_id)
        assert created
        assert (await c.get_conversation(conv_id))["conversationId"] == conv_id
        assert (await c.update_conversation(conv_id, metadata={"x": 1}))["metadata"] == {"x": 1}
        assert "conversations" in await c.list_conversations(limit=5)
        await c.append_to_conversation(conv_id, chat(4))
        assert len((await c.list_conversation_messages(conv_id, limit=2))["messages"]) == 2
        assert (await c.read_conversation(conv_id))[0] == chat(4)
        assert (await c.pop_conversation(conv_id))["removed"] == chat(4)[-1]
        assert (await c.conversation_lineage(conv_id))["tip"] == conv["liveSessionId"]
        assert (await c.compress_conversation(conv_id, mode="rotate"))["outcome"] in ("compressed", "noop")
        tx = await c.apply_transaction(conv_id, "op-async", {"type": "append_items", "items": chat(1, start=60)})
        assert tx["appended"] == 1 and (await c.pop_conversation(conv_id))["removed"] == chat(1, start=60)[0]
        ac = c.conversation(conv_id)
        await ac.append(chat(1, start=50))
        assert (await ac.items())[-1] == chat(1, start=50)[0] and (await ac.tail(1)) == chat(1, start=50)
        assert (await ac.get())["conversationId"] == conv_id and "chain" in await ac.lineage()
        assert await ac.pop() == chat(1, start=50)[0]
        await ac.delete()

    asyncio.run(main())


def test_h2_branch_from_the_middle_with_its_edge_a_keyed_retry_makes_one_and_typed_errors(client: LineageClient, conv_id: str) -> None:
    client.put_conversation(conv_id, format="chat")
    client.append_to_conversation(conv_id, chat(6))
    new_id = f"{conv_id}.branch"
    b = client.branch(conv_id, new_id, from_seq=4, idempotency_key=f"k-{new_id}")  # POST …/branches
    edge = b["branchedFrom"]
    assert b["conversationId"] == new_id and b["messageCount"] == 4
    assert edge["conversationId"] == conv_id and edge["seq"] == 4
    assert client.branch(conv_id, new_id, from_seq=4, idempotency_key=f"k-{new_id}") == b
    assert client.read_conversation(new_id)[0] == chat(6)[:4]
    assert client.conversation_lineage(new_id)["branchedFrom"] == edge
    assert client.read_conversation(conv_id)[0] == chat(6)
    with pytest.raises(ConflictError) as taken:
        client.branch(conv_id, new_id)
    assert taken.value.code == "conversation_exists"
    with pytest.raises(ValidationError) as far:
        client.branch(conv_id, f"{new_id}.2", from_seq=7)
    assert far.value.code == "from_seq_out_of_range"
    a = asyncio.run(AsyncLineageClient.wrap(client).branch(conv_id, f"{new_id}.3"))
    assert a["messageCount"] == 6
