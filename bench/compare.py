"""Tiller side by side with Claude Code (and a bare SDK loop) against the same fake API.

Every figure is taken where both agents can be seen the same way: at the fake Messages API
(when each model request arrives) and on the process (wall time, peak RSS from ``wait4``).
Runs are interleaved A/B (the order flips every round) and the median of ``--rounds`` is
printed with the ratio Tiller / Claude Code.

Scenarios (each run is a fresh process: what a user waits for):

- ``hello``: a one-shot ``tiller run hello`` / ``claude -p hello``, whole process wall, spawn ->
  first model request at the fake, peak RSS of the largest process (``ru_maxrss``);
- ``bash8``: one response with 8 read-only ``sleep 0.5`` commands, then 8 more, then text.
  Step wall = request k+1 arrives - request k arrived (includes the fake's few ms of
  streaming): the first step on a fresh process, then the second (warm). Floor 0.5 s;
- ``steps30``: 30 steps each reading one tiny file, then text; the median step (request to
  request, steps 2-30). The bare SDK loop (``--bare-loop``: ``AsyncAnthropic.messages.stream``,
  read the file, append the result, again) runs as a process of its own on the same fake;
- ``server``: Tiller's server only (Claude Code has no server mode): spawn -> ``initialize``
  result, spawn -> first ``textDelta`` for a prompt sent right after ``initialized`` and for
  one sent 1 s after it (the VS Code case; also prompt -> first ``textDelta``);
- ``acp``: ``tiller acp``: spawn -> ``initialize`` answered, first prompt -> model request.

Tiller's columns (the warm start, ``tiller.warm``): ``cold`` spawns plainly
(``TILLER_WARM=0``); ``1st use`` (``hello``) has the warm start on but no template yet (it
spawns, and starts one as it ends: what the warm start costs a first start); ``warm`` is served
by a server forked from a template of the bench's own (a private ``XDG_RUNTIME_DIR``).

Claude Code is optional: ``npm install --prefix /tmp/cc @anthropic-ai/claude-code`` (never a
dependency of this project). It is found at ``--claude PATH``, ``$CLAUDE_BIN``,
``/tmp/cc/node_modules/.bin/claude`` or ``claude`` on PATH; else its column says
"not installed". It runs with ``HOME`` in a scratch folder, ``ANTHROPIC_BASE_URL`` at the fake,
a dummy ``ANTHROPIC_API_KEY``, non-essential traffic off, and ``--allowedTools Bash Read``.
The fake tolerates the ``role: "system"`` messages Claude Code 2.1 puts in its history (the
real API takes them; ``tests/fakeapi.py`` refuses them, so this script drops them before its
validation).

    uv run python bench/compare.py                       # all scenarios, 5 rounds
    uv run python bench/compare.py --rounds 3 --only hello bash8
    git archive REV | tar -x -C /tmp/base                # then a 'before' column:
    uv run python bench/compare.py --baseline /tmp/base/server

``--baseline SRC`` runs Tiller a second time from another source tree (``PYTHONPATH=SRC``,
same venv), interleaved with the current one: before/after figures taken under the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anthropic

from _common import FakeMessagesAPI, allowed_once, machine_note, median, text, tool_use
from _lsp import SERVER_COMMAND, TillerClient

JSON = dict[str, Any]
MODEL = "claude-bench-1"
API_KEY = "bench-key"
SCENARIOS = ("hello", "bash8", "steps30", "server", "acp")
STEPS = 30
SLEEPS = 8
TILLER = (str(Path(sys.executable).with_name("tiller")),)  # the console script a user runs
CLAUDE_CANDIDATES = ("/tmp/cc/node_modules/.bin/claude",)


# --- the fake, tolerant of Claude Code's history ----------------------------------------------

fakeapi = sys.modules[FakeMessagesAPI.__module__]  # tests.fakeapi
_validate = fakeapi.validate_messages_request


def _tolerant_validate(body: JSON, **options: Any) -> str | None:
    messages = [m for m in body.get("messages", []) if not _is_system_message(m)]
    problem: str | None = _validate({**body, "messages": messages}, **options)
    return problem


def _is_system_message(message: object) -> bool:
    return isinstance(message, dict) and message.get("role") == "system"


fakeapi.validate_messages_request = _tolerant_validate  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Dialect:
    """How one agent names the tools the scenarios use."""

    bash: str
    read: str
    read_key: str
    bash_extra: Mapping[str, str] = field(default_factory=dict)


TILLER_TOOLS = Dialect(bash="bash", read="read_file", read_key="path")
CLAUDE_TOOLS = Dialect(
    bash="Bash", read="Read", read_key="file_path", bash_extra={"description": "Wait"}
)


@dataclass
class Model:
    """A stateless model for one scenario; notes when each main request arrived."""

    scenario: str
    tiny_file: Path
    arrivals: list[float] = field(default_factory=list)
    side_requests: int = 0

    def __call__(self, body: JSON) -> JSON:
        now = time.perf_counter()
        names = {t.get("name") for t in body.get("tools", []) if isinstance(t, dict)}
        dialect = next((d for d in (TILLER_TOOLS, CLAUDE_TOOLS) if d.bash in names), None)
        if dialect is None:  # a side request (a title, a quota probe): not part of the loop
            self.side_requests += 1
            return {"content": [text("ok")]}
        self.arrivals.append(now)
        history = body.get("messages", [])
        match self.scenario:
            case "bash8":
                done = sum(1 for m in history if m.get("role") == "assistant")
                if done < 2:
                    calls = [
                        tool_use(
                            dialect.bash,
                            f"toolu_sleep_{done}_{n}",
                            command="sleep 0.5",
                            **dialect.bash_extra,
                        )
                        for n in range(SLEEPS)
                    ]
                    return {"content": calls}
                return {"content": [text("Slept.")]}
            case "steps30":
                done = sum(1 for m in history if m.get("role") == "assistant")
                if done < STEPS:
                    path = str(self.tiny_file) if dialect is CLAUDE_TOOLS else self.tiny_file.name
                    read = tool_use(dialect.read, f"toolu_read_{done}", **{dialect.read_key: path})
                    return {"content": [read]}
                return {"content": [text(f"Read it {done} times.")]}
            case _:
                return {"content": [text("Hello there.")]}

    def gaps_ms(self) -> list[float]:
        return [(b - a) * 1000 for a, b in zip(self.arrivals, self.arrivals[1:], strict=False)]


# --- one process, timed -------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    wall_ms: float
    first_request_ms: float | None
    peak_mib: float
    gaps_ms: tuple[float, ...]
    exit_code: int


def _wait_timed(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path
) -> tuple[float, float, int, float]:
    """Spawn and wait; (spawned at, wall s, exit code, peak RSS MiB of the largest process)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        list(argv), env=dict(env), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert process.stderr is not None
    errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        print(f"  ! {argv[-1]!r} exited {process.returncode}: {errors.decode()[-400:]}")
    return started, wall, process.returncode, usage.ru_maxrss / 1024


