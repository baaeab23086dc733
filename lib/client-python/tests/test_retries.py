"""Retries as the TypeScript client makes them: the same Idempotency-Key and the same bytes after a
lost answer, network errors, 5xx and Retry-After; pop and in-place compress only when the service
said nothing was applied (SPEC A3)."""

from __future__ import annotations

import json
import socket

import pytest

from conftest import chat, error_body
from fault_proxy import FaultProxy
from session_lineage import LineageClient, NetworkError, OutcomeUnknownError, RateLimitedError, UnavailableError

MESSAGES = r"/conversations/[^/]+/messages$"


def test_A3_an_append_whose_answer_was_lost_is_retried_with_the_same_key_and_bytes_and_lands_once(
    proxied: LineageClient, proxy: FaultProxy, conv_id: str
) -> None:
    conv = proxied.conversation(conv_id)
    conv.ensure()
    proxy.drop("POST", MESSAGES)
    r = conv.append(chat(3))
    sent = proxy.requests("POST", MESSAGES)
    assert [s.action for s in sent] == ["dropped", "forwarded"]
    assert sent[0].headers["idempotency-key"] == sent[1].headers["idempotency-key"] == r.idempotency_key
    assert sent[0].body == sent[1].body and json.loads(sent[0].body) == {"messages": chat(3)}
    assert r.replayed and r.appended == 3  # the service answered the retry with the first response
    assert conv.items() == chat(3)  # applied once
    conv.delete()


def test_A3_a_create_whose_answer_was_lost_makes_one_session(proxied: LineageClient, proxy: FaultProxy, client: LineageClient) -> None:
    proxy.drop("POST", r"^/sessions$")
    s = proxied.create_session(source="retry-test")
    sent = proxy.requests("POST", r"^/sessions$")
    assert len(sent) == 2 and sent[0].headers["idempotency-key"] == sent[1].headers["idempotency-key"]
    assert sent[0].body == sent[1].body
    assert client.get_session(s["sessionId"])["source"] == "retry-test"
    client.delete_session(s["sessionId"])


def test_the_services_503_is_waited_out_with_its_retry_after_and_then_succeeds(proxied: LineageClient, proxy: FaultProxy, conv_id: str) -> None:
    conv = proxied.conversation(conv_id)
    conv.ensure()
    proxy.answer("POST", MESSAGES, 503, error_body("unavailable"), {"retry-after": "0"}, times=2)
    r = conv.append(chat(1))
    sent = proxy.requests("POST", MESSAGES)
    assert [s.action for s in sent] == ["answered", "answered", "forwarded"]
    assert len({s.headers["idempotency-key"] for s in sent}) == 1 and len({s.body for s in sent}) == 1
    assert not r.replayed and r.appended == 1
    conv.delete()


def test_a_retry_after_longer_than_the_policy_allows_goes_to_the_caller(proxied: LineageClient, proxy: FaultProxy, conv_id: str) -> None:
    conv = proxied.conversation(conv_id)
    conv.ensure()
    proxy.answer("GET", MESSAGES, 503, error_body("lease_unavailable"), {"retry-after": "120"})
    with pytest.raises(UnavailableError) as e:
        conv.items()
    assert e.value.retry_after_s == 120 and e.value.retryable and e.value.code == "lease_unavailable"
    assert len(proxy.requests("GET", MESSAGES)) == 1
    conv.delete()


def test_a_gateway_5xx_is_retried_for_a_read(proxied: LineageClient, proxy: FaultProxy, conv_id: str) -> None:
    conv = proxied.conversation(conv_id)
    conv.append(chat(2))
    proxy.answer("GET", MESSAGES, 502, b"<html>bad gateway</html>", {"content-type": "text/html"})
    assert conv.items() == chat(2)
    assert [s.action for s in proxy.requests("GET", MESSAGES)] == ["answered", "forwarded"]
    conv.delete()


def test_A6_a_pop_whose_answer_was_lost_is_not_repeated_and_is_outcome_unknown(
    proxied: LineageClient, proxy: FaultProxy, conv_id: str
) -> None:
    conv = proxied.conversation(conv_id)
    conv.append(chat(4))
    proxy.drop("DELETE", r"/messages/last$")
    with pytest.raises(OutcomeUnknownError) as e:
        conv.pop()
    assert e.value.code == "outcome_unknown"
    assert len(proxy.requests("DELETE", r"/messages/last$")) == 1  # never sent twice
    assert conv.items() == chat(3)  # exactly one item removed
    conv.delete()


