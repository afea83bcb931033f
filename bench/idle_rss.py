"""Resident memory of the server process (VmRSS from /proc/PID/status), in MiB.

Checkpoints, one server pointed at the fake API:
  1. right after the `initialize` result (before `initialized`);
  2. `initialized` + 1 s idle  <- the target's measure ("idle after start"), target < 80 MiB.
     `initialized` starts importing the anthropic SDK in a worker thread, so this reading
     lands in the middle of that import (which takes seconds on this machine);
  3. after `tiller/listModels` answered (it awaits the SDK load): idle with the SDK in. The
     server gets there on its own a few seconds after start, prompt or not, so this is the
     steady idle state; it is held against the same target too;
  4. after one completed turn against the fake, + 1 s idle (also VmHWM, the peak).
For comparison, the same with the scripted provider (`provider: {kind: "scripted"}`), which
never loads the SDK: after `initialized` + 1 s, and after one scripted turn.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from _common import API_KEY, FakeMessagesAPI, Figure, fake_options, main, scratch, stderr_tail
from _lsp import TillerClient, rss_kib, thread_count

TARGET_MIB = 80.0
IDLE_SECONDS = 1.0


def mib(pid: int, key: str = "VmRSS") -> float:
    return rss_kib(pid)[key] / 1024


async def with_fake() -> list[Figure]:
    async with scratch() as s, FakeMessagesAPI(api_key=API_KEY) as api:
        client = await TillerClient.spawn(s.data_dir, s.stderr)
        try:
            await client.initialize(s.workspace, fake_options(api, s.data_dir))
            after_init = mib(client.pid)
            client.notify("initialized", {})
            await asyncio.sleep(IDLE_SECONDS)
            idle = mib(client.pid)
            threads_idle = thread_count(client.pid)
            await client.request("tiller/listModels", timeout=60)
            await asyncio.sleep(0.2)
            sdk_loaded = mib(client.pid)
            ended = await client.run("hello")
            if ended.params["outcome"] != "completed":
                raise RuntimeError(f"turn: {ended.params}")
            await asyncio.sleep(IDLE_SECONDS)
            after_turn = rss_kib(client.pid)
        except Exception:
            print(stderr_tail(s.stderr))
            raise
        finally:
            await client.close()
    print(f"  threads 1 s after initialized: {threads_idle} (the SDK import runs in one)")
    return [
        Figure("RSS after initialize result", after_init, "MiB"),
        Figure(
            "RSS idle after start (initialized + 1 s)",
            idle,
            "MiB",
            TARGET_MIB,
            note="target's measure; SDK import under way",
        ),
        Figure(
            "RSS idle, settled (SDK loaded by the warm-up, no turn yet)",
            sdk_loaded,
            "MiB",
            TARGET_MIB,
            note="steady state a few s after start",
        ),
        Figure("RSS after one completed turn + 1 s", after_turn["VmRSS"] / 1024, "MiB"),
        Figure("peak RSS (VmHWM) after one turn", after_turn["VmHWM"] / 1024, "MiB"),
    ]


async def with_script() -> list[Figure]:
    async with scratch() as s:
        script = s.root / "script.json"
        reply = {"content": [{"type": "text", "text": "hi"}], "chunkDelay": 0}
        script.write_text(json.dumps({"responses": [reply]}))
        options = {
            "provider": {"kind": "scripted", "script": str(Path(script))},
            "dataDir": str(s.data_dir),
            "toolBudget": 0,
        }
        client = await TillerClient.start(s.workspace, s.data_dir, options, s.stderr)
        try:
            await asyncio.sleep(IDLE_SECONDS)
            idle = mib(client.pid)
            ended = await client.run("hello")
            if ended.params["outcome"] != "completed":
                raise RuntimeError(f"scripted turn: {ended.params}")
            await asyncio.sleep(0.2)
            after_turn = mib(client.pid)
        except Exception:
            print(stderr_tail(s.stderr))
            raise
        finally:
            await client.close()
    return [
        Figure("scripted provider (no SDK): RSS idle after start", idle, "MiB"),
        Figure("scripted provider (no SDK): RSS after one turn", after_turn, "MiB"),
    ]


async def measure() -> list[Figure]:
    return [*await with_fake(), *await with_script()]


if __name__ == "__main__":
    main("idle RSS", measure)