@dataclass
class Playing:
    """The fake's one looping spec: whichever scenario's model is on now."""

    model: Model | None = None

    def __call__(self, body: JSON) -> JSON:
        if self.model is None:
            return {"content": [text("ok")]}
        return self.model(body)


async def run_agent(
    playing: Playing, model: Model, argv: Sequence[str], env: Mapping[str, str], cwd: Path
) -> Run:
    playing.model = model
    started, wall, code, peak = await asyncio.to_thread(_wait_timed, argv, env, cwd)
    first = (model.arrivals[0] - started) * 1000 if model.arrivals else None
    return Run(wall * 1000, first, peak, tuple(model.gaps_ms()), code)


# --- the warm start: a template of the bench's own ----------------------------------------------


def private_dir() -> Path:
    """A new runtime dir (mode 0700, short: a socket path has at most 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="tw-", dir="/tmp"))
    path.chmod(0o700)
    return path


def templates_of(runtime_dir: Path) -> list[int]:
    """Pids of the templates serving ``runtime_dir`` (their command line names it)."""
    wanted = f"tiller.warm.template\0{runtime_dir / 'tiller'}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if wanted in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


def stop_templates(runtime_dir: Path) -> None:
    for pid in templates_of(runtime_dir):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while templates_of(runtime_dir) and time.monotonic() < deadline:
        time.sleep(0.02)


async def template_ready(runtime_dir: Path, within: float = 120.0) -> None:
    """Wait until a template serves ``runtime_dir`` (its socket accepts connections)."""
    folder = runtime_dir / "tiller"
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        for path in folder.glob("*.sock") if folder.is_dir() else ():
            with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as probe:
                try:
                    probe.connect(str(path))
                except OSError:
                    continue
                return
        await asyncio.sleep(0.05)
    raise RuntimeError(f"no warm template in {runtime_dir} after {within:g} s")


WHO_ENV = {  # how each Tiller column runs
    "tiller": "cold: plain spawn (TILLER_WARM=0)",
    "first": "first use: no template yet (spawns, starts one at its end)",
    "warm": "warm: forked from a ready template",
}


@dataclass(frozen=True)
class Agents:
    scratch: Path
    api: FakeMessagesAPI
    playing: Playing
    claude: str | None
    baseline: Path | None = None
    warm_dir: Path | None = None  # the runtime dir of the warm column's template

    def workspace(self) -> Path:
        ws = Path(tempfile.mkdtemp(prefix="ws-", dir=self.scratch))
        (ws / "tiny.txt").write_text("tiny\n")
        return ws

    def tiller_argv(self, prompt: str) -> list[str]:
        return [*TILLER, "run", "--base-url", self.api.base_url, "--model", MODEL,
                "--tool-budget", "0", prompt]  # fmt: skip

    def tiller_env(
        self, source: Path | None = None, runtime_dir: Path | None = None
    ) -> dict[str, str]:
        """Tiller's environment: cold (no warm start) unless ``runtime_dir`` is given."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "TILLER_"))}
        env.update(ANTHROPIC_API_KEY=API_KEY, TILLER_DATA_DIR=str(self.scratch / "tiller-data"))
        if source is not None:
            env["PYTHONPATH"] = str(source)
        if runtime_dir is None:
            env["TILLER_WARM"] = "0"
        else:
            env["XDG_RUNTIME_DIR"] = str(runtime_dir)
        return env

    def claude_argv(self, prompt: str) -> list[str]:
        assert self.claude is not None
        return [self.claude, "-p", prompt, "--model", MODEL, "--allowedTools", "Bash", "Read"]

    def claude_env(self) -> dict[str, str]:
        home = self.scratch / "claude-home"
        home.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE"))}
        env.update(
            HOME=str(home),
            ANTHROPIC_BASE_URL=self.api.base_url,
            ANTHROPIC_API_KEY=API_KEY,
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
            DISABLE_TELEMETRY="1",
        )
        return env

    def bare_argv(self, tiny: Path) -> list[str]:
        return [sys.executable, __file__, "--bare-loop", self.api.base_url, str(tiny)]

    async def run(self, who: str, scenario: str) -> Run:
        ws = self.workspace()
        model = Model(scenario, ws / "tiny.txt")
        prompt = {"hello": "hello", "bash8": "sleep", "steps30": "read tiny.txt"}[scenario]
        match who:
            case "tiller":
                return await run_agent(
                    self.playing, model, self.tiller_argv(prompt), self.tiller_env(), ws
                )
            case "warm":
                assert self.warm_dir is not None
                env = self.tiller_env(runtime_dir=self.warm_dir)
                return await run_agent(self.playing, model, self.tiller_argv(prompt), env, ws)
            case "first":
                fresh = private_dir()
                try:
                    env = self.tiller_env(runtime_dir=fresh)
                    return await run_agent(self.playing, model, self.tiller_argv(prompt), env, ws)
                finally:
                    stop_templates(fresh)
                    shutil.rmtree(fresh, ignore_errors=True)
            case "before":
                return await run_agent(
                    self.playing,
                    model,
                    self.tiller_argv(prompt),
                    self.tiller_env(self.baseline),
                    ws,
                )
            case "claude":
                return await run_agent(
                    self.playing, model, self.claude_argv(prompt), self.claude_env(), ws
                )
            case _:
                return await run_agent(
                    self.playing, model, self.bare_argv(ws / "tiny.txt"), os.environ, ws
                )