def test_a_pop_refused_by_the_services_503_is_retried_and_removes_one_item(proxied: LineageClient, proxy: FaultProxy, conv_id: str) -> None:
    conv = proxied.conversation(conv_id)
    conv.append(chat(4))
    proxy.answer("DELETE", r"/messages/last$", 503, error_body("unavailable"), {"retry-after": "0"})
    assert conv.pop() == chat(4)[-1]
    assert [s.action for s in proxy.requests("DELETE", r"/messages/last$")] == ["answered", "forwarded"]
    assert conv.items() == chat(3)
    conv.delete()


def test_the_services_outcome_unknown_is_never_retried_for_a_pop(proxied: LineageClient, proxy: FaultProxy, conv_id: str) -> None:
    conv = proxied.conversation(conv_id)
    conv.append(chat(2))
    proxy.answer("DELETE", r"/messages/last$", 503, error_body("outcome_unknown"))
    with pytest.raises(OutcomeUnknownError):
        conv.pop()
    assert len(proxy.requests("DELETE", r"/messages/last$")) == 1
    conv.delete()


def test_an_in_place_compress_whose_answer_was_lost_is_not_repeated(proxied: LineageClient, proxy: FaultProxy, conv_id: str) -> None:
    conv = proxied.conversation(conv_id)
    conv.append(chat(12))
    proxy.drop("POST", r"/compress$")
    with pytest.raises(OutcomeUnknownError):
        conv.compress(mode="in_place")
    assert len(proxy.requests("POST", r"/compress$")) == 1
    conv.delete()


def test_a_rotation_whose_answer_was_lost_is_retried_and_adopted_one_child(proxied: LineageClient, proxy: FaultProxy, conv_id: str) -> None:
    conv = proxied.conversation(conv_id)
    conv.append(chat(12))
    proxy.drop("POST", r"/compress$")
    out = conv.compress(mode="rotate")
    assert len(proxy.requests("POST", r"/compress$")) == 2
    lin = conv.lineage()
    assert len(lin["chain"]) == 2 and out["sessionId"] == lin["tip"]  # I1: one child
    conv.delete()


def test_a_429_is_retried_after_its_retry_after_even_for_a_pop(proxied: LineageClient, proxy: FaultProxy, conv_id: str) -> None:
    conv = proxied.conversation(conv_id)
    conv.append(chat(2))
    proxy.answer("DELETE", r"/messages/last$", 429, error_body("rate_limited"), {"retry-after": "0"})
    assert conv.pop() == chat(2)[-1]
    assert len(proxy.requests("DELETE", r"/messages/last$")) == 2
    conv.delete()


def test_rate_limited_error_carries_retry_after_when_retries_run_out(proxy: FaultProxy, api_key: str, conv_id: str) -> None:
    c = LineageClient(proxy.url, api_key, max_retries=0)
    proxy.answer("GET", r"^/conversations", 429, error_body("rate_limited"), {"retry-after": "7"})
    with pytest.raises(RateLimitedError) as e:
        c.list_conversations()
    assert e.value.retry_after_s == 7 and e.value.status == 429 and e.value.retryable


def test_connection_refused_is_a_network_error_after_every_retry(api_key: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    c = LineageClient(f"http://127.0.0.1:{port}", api_key, max_retries=1)
    with pytest.raises(NetworkError) as e:
        c.list_conversations()
    assert not e.value.may_have_applied and not e.value.timed_out and "2 attempts" in str(e.value)
    # Refused means never sent: even a pop may go again, and it is not outcome_unknown.
    with pytest.raises(NetworkError):
        c.pop_conversation("x")


def test_a_timeout_is_a_network_error_that_may_have_applied(api_key: str) -> None:
    with socket.socket() as srv:  # accepts, never answers
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        c = LineageClient(f"http://127.0.0.1:{srv.getsockname()[1]}", api_key, timeout_s=0.2, max_retries=1)
        with pytest.raises(NetworkError) as e:
            c.get_conversation("x")
        assert e.value.timed_out and e.value.may_have_applied
