"""SPEC H1/H3: a conversation's whole history through LineageClient and AsyncLineageClient."""

from __future__ import annotations

import asyncio
import json

import pytest

from conftest import chat
from session_lineage import AsyncLineageClient, LineageClient, ValidationError

SUMMARY = [{"role": "user", "content": "the human asked"}, {"role": "assistant", "content": "SUMMARY"}]


def _compact(client: LineageClient, conv_id: str, mode: str) -> None:
    begun = client.begin_compaction(conv_id, mode=mode)  # type: ignore[arg-type]
    assert begun.attempt is not None
    assert client.commit_compaction(begun.attempt, SUMMARY)["outcome"] == "compressed"


def test_h1_history_after_in_place_and_rotation_every_item_in_order_summaries_flagged(client: LineageClient, conv_id: str, api_key: str) -> None:
    client.put_conversation(conv_id)
    client.append_to_conversation(conv_id, chat(6))
    _compact(client, conv_id, "in_place")
    client.append_to_conversation(conv_id, chat(2, 6))
    _compact(client, conv_id, "rotate")
    client.append_to_conversation(conv_id, chat(1, 8))
    entries = client.read_history(conv_id, page_size=3)
    assert [e["item"] for e in entries] == chat(6) + SUMMARY + chat(2, 6) + SUMMARY + chat(1, 8)
    assert [e.get("summary", False) for e in entries] == [False] * 6 + [True, True, False, False, True, True, False]
    assert all("compactedAt" in e for e in entries[:10]) and "compactedAt" not in entries[-1]
    first = client.history(conv_id, limit=2)
    assert first["entries"] == entries[:2] and isinstance(first["nextCursor"], str)
    root = entries[0]["sessionId"]
    twin = client.session_history(root, limit=100)
    assert twin["entries"] == entries[:10] and twin["nextCursor"] is None
    assert asyncio.run(AsyncLineageClient(client.base_url, api_key).read_history(conv_id)) == entries


def test_h3_conversation_retention_is_set_shown_and_bounded(client: LineageClient, conv_id: str) -> None:
    conv, created = client.put_conversation(conv_id, retention={"archivedSeconds": 120})
    assert created and conv["retention"] == {"archivedSeconds": 120}
    assert client.update_conversation(conv_id, retention={"endedSessionSeconds": 60})["retention"] == {
        "archivedSeconds": 120,
        "endedSessionSeconds": 60,
    }
    with pytest.raises(ValidationError) as over:
        client.update_conversation(conv_id, retention={"archivedSeconds": 10**8})
    assert over.value.code == "retention_over_tenant_limit"


def test_h5_export_then_import_round_trips_but_for_the_ids(client: LineageClient, conv_id: str) -> None:
    client.put_conversation(conv_id, metadata={"k": "v"})
    client.append_to_conversation(conv_id, chat(5))
    _compact(client, conv_id, "in_place")
    client.append_to_conversation(conv_id, chat(3, 5))
    _compact(client, conv_id, "rotate")
    original = client.export_conversation(conv_id, page_size=2)
    target = f"{conv_id}-copy"
    first = client.import_conversation(target, original, idempotency_key=f"k-{conv_id}")
    assert first["sessions"] == 2 and first["items"] == len(original.splitlines()) - 1
    assert client.import_conversation(target, original, idempotency_key=f"k-{conv_id}") == first
    copy = client.export_conversation(target).replace(f'"{target}"', f'"{conv_id}"')
    for old, new in first["sessionIds"].items():
        copy = copy.replace(new, old)
    assert [json.loads(line) for line in copy.splitlines()] == [json.loads(line) for line in original.splitlines()]
