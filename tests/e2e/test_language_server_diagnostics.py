"""Diagnostics after edits through a language server Tiller runs itself (``languageServers``),
for the clients that do not offer their editor's: `tiller run`, `tiller chat`, ACP clients,
the protocol without ``experimental.tiller.diagnostics``.

The type checker is the real pyright (``pyright-langserver``, installed pinned into
tests/e2e/lsp-npm by scripts/setup-node-tests.sh); the failures a real server cannot be made
to show on demand (a crash, a hang) come from tests/e2e/fake_language_server.py.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import Implementation

from fakeapi import FakeMessagesAPI
from harness import JSON, Tiller
from test_acp import EXIT_WAIT, SERVER, Editor, agent_env, allow_once, as_client
from test_cli import CLI, cli_env
from test_diagnostics_after_edits import tool_results, tool_use

HERE = Path(__file__).parent
PYRIGHT = HERE / "lsp-npm" / "node_modules" / ".bin" / "pyright-langserver"
FAKE = HERE / "fake_language_server.py"
# A loaded machine (two cores, several test runs) gives pyright's first analysis time.
PYRIGHT_ENTRY = {"command": [str(PYRIGHT), "--stdio"], "extensions": [".py"], "timeoutSeconds": 120}
PYRIGHT_ERROR = 'Type "Literal[\'three\']" is not assignable to declared type "int"'
needs_pyright = pytest.mark.skipif(
    not PYRIGHT.exists(), reason="run scripts/setup-node-tests.sh first (tests/e2e/lsp-npm)"
)


def fake_entry(mode: str, marks: Path, **more: Any) -> dict[str, Any]:
    marks.mkdir(exist_ok=True)
    return {"command": [sys.executable, str(FAKE), mode, str(marks)], "extensions": [".py"], **more}


def write_then_fix(path: str) -> list[dict[str, Any]]:
    """The scripted model: read the file, write a type error into it, fix it, finish."""
    return [
        {"content": [tool_use("read_file", "toolu_r", path=path)]},
        {
            "content": [
                tool_use(
                    "write_file",
                    "toolu_w",
                    path=path,
                    content='old: int = "x"\ncount: int = "three"\n',
                )
            ]
        },
        {
            "content": [
                tool_use(
                    "edit_file",
                    "toolu_e",
                    path=path,
                    old_string='count: int = "three"',
                    new_string="count: int = 3",
                )
            ]
        },
        {"content": [{"type": "text", "text": "Fixed the type error."}]},
    ]


def assert_error_told_then_fixed(api: FakeMessagesAPI, error: str) -> None:
    """The request after the write carries the error the write made (and not the one that
    was there before); the one after the fix carries none."""
    requests = api.message_requests()
    after_write = tool_results(requests[2].body)["toolu_w"]
    assert "The edit introduced these errors" in after_write, after_write
    told = after_write.split("introduced these errors")[1]
    assert f"m.py:2:14: {error}" in told
    assert "old" not in told and "'x'" not in told  # there before the edit
    assert "introduced" not in tool_results(requests[3].body)["toolu_e"]


@needs_pyright
async def test_tiller_run_tells_the_model_its_type_error_and_the_next_step_fixes_it(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    (workspace / ".tiller").mkdir()
    (workspace / ".tiller" / "settings.json").write_text(
        json.dumps({"languageServers": {"pyright": PYRIGHT_ENTRY}})
    )  # checked in: it runs once the folder is trusted and the user enabled it
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "settings.json").write_text(
        json.dumps({"enabledLanguageServers": ["pyright"]})  # the user's own settings
    )
    (workspace / "m.py").write_text('old: int = "x"\n')  # an error that was there before
    api.enqueue(*write_then_fix("m.py"))
    env = cli_env(tmp_path / "data", "test-key")
    env |= {"CLAUDE_CONFIG_DIR": str(tmp_path / "c"), "TILLER_CONFIG_DIR": str(tmp_path / "t")}
    process = await asyncio.create_subprocess_exec(
        *CLI, "--workspace", str(workspace), "--base-url", api.base_url,
        "--model", "claude-test-1", "--yes", "--trust", "set count to three",
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        env=env, cwd=workspace,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(process.communicate(), 300)
    assert process.returncode == 0, out.decode(errors="replace")

    assert_error_told_then_fixed(api, PYRIGHT_ERROR)
    assert (workspace / "m.py").read_text() == 'old: int = "x"\ncount: int = 3\n'


@needs_pyright
async def test_a_protocol_client_without_editor_diagnostics_gets_the_language_servers(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    tiller = await start(permissionMode="acceptEdits", languageServers={"pyright": PYRIGHT_ENTRY})
    (workspace / "m.py").write_text('old: int = "x"\n')
    api.enqueue(*write_then_fix("m.py"))
    ended = await tiller.run("set count to three", timeout=300)
    assert ended["outcome"] == "completed"

    assert_error_told_then_fixed(api, PYRIGHT_ERROR)
    finished = {e["toolUseId"]: e for e in tiller.events_of("toolFinished", ended["turnId"])}
    assert PYRIGHT_ERROR in finished["toolu_w"]["output"]
    assert all(method != "tiller/diagnostics" for method, _ in tiller.asked)


async def test_a_server_that_offers_pull_diagnostics_is_asked_for_them(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    tiller = await start(
        permissionMode="acceptEdits", languageServers={"fake": fake_entry("pull", marks)}
    )
    (workspace / "m.py").write_text('old: int = "x"\n')
    api.enqueue(*write_then_fix("m.py"))
    ended = await tiller.run("set count to three", timeout=60)
    assert ended["outcome"] == "completed"
    assert_error_told_then_fixed(api, 'Type "str" is not assignable to declared type "int" [fake]')


async def run_one_write(tiller: Tiller, api: FakeMessagesAPI) -> tuple[JSON, str]:
    api.enqueue(
        {"content": [tool_use("write_file", "toolu_w", path="n.py", content='n: int = "a"\n')]},
        {"content": [{"type": "text", "text": "Done."}]},
    )
    ended = await tiller.run("write n.py", timeout=60)
    return ended, tool_results(api.message_requests()[1].body)["toolu_w"]


def notices(tiller: Tiller) -> list[str]:
    return [e["text"] for e in tiller.events_of("notice")]


async def test_no_language_server_for_the_file_means_no_diagnostics_and_no_server_started(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    entry = fake_entry("pull", marks) | {"extensions": [".ts"]}
    tiller = await start(permissionMode="acceptEdits", languageServers={"fake": entry})
    ended, result = await run_one_write(tiller, api)
    assert ended["outcome"] == "completed"
    assert (workspace / "n.py").exists()
    assert "introduced" not in result
    assert not (marks / "started").exists()  # a .py edit never starts a .ts server
    assert not any("Language server" in text for text in notices(tiller))


async def test_none_configured_means_no_diagnostics(
    tiller: Tiller, api: FakeMessagesAPI, workspace: Path
) -> None:
    await tiller.request("tiller/setMode", {"mode": "acceptEdits"})
    ended, result = await run_one_write(tiller, api)
    assert ended["outcome"] == "completed"
    assert "introduced" not in result and "n.py" in result
    assert not any("Language server" in text for text in notices(tiller))


async def test_a_language_server_that_crashes_leaves_the_edit_done_with_a_notice(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    tiller = await start(
        permissionMode="acceptEdits", languageServers={"fake": fake_entry("crash", marks)}
    )
    ended, result = await run_one_write(tiller, api)
    assert ended["outcome"] == "completed"
    assert (workspace / "n.py").read_text() == 'n: int = "a"\n'
    assert "introduced" not in result
    assert (marks / "opened").exists()  # it crashed on the file, not before
    assert any(
        "Language server fake exited (code 3): no diagnostics for this edit" in text
        for text in notices(tiller)
    ), notices(tiller)


async def test_a_hung_language_server_is_given_up_after_its_timeout(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    entry = fake_entry("hang", marks, timeoutSeconds=1)
    tiller = await start(permissionMode="acceptEdits", languageServers={"fake": entry})
    ended, result = await run_one_write(tiller, api)
    assert ended["outcome"] == "completed"
    assert (workspace / "n.py").read_text() == 'n: int = "a"\n'
    assert "introduced" not in result
    assert any(
        "Language server fake did not answer within 1s" in text for text in notices(tiller)
    ), notices(tiller)


async def test_an_interrupt_stops_waiting_for_a_language_server_at_once(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    entry = fake_entry("hang", marks, timeoutSeconds=600)
    tiller = await start(permissionMode="acceptEdits", languageServers={"fake": entry})
    (workspace / "n.py").write_text("")
    api.enqueue(
        {"content": [tool_use("read_file", "toolu_r", path="n.py")]},
        {"content": [tool_use("write_file", "toolu_w", path="n.py", content="n = 1\n")]},
    )
    started = await tiller.prompt("write n.py")
    await tiller.wait_for(lambda: (marks / "opened").exists(), timeout=60)
    await tiller.request("tiller/interrupt")
    ended = await tiller.turn_end(started["turnId"], timeout=20)
    assert ended["outcome"] == "interrupted"


async def test_a_bad_entry_is_a_notice_naming_its_file(
    start: Any, workspace: Path, tmp_path: Path
) -> None:
    settings = tmp_path / "data" / "user-tiller" / "settings.json"  # the user's (harness)
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"languageServers": {"ts": {"command": ["tsls"]}}}))
    tiller = await start()
    await tiller.wait_for(lambda: any("Language servers:" in text for text in notices(tiller)))
    told = next(text for text in notices(tiller) if "Language servers:" in text)
    assert told.startswith(f"Language servers: {settings}: languageServers.ts: 'extensions'")


async def test_an_acp_client_gets_the_language_servers_diagnostics(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    (workspace / "m.py").write_text('old: int = "x"\n')
    api.enqueue(*write_then_fix("m.py"))
    editor = Editor(choose=allow_once)
    options = {
        "permissionMode": "acceptEdits",
        "languageServers": {"fake": fake_entry("pull", marks)},
    }
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    async with spawn_agent_process(
        as_client(editor),
        *SERVER,
        env=agent_env(api, data_dir),
        cwd=workspace,
        transport_kwargs=EXIT_WAIT,
    ) as (conn, _process):
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=editor.capabilities,
            client_info=Implementation(name="tiller-tests", version="0"),
            tiller=options,
        )
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await conn.prompt(
            session_id=session.session_id, prompt=[text_block("set count to three")]
        )
    assert answer.stop_reason == "end_turn"
    assert_error_told_then_fixed(api, 'Type "str" is not assignable to declared type "int" [fake]')


async def test_an_edit_in_a_second_workspace_folder_gets_its_diagnostics(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    api_root = tmp_path / "api"
    api_root.mkdir()
    marks = tmp_path / "marks"
    tiller = await start(
        permissionMode="acceptEdits",
        languageServers={"fake": fake_entry("pull", marks)},
        more_folders=[api_root],
    )
    api.enqueue(
        {"content": [tool_use("write_file", "toolu_w", path="api/m.py", content='n: int = "a"\n')]},
        {"content": [{"type": "text", "text": "Done."}]},
    )
    ended = await tiller.run("write api/m.py", timeout=60)
    assert ended["outcome"] == "completed"
    assert (api_root / "m.py").exists() and not (workspace / "api").exists()
    result = tool_results(api.message_requests()[1].body)["toolu_w"]
    told = result.split("introduced these errors")[1]
    assert f'{api_root / "m.py"}:1:10: Type "str" is not assignable' in told
