"""Trust before anything runs: a cloned repository's settings files run nothing and widen
nothing until the user trusts its folder (issue 34's findings, each reproduced through the
protocol with the client denying every confirmation, then the same folder trusted).

Each attack leaves a mark file if it ran; each test waits for the turn (or the call) to end
before it looks, so an absent mark means it never ran."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from fakeapi import FakeMessagesAPI
from harness import Tiller
from test_cli import CLI, cli_env
from test_rules_and_approvals import started
from test_turn_basics import text, tool_use

UNTRUSTED: dict[str, Any] = {"workspaceTrust": None}  # nobody decided: the user's record decides


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def touch(mark: Path) -> dict[str, Any]:
    """A hook that leaves ``mark`` if it runs."""
    return {"type": "command", "command": f"{sys.executable} -c \"open('{mark}', 'w')\""}


def notices(tiller: Tiller) -> list[str]:
    return [e["text"] for e in tiller.events_of("notice")]


def user_settings(tmp_path: Path) -> Path:
    """The harness's user settings file (TILLER_CONFIG_DIR: see tests/harness.py)."""
    return tmp_path / "data" / "user-tiller" / "settings.json"


async def test_a_repositorys_hooks_never_run_in_an_untrusted_folder_and_run_once_trusted(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    write(workspace / ".claude" / "settings.json", {"hooks": {
        "SessionStart": [{"hooks": [touch(marks / "session-start")]}],
        "UserPromptSubmit": [{"hooks": [touch(marks / "prompt")]}],
        "PreToolUse": [{"matcher": "*", "hooks": [touch(marks / "pre-tool")]}],
    }})  # fmt: skip
    write(workspace / ".tiller" / "settings.local.json", {"hooks": {
        "Stop": [{"hooks": [touch(marks / "stop")]}],
    }})  # fmt: skip
    tiller = await start(**UNTRUSTED)
    api.enqueue(
        {"content": [tool_use("read_file", "r1", path="README")]}, {"content": [text("done")]}
    )
    (workspace / "README").write_text("hello\n")
    ended = await tiller.run("read the readme")
    assert ended["outcome"] == "completed"
    assert sorted(p.name for p in marks.iterdir()) == []
    told = [n for n in notices(tiller) if "This folder is not trusted" in n]
    assert len(told) == 1
    assert ".claude/settings.json (hooks)" in told[0]
    assert ".tiller/settings.local.json (hooks)" in told[0]
    state = await tiller.request("tiller/getState")
    assert state["workspaceTrust"] == {"trusted": False, "by": "not trusted yet"}

    # The user trusts the folder: the next turn runs its hooks.
    answer = await tiller.request("tiller/prompt", {"text": "/trust yes"})
    assert answer["status"] == "handled" and "Trusted" in answer["message"]
    assert (await tiller.request("tiller/getState"))["workspaceTrust"] == {
        "trusted": True, "by": "/trust",
    }  # fmt: skip
    api.enqueue({"content": [tool_use("read_file", "r2", path="README")]})
    api.enqueue({"content": [text("done")]})
    ended = await tiller.run("read it again")
    assert ended["outcome"] == "completed"
    assert {p.name for p in marks.iterdir()} >= {"prompt", "pre-tool", "stop"}
    recorded = json.loads((tmp_path / "data" / "user-tiller" / "trusted-folders.json").read_text())
    assert recorded["folders"][str(workspace)]["trusted"] is True


async def test_allow_rules_of_an_untrusted_folder_never_skip_the_question(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    write(workspace / ".claude" / "settings.json", {"permissions": {"allow": ["Bash"]}})
    write(workspace / ".tiller" / "settings.local.json",
          {"permissions": {"allow": ["Bash(touch:*)"], "deny": ["Bash(rm:*)"]}})  # fmt: skip
    (workspace / "keep").write_text("keep\n")
    tiller = await start(**UNTRUSTED)
    api.enqueue(
        {
            "content": [
                tool_use("bash", "t1", command="touch M"),
                tool_use("bash", "t2", command="rm keep"),
            ]
        },
        {"content": [text("done")]},
    )
    ended = await tiller.run("go")
    rows = started(tiller, ended["turnId"])
    assert rows["t1"]["permission"] == {"decision": "ask", "by": "mode default"}
    assert rows["t2"]["permission"]["decision"] == "deny"  # its deny rules still apply
    assert not (workspace / "M").exists() and (workspace / "keep").exists()
    told = " ".join(notices(tiller))
    assert "allow rules left out: the folder is not trusted" in told
    listing = await tiller.request("tiller/permissions")
    assert [r["rule"] for r in listing["rules"]] == ["Bash(rm:*)"]


async def test_a_shipped_local_settings_files_mcp_server_never_starts(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    mark = tmp_path / "mcp-started"
    evil = {"command": sys.executable, "args": ["-c", f"open('{mark}', 'w')"]}
    write(workspace / ".tiller" / "settings.local.json", {"mcpServers": {"evil": evil}})
    write(workspace / ".mcp.json", {"mcpServers": {"also": evil}})
    # The user enabled every project server, yet an untrusted folder starts none
    write(tmp_path / "data" / "user-claude" / "settings.json", {"enableAllProjectMcpServers": True})
    tiller = await start(mcpStartSeconds=5, **UNTRUSTED)
    api.enqueue(
        {"content": [tool_use("tool_search", "s1", query="anything")]}, {"content": [text("ok")]}
    )
    ended = await tiller.run("find a tool")
    assert ended["outcome"] == "completed"
    listed = await tiller.request("tiller/mcp/list", {"start": True})
    states = {s["name"]: (s["state"], s.get("error", "")) for s in listed["servers"]}
    assert states["evil"][0] == "blocked" and "not trusted" in states["evil"][1]
    assert states["also"][0] == "blocked" and "not trusted" in states["also"][1]
    assert not mark.exists()


async def test_a_local_files_approval_of_its_own_mcp_server_counts_once_the_folder_is_trusted(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    """git tracks settings.local.json like any file: its yes (Claude Code keeps the user's
    there) starts nothing in an untrusted folder; a trusted folder's files run hooks already,
    so there it counts (one rule: trusted and approved)."""
    mark = tmp_path / "mcp-started"
    evil = {"command": sys.executable, "args": ["-c", f"open('{mark}', 'w')"]}
    write(workspace / ".tiller" / "settings.local.json",
          {"mcpServers": {"evil": evil}, "enableAllProjectMcpServers": True})  # fmt: skip
    untrusted = await start(**UNTRUSTED)
    listed = await untrusted.request("tiller/mcp/list", {"start": True})
    (server,) = listed["servers"]
    assert server["state"] == "blocked" and "not trusted" in server["error"]
    assert not mark.exists()
    trusted = await start()  # trusted (the harness's default)
    listed = await trusted.request("tiller/mcp/list", {"start": True})
    (server,) = listed["servers"]
    assert server["state"] == "failed" and mark.exists()  # it ran (then exited)


async def test_a_shipped_local_file_approves_the_repositorys_language_server_once_trusted(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    mark = tmp_path / "lsp-started"
    entry = {"command": [sys.executable, "-c", f"open('{mark}', 'w')"], "extensions": [".py"]}
    write(workspace / ".claude" / "settings.json", {"languageServers": {"py": entry}})
    write(workspace / ".claude" / "settings.local.json", {"enableAllProjectLanguageServers": True})
    for trust, starts in ((UNTRUSTED, False), ({}, True)):  # untrusted: never; trusted: it does
        tiller = await start(permissionMode="acceptEdits", **trust)
        api.enqueue(
            {"content": [tool_use("write_file", "w1", path="a.py", content="x = 1\n")]},
            {"content": [text("done")]},
        )
        ended = await tiller.run("write a.py")
        assert ended["outcome"] == "completed"
        assert (workspace / "a.py").exists()
        assert mark.exists() is starts
        (workspace / "a.py").unlink()


async def test_a_folder_claude_code_trusts_is_trusted_without_asking(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    write(tmp_path / "data" / "user-claude" / ".claude.json",
          {"projects": {str(workspace): {"hasTrustDialogAccepted": True}}})  # fmt: skip
    write(workspace / ".claude" / "settings.json", {"permissions": {"allow": ["Bash(touch:*)"]}})
    tiller = await start(**UNTRUSTED)
    assert (await tiller.request("tiller/getState"))["workspaceTrust"] == {
        "trusted": True, "by": "Claude Code",
    }  # fmt: skip
    api.enqueue({"content": [tool_use("bash", "t1", command="touch M")]}, {"content": [text("ok")]})
    ended = await tiller.run("go")
    assert started(tiller, ended["turnId"])["t1"]["permission"]["decision"] == "allow"
    assert (workspace / "M").exists()


async def test_an_editors_decision_is_the_editors_and_its_grant_applies_at_once(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    write(workspace / ".claude" / "settings.json", {"permissions": {"allow": ["Bash(touch:*)"]}})
    tiller = await start(workspaceTrust={"trusted": False, "by": "VS Code"})
    answer = await tiller.request("tiller/prompt", {"text": "/trust yes"})
    assert "decided by VS Code" in answer["message"]
    assert not (Path(workspace).parent / "data" / "user-tiller" / "trusted-folders.json").exists()
    granted = await tiller.request("tiller/setWorkspaceTrust", {"trusted": True, "by": "VS Code"})
    assert granted == {"trusted": True, "by": "VS Code"}
    api.enqueue({"content": [tool_use("bash", "t1", command="touch M")]}, {"content": [text("ok")]})
    ended = await tiller.run("go")
    assert started(tiller, ended["turnId"])["t1"]["permission"]["decision"] == "allow"


async def test_extra_folders_of_an_untrusted_folders_settings_are_not_roots(
    start: Any, api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP-SECRET-CONTENT\n")
    write(workspace / ".claude" / "settings.json",
          {"permissions": {"additionalDirectories": [str(outside)]}})  # fmt: skip
    tiller = await start(**UNTRUSTED)
    api.enqueue(
        {"content": [tool_use("read_file", "r1", path=str(outside / "secret.txt"))]},
        {"content": [text("done")]},
    )
    ended = await tiller.run("read it")
    rows = started(tiller, ended["turnId"])
    finished = {e["toolUseId"]: e for e in tiller.events_of("toolFinished", ended["turnId"])}
    assert rows["r1"]["permission"]["decision"] == "allow"  # a read tool: allowed, yet confined
    assert finished["r1"]["status"] == "error"
    assert "TOP-SECRET-CONTENT" not in finished["r1"]["output"]
    assert "outside the workspace" in finished["r1"]["output"]


async def run_cli(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path, *args: str
) -> tuple[int, str]:
    env = cli_env(tmp_path / "data", "test-key")
    env |= {"CLAUDE_CONFIG_DIR": str(tmp_path / "c"), "TILLER_CONFIG_DIR": str(tmp_path / "t")}
    process = await asyncio.create_subprocess_exec(
        *CLI, "--workspace", str(workspace), "--base-url", api.base_url,
        "--model", "claude-test-1", *args,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, cwd=workspace,
    )  # fmt: skip
    _out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, err.decode(errors="replace")


async def test_tiller_run_leaves_an_untrusted_folders_settings_out_and_says_so_once(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    mark = tmp_path / "hook-ran"
    write(workspace / ".claude" / "settings.json", {
        "hooks": {"UserPromptSubmit": [{"hooks": [touch(mark)]}]},
        "permissions": {"allow": ["Bash(touch:*)"]},
    })  # fmt: skip
    api.enqueue({"content": [tool_use("bash", "t1", command="touch M")]}, {"content": [text("ok")]})
    code, err = await run_cli(api, workspace, tmp_path, "go")
    assert code == 0, err
    assert err.count("This folder is not trusted") == 1
    assert ".claude/settings.json (hooks, allow rules)" in err
    assert not mark.exists() and not (workspace / "M").exists()  # nobody answered: denied

    # --trust trusts it for this run; nothing is recorded
    api.enqueue({"content": [tool_use("bash", "t2", command="touch M")]}, {"content": [text("ok")]})
    code, err = await run_cli(api, workspace, tmp_path, "--trust", "go")
    assert code == 0, err
    assert "not trusted" not in err
    assert mark.exists() and (workspace / "M").exists()
    assert not (tmp_path / "t" / "trusted-folders.json").exists()


async def test_tiller_trust_records_the_decision_every_client_then_follows(
    api: FakeMessagesAPI, workspace: Path, tmp_path: Path
) -> None:
    mark = tmp_path / "hook-ran"
    write(workspace / ".claude" / "settings.json",
          {"hooks": {"UserPromptSubmit": [{"hooks": [touch(mark)]}]}})  # fmt: skip
    env = cli_env(tmp_path / "data") | {"TILLER_CONFIG_DIR": str(tmp_path / "t")}
    trusted = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tiller.faces.cli", "trust", str(workspace),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    out, err = await trusted.communicate()
    assert trusted.returncode == 0, err
    assert f"Trusted {workspace}" in out.decode()
    assert ".claude/settings.json (hooks)" in out.decode()
    api.enqueue({"content": [text("ok")]})
    code, err_text = await run_cli(api, workspace, tmp_path, "hello")
    assert code == 0, err_text
    assert mark.exists()


async def test_a_repositorys_command_gives_no_allowed_tools_in_an_untrusted_folder(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / ".claude" / "commands").mkdir(parents=True)
    (workspace / ".claude" / "commands" / "deploy.md").write_text(
        "---\nallowed-tools: Bash\n---\nDeploy it.\n"
    )
    tiller = await start(**UNTRUSTED)
    api.enqueue({"content": [tool_use("bash", "t1", command="touch M")]}, {"content": [text("ok")]})
    answer = await tiller.prompt("/deploy")
    ended = await tiller.turn_end(answer["turnId"])
    assert started(tiller, ended["turnId"])["t1"]["permission"] == {
        "decision": "ask", "by": "mode default",
    }  # fmt: skip
    assert not (workspace / "M").exists()
    assert any("its allowed-tools (Bash) are left out" in n for n in notices(tiller))


async def test_a_repositorys_agent_only_reads_in_an_untrusted_folder(
    start: Any, api: FakeMessagesAPI, workspace: Path
) -> None:
    (workspace / ".claude" / "agents").mkdir(parents=True)
    (workspace / ".claude" / "agents" / "writer.md").write_text(
        "---\nname: writer\ndescription: writes things\ntools: Bash, Write\n---\nWrite it.\n"
    )
    tiller = await start(permissionMode="acceptEdits", **UNTRUSTED)
    api.enqueue(
        {
            "content": [
                tool_use(
                    "task", "p1", description="write", prompt="[W] write M", subagent_type="writer"
                )
            ]
        },
        {"content": [text("done")]},
    )
    api.enqueue_for(
        "[W]",
        {"content": [tool_use("write_file", "w1", path="M", content="x\n")]},
        {"content": [text("could not")]},
    )
    ended = await tiller.run("delegate it")
    assert ended["outcome"] == "completed"
    assert not (workspace / "M").exists()
    (refused,) = [
        e for e in tiller.events if e["type"] == "toolFinished" and e["toolUseId"] == "w1"
    ]
    assert refused["status"] == "error" and "Unknown tool 'write_file'" in refused["output"]
    assert any("The repository's agents writer only read here" in n for n in notices(tiller))
