"""`tiller run` for CI, end to end through the real CLI against the fake Messages API:
`--output-format json|stream-json`, the prompt from stdin, `--max-turns`, `--allowed-tools` /
`--disallowed-tools` and one exit code per outcome (docs/ci.md).

Fixtures ``api`` (the fake, key "test-key") and ``workspace`` come from conftest.py; the
process helpers from test_cli.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from fakeapi import FakeMessagesAPI
from processes import children
from test_cli import CLI, RUN_TIMEOUT, CliProcess, cli_env, text, tool_use
from warm import suite

RESULT_KEYS = {"type", "outcome", "exitCode", "usage", "turnId", "sessionId", "durationMs"}


@pytest_asyncio.fixture
async def start_run(workspace: Path, tmp_path: Path) -> AsyncIterator[Any]:
    """Start `tiller run ARGS...` against ``api``; ``stdin``: bytes to pipe in, else
    /dev/null. Killed after the test if still running."""
    started: list[CliProcess] = []

    async def start(
        *args: str,
        api: FakeMessagesAPI,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
    ) -> CliProcess:
        argv = [*CLI, "--workspace", str(workspace), "--base-url", api.base_url]
        process = await asyncio.create_subprocess_exec(
            *argv,
            "--model",
            "claude-test-1",
            *args,
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**cli_env(tmp_path / "data", "test-key"), **(env or {})},
            cwd=workspace,
        )
        if stdin is not None:
            assert process.stdin is not None
            process.stdin.write(stdin)
            await process.stdin.drain()
            process.stdin.close()
        cli = CliProcess(process)
        started.append(cli)
        return cli

    yield start
    for cli in started:
        if cli.process.returncode is None:
            cli.process.kill()
            await cli.process.wait()


def json_lines(cli: CliProcess) -> list[dict[str, Any]]:
    """Every stdout line, each a JSON object (fails on anything else)."""
    lines = cli.stdout.splitlines()
    assert lines, cli.report()
    parsed = [json.loads(line) for line in lines]
    assert all(isinstance(value, dict) for value in parsed), cli.report()
    return parsed


def only_result(cli: CliProcess) -> dict[str, Any]:
    lines = json_lines(cli)
    assert len(lines) == 1, cli.report()
    result = lines[0]
    assert set(result) >= RESULT_KEYS, result
    assert result["type"] == "result"
    return result


def tool_results(api: FakeMessagesAPI, request: int) -> dict[str, dict[str, Any]]:
    """The tool results the ``request``-th message request sent back, by tool_use_id."""
    content = api.message_requests()[request].body["messages"][-1]["content"]
    return {block["tool_use_id"]: block for block in content if block["type"] == "tool_result"}


# --- output formats -------------------------------------------------------------------------


async def test_stream_json_is_init_then_every_event_then_the_result(
    api: FakeMessagesAPI, start_run: Any, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    api.enqueue(
        {"content": [text("Reading.\n"), tool_use("read_file", "toolu_r1", path="a.txt")]},
        {"content": [text("It says alpha.")]},
    )
    cli = await start_run("--output-format", "stream-json", "what is in a.txt", api=api)
    code = await cli.wait()
    assert code == 0, cli.report()
    lines = json_lines(cli)
    init, events, result = lines[0], lines[1:-1], lines[-1]
    assert init["type"] == "init"
    assert init["model"] == "claude-test-1" and init["mode"] == "default"
    assert init["cwd"] == str(workspace) and init["sessionId"].startswith("ses_")
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "turnEnded", kinds
    assert set(kinds[: kinds.index("turnStarted")]) <= {"notice"}, kinds  # a greeting or two
    assert {"textDelta", "toolStarted", "toolFinished"} <= set(kinds), kinds
    assert [e["seq"] for e in events] == list(
        range(events[0]["seq"], events[0]["seq"] + len(events))
    )
    assert {e["sessionId"] for e in events} == {init["sessionId"]}
    assert "".join(e["text"] for e in events if e["type"] == "textDelta") == (
        "Reading.\nIt says alpha."
    )
    assert set(result) >= RESULT_KEYS, result
    assert result["type"] == "result" and result["outcome"] == "completed"
    assert result["exitCode"] == 0 and result["final"] == "It says alpha."
    assert result["turnId"] == events[-1]["turnId"] and result["sessionId"] == init["sessionId"]
    usage = result["usage"]
    read = usage["inputTokens"] + usage["cacheReadTokens"] + usage["cacheWriteTokens"]
    assert read > 0 and usage["outputTokens"] > 0, usage
    assert result["trail"] == [{"name": "read_file", "status": "ok"}]
    assert isinstance(result["durationMs"], int) and result["durationMs"] > 0
    # The text rendering went to stderr: stdout has nothing but the JSON lines.
    assert "✓ read_file a.txt" in cli.stderr and "It says alpha." in cli.stderr


async def test_stream_json_carries_the_question_events_with_their_decisions(
    api: FakeMessagesAPI, start_run: Any, workspace: Path
) -> None:
    api.enqueue(
        {"content": [tool_use("bash", "toolu_q1", command="touch q")]},
        {"content": [text("Done.")]},
    )
    cli = await start_run("--output-format", "stream-json", "--yes", "make q", api=api)
    assert await cli.wait() == 0, cli.report()
    events = json_lines(cli)[1:-1]
    asked = [e for e in events if e["type"] in ("confirmRequested", "confirmDecided")]
    assert [e["type"] for e in asked] == ["confirmRequested", "confirmDecided"], asked
    assert asked[0]["preview"]["command"] == "touch q" and asked[1]["decision"] == "allow"
    assert (workspace / "q").exists()


async def test_json_prints_the_result_alone(api: FakeMessagesAPI, start_run: Any) -> None:
    api.enqueue({"content": [text("Hello from the fake.")]})
    cli = await start_run("--output-format", "json", "say hello", api=api)
    assert await cli.wait() == 0, cli.report()
    result = only_result(cli)
    assert result["outcome"] == "completed" and result["exitCode"] == 0
    assert result["final"] == "Hello from the fake."
    assert result["turnId"].startswith("turn_") and result["sessionId"].startswith("ses_")
    assert set(result["usage"]) >= {
        "inputTokens",
        "outputTokens",
        "cacheReadTokens",
        "cacheWriteTokens",
    }
    assert "error" not in result and "stoppedBy" not in result
    assert "Hello from the fake." in cli.stderr


async def test_json_of_a_slash_command_has_its_answer_as_final(
    api: FakeMessagesAPI, start_run: Any
) -> None:
    cli = await start_run("--output-format", "json", "/help", api=api)
    assert await cli.wait() == 0, cli.report()
    result = only_result(cli)
    assert result["outcome"] == "completed" and "/mode" in result["final"]
    assert result["turnId"] is None and result["usage"]["inputTokens"] == 0
    assert api.message_requests() == []


# --- the prompt from stdin ------------------------------------------------------------------


async def test_dash_reads_the_prompt_from_stdin(api: FakeMessagesAPI, start_run: Any) -> None:
    api.enqueue({"content": [text("Read it.")]})
    prompt = b"explain this diff:\n+ a line\n"
    cli = await start_run("--output-format", "json", "-", api=api, stdin=prompt)
    assert await cli.wait() == 0, cli.report()
    assert only_result(cli)["final"] == "Read it."
    sent = api.message_requests()[0].body["messages"][0]["content"]
    assert sent[0]["text"] == "explain this diff:\n+ a line", sent


async def test_no_prompt_on_a_pipe_reads_stdin(api: FakeMessagesAPI, start_run: Any) -> None:
    api.enqueue({"content": [text("Piped.")]})
    cli = await start_run(api=api, stdin=b"from the pipe\n")
    assert await cli.wait() == 0, cli.report()
    assert cli.stdout.strip() == "Piped."
    assert "from the pipe" in json.dumps(api.message_requests()[0].body["messages"])


async def test_an_empty_stdin_or_a_dash_among_words_is_a_usage_error(
    api: FakeMessagesAPI, start_run: Any
) -> None:
    empty = await start_run("--output-format", "json", "-", api=api, stdin=b"  \n")
    assert await empty.wait() == 64, empty.report()
    result = only_result(empty)
    assert result["outcome"] == "usage_error" and result["exitCode"] == 64
    assert result["error"]["kind"] == "usage" and "empty" in result["error"]["message"]
    mixed = await start_run("fix", "-", api=api, stdin=b"x")
    assert await mixed.wait() == 64, mixed.report()
    assert mixed.stdout == "" and "only PROMPT" in mixed.stderr
    assert api.requests == []


# --- --max-turns ----------------------------------------------------------------------------


def reads(count: int) -> list[dict[str, Any]]:
    """``count`` responses that each only call read_file (no text: counted by their usage)."""
    return [{"content": [tool_use("read_file", f"toolu_m{i}", path="a.txt")]} for i in range(count)]


async def test_max_turns_stops_before_the_tools_of_the_next_response(
    api: FakeMessagesAPI, start_run: Any, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("a\n")
    api.enqueue(*reads(3), {"content": [text("never reached")]})
    cli = await start_run("--output-format", "stream-json", "--max-turns", "2", "read", api=api)
    code = await cli.wait()
    assert code == 2, cli.report()
    lines = json_lines(cli)
    result = lines[-1]
    assert result["outcome"] == "stopped" and result["exitCode"] == 2
    assert result["stoppedBy"] == "maxTurns"
    assert len(api.message_requests()) == 3  # response 3 was asked for; its call never ran
    finished = {e["toolUseId"]: e["status"] for e in lines if e.get("type") == "toolFinished"}
    assert finished == {"toolu_m0": "ok", "toolu_m1": "ok", "toolu_m2": "skipped"}, finished
    assert "--max-turns 2 reached" in cli.stderr
    assert "checkpoint:" not in cli.stderr  # the limit's checkpoints are not the user's


async def test_max_turns_counts_responses_that_stream_text_too(
    api: FakeMessagesAPI, start_run: Any, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("a\n")
    api.enqueue(
        *[
            {"content": [text(f"step {i}\n"), tool_use("read_file", f"toolu_t{i}", path="a.txt")]}
            for i in range(3)
        ],
    )
    cli = await start_run("--output-format", "json", "--max-turns", "1", "read", api=api)
    assert await cli.wait() == 2, cli.report()
    result = only_result(cli)
    assert result["stoppedBy"] == "maxTurns"
    assert result["trail"] == [
        {"name": "read_file", "status": "ok"},
        {"name": "read_file", "status": "skipped"},
    ]
    assert len(api.message_requests()) == 2


async def test_a_run_that_ends_within_max_turns_completes(
    api: FakeMessagesAPI, start_run: Any, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("a\n")
    api.enqueue(*reads(2), {"content": [text("All read.")]})
    cli = await start_run("--max-turns", "3", "read", api=api)
    assert await cli.wait() == 0, cli.report()
    assert "All read." in cli.stdout and "checkpoint" not in cli.stdout


async def test_max_turns_keeps_the_users_tool_budget(
    api: FakeMessagesAPI, start_run: Any, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("a\n")
    api.enqueue(*reads(3), {"content": [text("never reached")]})
    cli = await start_run(
        "--output-format", "json", "--max-turns", "5", "--tool-budget", "2", "read", api=api
    )
    assert await cli.wait() == 2, cli.report()
    result = only_result(cli)
    assert result["stoppedBy"] == "checkpoint"  # no terminal to ask after 2 calls
    assert "checkpoint: 2 tool calls so far" in cli.stderr
    assert [item["status"] for item in result["trail"]] == ["ok", "ok", "skipped"]


# --- --allowed-tools / --disallowed-tools ---------------------------------------------------


async def test_allowed_tools_run_without_yes_and_disallowed_ones_are_denied(
    api: FakeMessagesAPI, start_run: Any, workspace: Path
) -> None:
    api.enqueue(
        {
            "content": [
                tool_use("bash", "toolu_a1", command="touch allowed"),
                tool_use("write_file", "toolu_a2", path="denied.txt", content="x"),
            ]
        },
        {"content": [text("One of two.")]},
    )
    cli = await start_run(
        "--output-format",
        "json",
        "--allowed-tools",
        "bash, read_file",
        "--disallowed-tools",
        "write_file",
        "go",
        api=api,
    )
    assert await cli.wait() == 0, cli.report()
    assert (workspace / "allowed").exists() and not (workspace / "denied.txt").exists()
    results = tool_results(api, 1)
    assert results["toolu_a1"].get("is_error") is not True
    assert results["toolu_a2"]["is_error"] is True
    assert "denied by --disallowed-tools" in json.dumps(results["toolu_a2"]["content"])
    assert only_result(cli)["trail"] == [
        {"name": "bash", "status": "ok"},
        {"name": "write_file", "status": "denied"},
    ]
    assert "denied write_file denied.txt: --disallowed-tools" in cli.stderr


async def test_disallowed_tools_win_over_yes(
    api: FakeMessagesAPI, start_run: Any, workspace: Path
) -> None:
    api.enqueue(
        {"content": [tool_use("bash", "toolu_d1", command="touch nope")]},
        {"content": [text("Denied.")]},
    )
    cli = await start_run("--yes", "--disallowed-tools", "bash", "go", api=api)
    assert await cli.wait() == 0, cli.report()
    assert not (workspace / "nope").exists()
    assert "denied by --disallowed-tools" in json.dumps(tool_results(api, 1)["toolu_d1"])


async def test_a_tool_both_allowed_and_disallowed_is_a_usage_error(
    api: FakeMessagesAPI, start_run: Any
) -> None:
    cli = await start_run("--allowed-tools", "bash", "--disallowed-tools", "bash", "x", api=api)
    assert await cli.wait() == 64, cli.report()
    assert "both allowed and disallowed: bash" in cli.stderr
    blank = await start_run("--allowed-tools", "bash,,grep", "x", api=api)
    assert await blank.wait() == 64, blank.report()


# --- exit codes -----------------------------------------------------------------------------


async def test_a_failed_turn_is_1_with_its_error(api: FakeMessagesAPI, start_run: Any) -> None:
    api.enqueue(
        {"error": {"status": 401, "type": "authentication_error", "message": "invalid x-api-key"}}
    )
    cli = await start_run("--output-format", "json", "hello", api=api)
    assert await cli.wait() == 1, cli.report()
    result = only_result(cli)
    assert result["outcome"] == "failed" and result["error"]["kind"] == "auth"


async def test_a_refused_turn_is_3(api: FakeMessagesAPI, start_run: Any) -> None:
    api.enqueue(
        {
            "content": [text("I can't help with")],
            "stop_reason": "refusal",
            "stop_details": {"type": "refusal", "category": "cyber", "explanation": "Not this."},
        }
    )
    cli = await start_run("--output-format", "json", "something bad", api=api)
    assert await cli.wait() == 3, cli.report()
    result = only_result(cli)
    assert result["outcome"] == "refused" and result["exitCode"] == 3
    assert result["refusal"] == {"category": "cyber", "explanation": "Not this."}


async def test_a_usage_error_in_json_still_prints_a_result(
    api: FakeMessagesAPI, start_run: Any, tmp_path: Path
) -> None:
    missing = str(tmp_path / "missing")
    cli = await start_run("--output-format", "json", "--workspace", missing, "hi", api=api)
    assert await cli.wait() == 64, cli.report()
    result = only_result(cli)
    assert result["outcome"] == "usage_error" and "not a directory" in result["error"]["message"]
    assert result["sessionId"] is None and result["turnId"] is None


async def test_an_unknown_option_in_json_prints_a_result_and_runs_usage(
    api: FakeMessagesAPI, start_run: Any
) -> None:
    cli = await start_run("--output-format", "json", "--bogus", "hi", api=api)
    assert await cli.wait() == 64, cli.report()
    result = only_result(cli)
    assert result["outcome"] == "usage_error"
    assert result["error"]["message"] == "unrecognized arguments: --bogus"
    assert cli.stderr.startswith("usage: tiller run "), cli.report()
    assert api.message_requests() == []


def server_pid(client_pid: int) -> int:
    """The server the client started: its one child process."""
    children = [
        int(pid)
        for task in Path(f"/proc/{client_pid}/task").iterdir()
        for pid in (task / "children").read_text().split()
    ]
    assert len(children) == 1, children
    return children[0]


@pytest.mark.parametrize("start", ["spawned", "forked from the warm template"])
async def test_a_server_that_dies_mid_turn_is_70(
    api: FakeMessagesAPI, start_run: Any, start: str
) -> None:
    """Forked: from the test process's template (``tests/warm.py``), which every ``tiller
    run`` of these tests would use; its servers of earlier tests are told apart by pid."""
    api.enqueue({"content": [text("Thinking about it for a long while.")], "hangAfterEvents": 4})
    warm = suite()
    template = await warm.ready()
    earlier = set(children(template))
    env = {"TILLER_WARM": "0"} if start == "spawned" else {"XDG_RUNTIME_DIR": str(warm.root)}
    cli = await start_run("--output-format", "stream-json", "hello", api=api, env=env)
    await cli.wait_output('"textDelta"')
    if start == "spawned":
        os.kill(server_pid(cli.process.pid), signal.SIGKILL)
    else:
        # The template's two new children: the command (``tiller run`` hands itself to a
        # fork; its stdin is the test's /dev/null) and the server it asked for (on pipes).
        forks = [pid for pid in children(template) if pid not in earlier]
        [server] = [pid for pid in forks if os.readlink(f"/proc/{pid}/fd/0") != os.devnull]
        assert len(forks) == 2, forks
        os.kill(server, signal.SIGKILL)
    assert await cli.wait() == 70, cli.report()
    result = json_lines(cli)[-1]
    assert result["outcome"] == "server_died" and result["exitCode"] == 70
    assert result["error"]["kind"] == "server_died"
    assert "exited unexpectedly" in result["error"]["message"]


async def test_an_interrupted_run_is_130(api: FakeMessagesAPI, start_run: Any) -> None:
    api.enqueue({"content": [text("Thinking about it for a long while.")], "hangAfterEvents": 4})
    cli = await start_run("--output-format", "stream-json", "hello", api=api)
    await cli.wait_output('"textDelta"')
    cli.process.send_signal(signal.SIGINT)
    assert await cli.wait(timeout=RUN_TIMEOUT) == 130, cli.report()  # the model never answered
    lines = json_lines(cli)
    assert lines[-2]["type"] == "turnEnded" and lines[-2]["outcome"] == "interrupted"
    assert lines[-1]["outcome"] == "interrupted" and lines[-1]["exitCode"] == 130
