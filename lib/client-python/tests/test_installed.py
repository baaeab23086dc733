"""The package as users get it: the built wheel, typed, standard library only."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import sys
from pathlib import Path

import pytest

import session_lineage

PACKAGE = Path(session_lineage.__file__).parent


def test_the_package_under_test_is_the_installed_wheel() -> None:
    if os.environ.get("LINEAGE_EXPECT_INSTALLED") != "1":
        pytest.skip("run from the sources (LINEAGE_EXPECT_INSTALLED is not 1)")
    assert PACKAGE.is_relative_to(sys.prefix) and "site-packages" in PACKAGE.parts
    assert importlib.metadata.version("session-lineage") == session_lineage.__version__


def test_it_is_typed_with_py_typed() -> None:
    assert (PACKAGE / "py.typed").is_file()


def test_it_imports_nothing_beyond_the_standard_library() -> None:
    if os.environ.get("LINEAGE_EXPECT_INSTALLED") == "1":
        assert not importlib.metadata.requires("session-lineage")
    for source in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] in sys.stdlib_module_names or name.split(".")[0] == "__future__", f"{source.name}: {name}"


def test_the_public_api_has_the_names_the_issue_gives() -> None:
    for name in (
        "LineageClient",
        "AsyncLineageClient",
        "LineageError",
        "NotFoundError",
        "ConflictError",
        "ValidationError",
        "RateLimitedError",
        "UnavailableError",
        "OutcomeUnknownError",
        "Conversation",
        "CompactionResult",
        "LeaseRefresher",
        "LineageSession",
    ):
        assert hasattr(session_lineage, name), name