# --- the bare SDK loop (run as its own process) -------------------------------------------------


async def bare_loop(base_url: str, tiny: Path) -> None:
    """The smallest agent loop on the SDK: stream, run the one tool, send its result back."""
    client = anthropic.AsyncAnthropic(base_url=base_url, api_key=API_KEY)
    tools: list[Any] = [
        {"name": "bash", "description": "Run a command.", "input_schema": {"type": "object"}},
        {"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}},
    ]
    messages: list[Any] = [{"role": "user", "content": "read tiny.txt"}]
    while True:
        async with client.messages.stream(
            model=MODEL, max_tokens=1024, messages=messages, tools=tools
        ) as stream:
            message = await stream.get_final_message()
        calls = [b for b in message.content if b.type == "tool_use"]
        if not calls:
            return
        messages.append({"role": "assistant", "content": [b.model_dump() for b in message.content]})
        content = await asyncio.to_thread(tiny.read_text)
        results = [{"type": "tool_result", "tool_use_id": c.id, "content": content} for c in calls]
        messages.append({"role": "user", "content": results})


# --- Tiller's server alone ------------------------------------------------------------------------


@dataclass(frozen=True)
class ServerRun:
    init_ms: float
    text_ms: float
    prompt_to_text_ms: float


async def server_run(
    scratch: Path,
    api: FakeMessagesAPI,
    playing: Playing,
    delay: float,
    scenario: str = "hello",
    warm_dir: Path | None = None,
) -> tuple[ServerRun, Model]:
    """A fresh server: ``initialize``, ``initialized``, ``delay`` s, then one prompt. With
    ``warm_dir``: ``python -m tiller --warm`` (the extension's way), forked from its template."""
    ws = Path(tempfile.mkdtemp(prefix="ws-", dir=scratch))
    model = playing.model = Model(scenario, ws / "tiny.txt")
    data = scratch / "server-data"
    stderr = scratch / "server-stderr.log"
    if warm_dir is None:
        client = await TillerClient.spawn(data, stderr, extra_env={"TILLER_WARM": "0"})
    else:
        command = (*SERVER_COMMAND, "--warm")
        env = {"XDG_RUNTIME_DIR": str(warm_dir)}
        client = await TillerClient.spawn(data, stderr, command=command, extra_env=env)
    try:
        options: JSON = {
            "provider": {"kind": "anthropic", "baseUrl": api.base_url, "apiKey": API_KEY},
            "model": MODEL,
            "dataDir": str(data),
            "toolBudget": 0,
        }
        at, _ = await client.initialize(ws, options)
        client.notify("initialized", {})
        await asyncio.sleep(delay)
        sent = time.perf_counter()
        turn = await client.prompt(scenario)
        first = await client.wait_event("textDelta", turn, timeout=120)
        await client.wait_event("turnEnded", turn, timeout=120)
    finally:
        await client.close()
    spawned = client.spawned_at
    run = ServerRun((at - spawned) * 1000, (first.at - spawned) * 1000, (first.at - sent) * 1000)
    return run, model


async def server_figures(
    table: Table,
    who: str,
    source: Path | None,
    scratch: Path,
    api: FakeMessagesAPI,
    playing: Playing,
    warm_dir: Path | None = None,
) -> None:
    saved = os.environ.get("PYTHONPATH")
    if source is not None:  # the server's environment is this process's (bench/_lsp.py)
        os.environ["PYTHONPATH"] = str(source)
    try:
        now, _ = await server_run(scratch, api, playing, 0.0, warm_dir=warm_dir)
        later, _ = await server_run(scratch, api, playing, 1.0, warm_dir=warm_dir)
        _, sleeps = await server_run(scratch, api, playing, 1.0, "bash8", warm_dir=warm_dir)
    finally:
        if source is not None:
            if saved is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = saved
    table.add("server: spawn -> initialize result", who, now.init_ms, "ms")
    table.add("server: spawn -> first textDelta, prompt at initialized", who, now.text_ms, "ms")
    table.add("server: spawn -> first textDelta, prompt 1 s after", who, later.text_ms, "ms")
    table.add(
        "server: prompt -> first textDelta, prompt 1 s after", who, later.prompt_to_text_ms, "ms"
    )
    gaps = sleeps.gaps_ms()
    if len(gaps) >= 2:
        table.add("server: 8 x sleep 0.5, prompt 1 s after: first step", who, gaps[0], "ms")
        table.add("server: 8 x sleep 0.5, prompt 1 s after: second step", who, gaps[1], "ms")


# --- tiller acp, as an editor starts it ----------------------------------------------------------


class _Editor:
    """An ACP client that allows whatever is asked and drops the updates."""

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        return allowed_once(kwargs.get("options") or args[2])

    async def session_update(self, *args: Any, **kwargs: Any) -> None:
        return None


async def acp_figures(table: Table, agents: Agents, who: str) -> None:
    """``tiller acp`` spawned: spawn -> ``initialize`` answered; the first prompt, sent as
    soon as ``session/new`` is answered -> its model request at the fake."""
    from acp import PROTOCOL_VERSION, spawn_agent_process, text_block

    ws = agents.workspace()
    model = agents.playing.model = Model("hello", ws / "tiny.txt")
    env = agents.tiller_env(runtime_dir=agents.warm_dir if who == "warm" else None)
    env.update(ANTHROPIC_BASE_URL=agents.api.base_url, TILLER_MODEL=MODEL)
    started = time.perf_counter()
    async with spawn_agent_process(cast(Any, _Editor()), TILLER[0], "acp", env=env, cwd=ws) as (
        conn,
        _,
    ):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        initialized = time.perf_counter()
        session = await conn.new_session(cwd=str(ws), mcp_servers=[])
        sent = time.perf_counter()
        await conn.prompt(session_id=session.session_id, prompt=[text_block("hello")])
    table.add("tiller acp: spawn -> initialize answered", who, (initialized - started) * 1000, "ms")
    if model.arrivals:
        first = (model.arrivals[0] - sent) * 1000
        table.add("tiller acp: first prompt -> model request", who, first, "ms")


# --- rounds and the table -------------------------------------------------------------------------


@dataclass
class Table:
    rows: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)

    def add(self, row: str, who: str, value: float | None, unit: str) -> None:
        if value is not None:
            self.rows.setdefault(row, {}).setdefault(who, []).append(value)
            self.units[row] = unit

    def print(self, claude: str | None) -> list[JSON]:
        if not claude:
            print(
                "\nClaude Code: not installed "
                "(npm install --prefix /tmp/cc @anthropic-ai/claude-code)"
            )
        print("\nTiller columns: " + "; ".join(f"{k} = {v}" for k, v in WHO_ENV.items()))
        header = f"{'figure (median)':<58} {'before':>7} {'cold':>7} {'1st use':>7} {'warm':>7}"
        print(f"{header} {'Claude':>7} {'bare SDK':>8} {'cold/CC':>7} {'warm/CC':>7}")
        out: list[JSON] = []
        for row, by in self.rows.items():
            values = {who: median(v) for who, v in by.items()}
            t, c, b = values.get("tiller"), values.get("claude"), values.get("bare")
            w, f, before = values.get("warm"), values.get("first"), values.get("before")
            cold_ratio = f"{t / c:7.2f}" if t is not None and c else "      -"
            warm_ratio = f"{w / c:7.2f}" if w is not None and c else "      -"
            unit = self.units[row]
            name = f"{row} ({unit})"
            cells = " ".join(f"{_cell(v):>7}" for v in (before, t, f, w, c))
            print(f"{name:<58} {cells} {_cell(b):>8} {cold_ratio} {warm_ratio}")
            out.append({"figure": row, "unit": unit, **values, "samples": by})
        return out


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def record(table: Table, scenario: str, who: str, run: Run) -> None:
    ok = run.exit_code == 0
    match scenario:
        case "hello":
            table.add("one-shot hello: process wall", who, run.wall_ms if ok else None, "ms")
            table.add("one-shot hello: spawn -> first model request", who,
                      run.first_request_ms, "ms")  # fmt: skip
            table.add("one-shot hello: peak RSS (largest process)", who, run.peak_mib, "MiB")
        case "bash8":
            if len(run.gaps_ms) >= 2:
                table.add("8 x sleep 0.5: first step wall (fresh)", who, run.gaps_ms[0], "ms")
                table.add("8 x sleep 0.5: second step wall (warm)", who, run.gaps_ms[1], "ms")
        case "steps30":
            if len(run.gaps_ms) >= STEPS:
                table.add("30 read steps: median step", who, median(run.gaps_ms[1:STEPS]), "ms")


