#!/usr/bin/env python3
"""An agent keeping its history in session-lineage, with a deterministic "model", one tool and its
own compactor (no network but the service, no model key).

    LINEAGE_BASE_URL=http://127.0.0.1:3000 LINEAGE_API_KEY=slk_... python3 examples/agent.py

Six turns through LineageSession (the Agents SDK's Session protocol); after turn 3 the agent
compacts the conversation with its own engine under a held attempt (rotating it to a child: the
conversation id stays). It prints the lineage and the live transcript, checks them, and exits 1
when something is off. `npm run example:python` runs it against a service it starts.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import uuid
from typing import Any

from session_lineage import AsyncLineageClient, LineageError, LineageSession, NotFoundError

QUESTIONS = [
    "How many words are in 'the quick brown fox'?",
    "And in 'jumps over the lazy dog'?",
    "Count the words of 'session lineage never forks'.",
    "How many in 'one two three four five six'?",
    "What about 'hello'?",
    "Last one: 'compaction keeps the human turn'.",
]
TURNS = len(QUESTIONS)
Item = dict[str, Any]


def word_count(text: str) -> int:
    """The agent's one tool."""
    return len(text.split())


def quoted(question: str) -> str:
    return question.split("'")[1] if "'" in question else question


def model(turn: int, history: list[Item], question: str) -> list[Item]:
    """A deterministic "model": it calls the tool, then answers from the tool's output. It also says how
    much history it was given, so the transcript shows the compaction at work."""
    call_id = f"call_{turn}"
    text = quoted(question)
    call = {"type": "function_call", "call_id": call_id, "name": "word_count", "arguments": json.dumps({"text": text})}
    output = {"type": "function_call_output", "call_id": call_id, "output": str(word_count(text))}
    answer = {
        "type": "message",
        "role": "assistant",
        "content": f"[turn {turn}] '{text}' is {word_count(text)} word(s) long (I saw {len(history)} earlier items).",
    }
    return [call, output, answer]


def compactor(messages: list[Item], cancelled: threading.Event) -> list[Item]:
    """The agent's own compressor: a summary of everything but the last turn, then the last turn as it is
    (a tool call stays with its result)."""
    last_user = max(i for i, m in enumerate(messages) if m.get("type") == "message" and m.get("role") == "user")
    earlier = messages[:last_user]
    answers = [m["content"] for m in earlier if m.get("role") == "assistant"]
    summary = {"type": "message", "role": "assistant", "content": f"Summary of {len(earlier)} items: " + " ".join(answers)}
    return [summary, *messages[last_user:]]


async def compact(session: LineageSession) -> str:
    """Compacts with the agent's own engine under a held attempt (the service's lease and fence)."""
    try:
        result = await session.run_compaction()
        return result.outcome if result else "none"
    except NotFoundError as e:
        if "no route" not in str(e):
            raise
        # A service from before held compactions (issue 29): its own engine compacts instead.
        print("note: this service has no held compactions; the service's own engine compacts instead")
        out = await asyncio.to_thread(session.conversation.compress, "rotate")
        return str(out["outcome"])


async def run(base_url: str, api_key: str) -> list[str]:
    client = AsyncLineageClient(base_url, api_key)
    session = LineageSession(client, f"example-agent-{uuid.uuid4()}", compaction_engine=compactor, compaction_mode="rotate")
    problems: list[str] = []
    compacted = "none"
    try:
        for turn, question in enumerate(QUESTIONS, start=1):
            history = await session.get_items()
            user = {"type": "message", "role": "user", "content": question}
            await session.add_items([user, *model(turn, history, question)])
            if turn == 3:
                compacted = await compact(session)
                print(f"after turn 3: {compacted}")
        items = await session.get_items()
        lineage = await asyncio.to_thread(session.conversation.lineage)
        print(f"conversation {session.session_id}: {len(lineage['chain'])} session(s), tip {lineage['tip']}")
        for item in items:
            print("  ", json.dumps(item)[:140])
        if compacted != "compressed":
            problems.append(f"the compaction after turn 3 did not compress: {compacted}")
        if len(lineage["chain"]) != 2 or lineage["chain"][0]["endReason"] != "compression":
            problems.append(f"expected the root rotated to one child, got {lineage['chain']}")
        if not any("Summary of" in str(i.get("content")) for i in items):
            problems.append("the live transcript has no summary")
        if f"[turn {TURNS}]" not in str(items[-1].get("content")):
            problems.append(f"the transcript does not end with turn {TURNS}: {items[-1]}")
        if await session.get_items(limit=3) != items[-3:]:
            problems.append("get_items(limit=3) is not the latest three items")
        popped = await session.pop_item()
        if popped != items[-1] or await session.get_items() != items[:-1]:
            problems.append("pop_item did not remove exactly the last item")
    finally:
        await session.clear_session()
    return problems


def main() -> int:
    base_url, api_key = os.environ.get("LINEAGE_BASE_URL"), os.environ.get("LINEAGE_API_KEY")
    if not base_url or not api_key:
        print("set LINEAGE_BASE_URL and LINEAGE_API_KEY (or run `npm run example:python`)", file=sys.stderr)
        return 2
    try:
        problems = asyncio.run(run(base_url, api_key))
    except LineageError as e:
        print(f"example agent FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    if problems:
        print("example agent FAILED:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    print(f"example agent passed: {TURNS} turns, the conversation compacted (rotated) after turn 3")
    return 0


if __name__ == "__main__":
    sys.exit(main())
