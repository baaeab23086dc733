"""Turns through the Python client (issue 32, SPEC T1-T6): ``with conversation.turn()`` against the real
service: one writer at a time, fenced writes after an interrupt, rollback, the required policy, expiry,
heartbeats past the TTL and the turn ended on exit however the block exits."""

from __future__ import annotations

import time
import uuid

import pytest

from conftest import chat
from session_lineage import ConflictError, ConversationBusyError, LineageClient


def test_t1_t2_reject_a_second_writer_is_busy_and_named_the_turn_is_ended_on_exit(client: LineageClient, conv_id: str) -> None:
    a = client.conversation(conv_id)
    b = client.conversation(conv_id)
    with a.turn() as turn:
        with pytest.raises(ConversationBusyError) as busy:
            with b.turn():
                pass
        assert busy.value.active_turn is not None and busy.value.active_turn["turnId"] == turn.turn_id
        assert "turnToken" not in busy.value.active_turn
        assert busy.value.retry_after_s is not None
        current = client.current_turn(conv_id)
        assert current is not None and current["turnId"] == turn.turn_id and "turnToken" not in current
    assert client.current_turn(conv_id) is None
    with b.turn():  # granted now: the first one was ended on exit
        b.append(chat(1))


def test_t3_t2_interrupt_the_old_turns_writes_are_refused_what_it_wrote_stays(client: LineageClient, conv_id: str) -> None:
    a = client.conversation(conv_id)
    b = client.conversation(conv_id)
    with a.turn() as first:
        a.append([{"role": "user", "content": "from A"}])
        with b.turn("interrupt"):
            with pytest.raises(ConflictError) as refused:
                a.append([{"role": "user", "content": "late A"}])
            assert refused.value.code == "turn_superseded"
            with pytest.raises(ConflictError):
                a.transaction(str(uuid.uuid4()), {"type": "append_items", "items": [{"role": "user", "content": "late tx"}]})
            with pytest.raises(ConflictError):
                a.pop()
            b.append([{"role": "user", "content": "from B"}])
        assert first.lost is None or first.lost == "turn_superseded"
    assert [m["content"] for m in a.items()] == ["from A", "from B"]


def test_t2_rollback_removes_what_the_superseded_turn_appended(client: LineageClient, conv_id: str) -> None:
    a = client.conversation(conv_id)
    a.append([{"role": "user", "content": "before"}])
    b = client.conversation(conv_id)
    with a.turn():
        a.append([{"role": "assistant", "content": "half an answer"}])
        with b.turn("rollback"):
            b.append([{"role": "assistant", "content": "the answer"}])
    assert [m["content"] for m in a.items()] == ["before", "the answer"]


def test_t5_required_policy_a_write_without_a_turn_is_refused(client: LineageClient, conv_id: str) -> None:
    conv = client.conversation(conv_id)
    conv.ensure()
    client.update_conversation(conv_id, turns="required")
    with pytest.raises(ConflictError) as refused:
        conv.append(chat(1))
    assert refused.value.code == "turn_required"
    with conv.turn():
        conv.append(chat(1))
    assert len(conv.items()) == 1


def test_t6_l5_the_heartbeat_keeps_a_short_turn_past_its_ttl(client: LineageClient, conv_id: str) -> None:
    conv = client.conversation(conv_id)
    with conv.turn(ttl_s=5) as turn:
        time.sleep(7)  # past the first expiry: only the heartbeat (every 2.5 s) keeps it
        conv.append(chat(1))
        assert turn.lost is None
    assert len(conv.items()) == 1


def test_t6_an_abandoned_turn_expires_its_writes_answer_turn_expired(client: LineageClient, conv_id: str) -> None:
    a = client.conversation(conv_id)
    # A paused agent: after its first heartbeat its refresher stops (wait() answers "stop" at once).
    turn = a.turn(ttl_s=5, refresher_wait=lambda _s: True)
    turn.__enter__()
    try:
        time.sleep(6.5)
        b = client.conversation(conv_id)
        with b.turn():
            b.append([{"role": "user", "content": "next writer"}])
        with pytest.raises(ConflictError) as refused:
            a.append([{"role": "user", "content": "late"}])
        assert refused.value.code in ("turn_expired", "turn_superseded")
    finally:
        turn.__exit__(None, None, None)
    assert [m["content"] for m in a.items()] == ["next writer"]


def test_t1_an_exception_in_the_block_still_ends_the_turn(client: LineageClient, conv_id: str) -> None:
    conv = client.conversation(conv_id)
    with pytest.raises(ZeroDivisionError):
        with conv.turn():
            _ = 1 / 0
    assert client.current_turn(conv_id) is None


def test_t3_another_tenant_cannot_see_or_end_the_turn(client: LineageClient, other_key: str, base_url: str, conv_id: str) -> None:
    conv = client.conversation(conv_id)
    other = LineageClient(base_url, other_key)
    with conv.turn() as turn:
        from session_lineage import NotFoundError

        with pytest.raises(NotFoundError):
            other.current_turn(conv_id)
        with pytest.raises(NotFoundError):
            other.end_turn(conv_id, {"turnId": turn.turn_id, "turnToken": turn.token})
        assert client.current_turn(conv_id) is not None