async def measure(
    rounds: int, scenarios: Sequence[str], claude: str | None, baseline: Path | None
) -> Table:
    table = Table()
    with tempfile.TemporaryDirectory(prefix="tiller-compare-") as raw:
        scratch = Path(raw)
        playing = Playing()
        warm_dir = private_dir()
        try:
            async with FakeMessagesAPI(playing, loop=True) as api:
                agents = Agents(scratch, api, playing, claude, baseline, warm_dir)
                await agents.run("warm", "hello")  # starts the template: not a figure
                await template_ready(warm_dir)
                await rounds_of(table, agents, rounds, scenarios, claude, baseline)
        finally:
            stop_templates(warm_dir)
            shutil.rmtree(warm_dir, ignore_errors=True)
    return table


async def rounds_of(
    table: Table,
    agents: Agents,
    rounds: int,
    scenarios: Sequence[str],
    claude: str | None,
    baseline: Path | None,
) -> None:
    scratch, api, playing = agents.scratch, agents.api, agents.playing
    warm_dir = agents.warm_dir
    if claude:  # Claude Code's first start ever writes its config: not a figure
        await agents.run("claude", "hello")
    for n in range(rounds):
        print(f"  round {n + 1}/{rounds}", flush=True)
        for scenario in (s for s in scenarios if s not in ("server", "acp")):
            order = ["tiller", "warm", "claude"]
            if scenario == "hello":
                order.insert(1, "first")
            if n % 2:
                order.reverse()
            if baseline is not None:
                order.insert(n % 2, "before")
            if scenario == "steps30":
                order.append("bare")
            for who in order:
                if who == "claude" and not claude:
                    continue
                record(table, scenario, who, await agents.run(who, scenario))
        if "server" in scenarios:
            sources: list[tuple[str, Path | None]] = [("tiller", None)]
            if baseline is not None:
                sources.insert(n % 2, ("before", baseline))
            for who, source in sources:
                await server_figures(table, who, source, scratch, api, playing)
            await server_figures(table, "warm", None, scratch, api, playing, warm_dir)
        if "acp" in scenarios:
            for who in ("tiller", "warm") if n % 2 == 0 else ("warm", "tiller"):
                await acp_figures(table, agents, who)


def find_claude(given: str | None) -> str | None:
    for candidate in (given, os.environ.get("CLAUDE_BIN"), *CLAUDE_CANDIDATES):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("claude")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Tiller vs Claude Code on the same fake API.")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    parser.add_argument("--claude", help="path to the claude executable")
    parser.add_argument("--no-claude", action="store_true", help="Tiller (and bare SDK) only")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="SRC",
        help="also run Tiller from this source folder (its `server/`, e.g. from `git archive "
        "REV | tar -x -C DIR`) as the 'before' column, interleaved",
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--bare-loop", nargs=2, metavar=("BASE_URL", "FILE"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.bare_loop:
        asyncio.run(bare_loop(args.bare_loop[0], Path(args.bare_loop[1])))
        return
    claude = None if args.no_claude else find_claude(args.claude)
    version = "not installed"
    if claude:
        version = subprocess.run([claude, "--version"], capture_output=True, text=True).stdout
    print(f"== Tiller vs Claude Code ({version.strip()})  ({machine_note()})", flush=True)
    table = asyncio.run(measure(args.rounds, args.only, claude, args.baseline))
    figures = table.print(claude)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
