"""Fixtures: the service under test comes from the environment (LINEAGE_BASE_URL, LINEAGE_API_KEY,
LINEAGE_API_KEY_OTHER), set by test/integration/client-python/python-client.test.ts or
`npm run example:python -- python3 -m pytest lib/client-python/tests`."""

from __future__ import annotations

import json
import os
import uuid
from typing import Iterator

import pytest

from fault_proxy import FaultProxy
from session_lineage import LineageClient


def _env(name: str) -> str:
    v = os.environ.get(name)
    if not v:
        pytest.skip(f"{name} is not set: run through npm test (test/integration/client-python) or npm run example:python -- <pytest>")
    return v


@pytest.fixture(scope="session")
def base_url() -> str:
    return _env("LINEAGE_BASE_URL")


@pytest.fixture(scope="session")
def api_key() -> str:
    return _env("LINEAGE_API_KEY")


@pytest.fixture(scope="session")
def other_key() -> str:
    return _env("LINEAGE_API_KEY_OTHER")


@pytest.fixture
def client(base_url: str, api_key: str) -> LineageClient:
    return LineageClient(base_url, api_key)


@pytest.fixture
def proxy(base_url: str) -> Iterator[FaultProxy]:
    p = FaultProxy(base_url)
    yield p
    p.close()


@pytest.fixture
def proxied(proxy: FaultProxy, api_key: str) -> LineageClient:
    """A client whose requests go through the fault proxy."""
    return LineageClient(proxy.url, api_key)


@pytest.fixture
def conv_id() -> str:
    return f"py-{uuid.uuid4()}"


def chat(n: int, start: int = 0) -> list[dict[str, object]]:
    """n alternating user/assistant chat messages with some bulk, so compaction has something to do."""
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}: " + "lorem ipsum dolor sit amet " * 12}
        for i in range(start, start + n)
    ]


def error_body(code: str, message: str = "made up by the test proxy") -> bytes:
    return json.dumps({"error": {"code": code, "message": message}}).encode()
