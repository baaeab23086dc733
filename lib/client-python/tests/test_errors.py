"""Each error class, from the real service where it can answer it (F1's `{error: {code, message}}`)."""

from __future__ import annotations

import pytest

from conftest import chat
from session_lineage import (
    AuthenticationError,
    ConflictError,
    LineageClient,
    LineageError,
    NotFoundError,
    ValidationError,
)


def test_not_found_for_unknown_and_other_tenants_conversations(client: LineageClient, base_url: str, other_key: str, conv_id: str) -> None:
    with pytest.raises(NotFoundError) as e:
        client.get_conversation(conv_id)
    assert e.value.status == 404 and e.value.code == "not_found" and e.value.request_id and not e.value.retryable
    client.put_conversation(conv_id)
    other = LineageClient(base_url, other_key)
    with pytest.raises(NotFoundError):  # F2: another tenant's conversation does not exist for it
        other.get_conversation(conv_id)
    client.delete_conversation(conv_id)


def test_authentication_error_for_a_bad_key(base_url: str) -> None:
    with pytest.raises(AuthenticationError) as e:
        LineageClient(base_url, "slk_not-a-key").list_conversations()
    assert e.value.status == 401 and e.value.code == "unauthorized" and isinstance(e.value, LineageError)


def test_validation_error_names_the_field(client: LineageClient, conv_id: str) -> None:
    conv = client.conversation(conv_id)
    with pytest.raises(ValidationError) as e:
        conv.append([{"role": "user", "content": "ok"}, {"role": "nobody", "content": "x"}])
    assert e.value.status == 400 and e.value.code == "invalid_request" and e.value.field is not None
    assert e.value.field.startswith("messages[1]")
    assert e.value.idempotency_key is not None  # the failed append's key, still good to retry with
    conv.delete()


def test_validation_error_for_a_reused_idempotency_key(client: LineageClient, conv_id: str) -> None:
    conv = client.conversation(conv_id)
    conv.append(chat(1), idempotency_key="same-key")
    with pytest.raises(ValidationError) as e:
        conv.append(chat(2), idempotency_key="same-key")
    assert e.value.status == 422 and e.value.code == "idempotency_key_reused"
    conv.delete()


def test_conflict_error_carries_live_session_id_and_message_count(client: LineageClient, conv_id: str) -> None:
    conv = client.conversation(conv_id)
    conv.append(chat(12))
    root = conv.get()["liveSessionId"]
    with pytest.raises(ConflictError) as mismatch:
        conv.append(chat(1), expected_count=3)
    assert mismatch.value.code == "count_mismatch" and mismatch.value.message_count == 12
    child = conv.compress(mode="rotate")["sessionId"]
    with pytest.raises(ConflictError) as ended:
        client.append(root, chat(1))
    assert ended.value.status == 409 and ended.value.code == "session_ended" and ended.value.live_session_id == child
    with pytest.raises(ConflictError) as fmt:
        client.put_conversation(conv_id, format="responses")
    assert fmt.value.code == "format_mismatch"
    conv.delete()


def test_values_json_cannot_carry_are_refused_before_sending(client: LineageClient) -> None:
    with pytest.raises(TypeError):
        client.append("never-sent", [{"role": "user", "content": float("nan")}])
    with pytest.raises(TypeError):
        client.append("never-sent", [{"role": "user", "content": b"bytes"}])
