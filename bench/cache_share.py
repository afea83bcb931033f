"""How much of each step's input is read from the prompt cache, over a 30-step turn.

The fake API answers one turn with 29 `read_file` calls of a small file (one per response)
and then a final text: 30 model requests. It computes `usage` the way the API does
(`tests/fakeapi.py`, `PromptCache`): the prompt is tools, system, messages; each
`cache_control` breakpoint writes the prefix up to it; a breakpoint reads the longest prefix
written before that ends at most 20 blocks back. So the figures measure where Tiller puts its
breakpoints (`tiller.model.provider.api_params`), not the SDK or the fake.

    cache-read share of step n = cache_read / (input + cache_read + cache_creation)

Target: >= 90 % on average from step 2 on (step 1 has nothing to read). Printed per step, then
the mean and the minimum from step 2 on; the figure with a target is the uncached rest
(input + cache writes), <= 10 %.

A second, wide turn (no target) checks the 20-block lookback: 6 responses of 12 parallel
`read_file` calls each (24 new blocks per step), then the answer; with only a breakpoint on
the tail, each step would read only tools and system from cache. Its share stays lower
by nature: each step adds 24 blocks that must be written once.

The fake's minimum cacheable prefix is 1024 tokens (the API's for Sonnet-class models);
token counts are its estimate (JSON length / 4).
"""

from __future__ import annotations

from typing import Any

from _common import (
    API_KEY,
    FakeMessagesAPI,
    Figure,
    fake_options,
    main,
    scratch,
    stderr_tail,
    text,
    tool_results_in,
    tool_use,
)
from _lsp import TillerClient

STEPS = 30  # model requests in the turn: 29 tool calls, then the answer
WIDE_STEPS = 7  # model requests in the wide turn: 6 x 12 calls, then the answer
WIDE_CALLS = 12
MODEL = "claude-sonnet-5-5"
TARGET_SHARE = 90.0
JSON = dict[str, Any]


def next_step(body: JSON) -> JSON:
    done = tool_results_in(body)
    if done < STEPS - 1:
        return {"content": [tool_use("read_file", f"toolu_step_{done}", path="notes.txt")]}
    return {"content": [text(f"Read it {done} times; it says hello.")]}


def next_wide_step(body: JSON) -> JSON:
    done = tool_results_in(body)
    if done < (WIDE_STEPS - 1) * WIDE_CALLS:
        calls = [
            tool_use("read_file", f"toolu_wide_{done + n}", path="notes.txt")
            for n in range(WIDE_CALLS)
        ]
        return {"content": calls}
    return {"content": [text("Done reading.")]}


def share(usage: JSON) -> tuple[float, int]:
    """(cache-read share in %, total input tokens) of one response's usage."""
    read = int(usage.get("cache_read_input_tokens") or 0)
    total = (
        int(usage.get("input_tokens") or 0)
        + read
        + int(usage.get("cache_creation_input_tokens") or 0)
    )
    return (100.0 * read / total if total else 0.0), total


def breakpoints(body: JSON) -> int:
    blocks: list[Any] = [*(body.get("tools") or [])]
    system = body.get("system")
    if isinstance(system, list):
        blocks += system
    for message in body.get("messages", []):
        if isinstance(message.get("content"), list):
            blocks += message["content"]
    return sum(1 for block in blocks if isinstance(block, dict) and "cache_control" in block)


async def run_turn(enqueue: list[Any], prompt: str) -> list[tuple[float, int, int, JSON]]:
    """Run one turn on a fresh server and fake; per model request: (read share %, total
    input, breakpoints, usage)."""
    async with scratch() as s, FakeMessagesAPI(api_key=API_KEY, cache_min_tokens=1024) as api:
        (s.workspace / "notes.txt").write_text("hello\n" * 20)
        options = fake_options(api, s.data_dir, model=MODEL)
        client = await TillerClient.start(s.workspace, s.data_dir, options, s.stderr)
        try:
            api.enqueue(*enqueue)
            ended = await client.run(prompt, timeout=120)
        except Exception:
            print(stderr_tail(s.stderr))
            raise
        finally:
            await client.close()
        if ended.params.get("outcome") != "completed":
            print(stderr_tail(s.stderr))
            raise RuntimeError(f"turn ended {ended.params}")
    served = api.message_requests()
    if len(served) != len(enqueue):
        raise RuntimeError(f"expected {len(enqueue)} model requests, saw {len(served)}")
    rows = []
    for request in served:
        usage = request.usage or {}
        read_share, total = share(usage)
        rows.append((read_share, total, breakpoints(request.body), usage))
    return rows


def print_rows(rows: list[tuple[float, int, int, JSON]]) -> None:
    print("  step  input  cache_read  cache_write  total  read share  breakpoints")
    for step, (read_share, total, marks, usage) in enumerate(rows, start=1):
        print(
            f"  {step:4d}  {usage.get('input_tokens', 0):5d}  "
            f"{usage.get('cache_read_input_tokens', 0):10d}  "
            f"{usage.get('cache_creation_input_tokens', 0):11d}  {total:5d}  "
            f"{read_share:9.1f} %  {marks:11d}"
        )


async def measure() -> list[Figure]:
    rows = await run_turn([next_step] * STEPS, "read notes.txt over and over")
    print(f"  {STEPS}-step turn, one read_file per step:")
    print_rows(rows)
    wide = await run_turn([next_wide_step] * WIDE_STEPS, "read notes.txt many times at once")
    print(f"  wide turn, {WIDE_CALLS} read_file calls per step:")
    print_rows(wide)
    later = [row[0] for row in rows[1:]]
    mean = sum(later) / len(later)
    wide_later = [row[0] for row in wide[1:]]
    note = f"{MODEL}, steps 2-{STEPS}"
    return [
        Figure("cache-read share of input, mean", mean, "%", note=f"{note}; target >= 90 %"),
        Figure("cache-read share of input, lowest step", min(later), "%", note=note),
        Figure("input not read from cache, mean", 100.0 - mean, "%", 100.0 - TARGET_SHARE, "<="),
        Figure(
            "wide turn: cache-read share of input, mean",
            sum(wide_later) / len(wide_later),
            "%",
            note=f"steps 2-{WIDE_STEPS}, {WIDE_CALLS} calls per step",
        ),
    ]


if __name__ == "__main__":
    main("cache-read share over a 30-step turn", measure)
