"""The path rule of a workspace with several roots (``workspace/roots.py``), on real folders.

A workspace ``web`` (primary) and ``api``: relative paths are ``web``'s, ``api/...`` is
``api``'s, an absolute path belongs to the root holding it, and whatever a tool shows can be
passed back to name the same file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiller.core.session.sessions import resumed_roots
from tiller.errors import ToolInputError
from tiller.protocol import Thinking
from tiller.tools.base import ReadLedger, ToolContext
from tiller.tools.files import EditFile, ListFiles, ReadFile, WriteFile
from tiller.tools.search import Grep
from tiller.workspace.confined import Outside
from tiller.workspace.roots import Ambiguous, WorkspaceFolder, WorkspaceRoots
from tiller.workspace.store import SessionRow


@pytest.fixture
def two(tmp_path: Path) -> WorkspaceRoots:
    for name in ("web", "api"):
        (tmp_path / name / "src").mkdir(parents=True)
        (tmp_path / name / "src" / "main.py").write_text(f"print('{name}')\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("SECRET\n")
    return WorkspaceRoots.of(tmp_path / "web", tmp_path / "api")


def located(roots: WorkspaceRoots, raw: str) -> Path:
    root = roots.root_for(raw)
    with root.locate(raw) as spot:
        return root.absolute(spot.parts)


def shown(roots: WorkspaceRoots, raw: str) -> str:
    with roots.root_for(raw).locate(raw) as spot:
        return spot.shown


def test_a_relative_path_is_the_primary_roots(two: WorkspaceRoots) -> None:
    assert located(two, "src/main.py") == two.paths[0] / "src" / "main.py"
    assert shown(two, "src/main.py") == "src/main.py"


def test_a_path_starting_with_a_folder_name_is_in_that_folder(two: WorkspaceRoots) -> None:
    assert located(two, "api/src/main.py") == two.paths[1] / "src" / "main.py"
    assert shown(two, "api/src/main.py") == "api/src/main.py"
    assert shown(two, "api") == "api"


def test_an_absolute_path_belongs_to_the_root_holding_it(two: WorkspaceRoots) -> None:
    inside = two.paths[1] / "src" / "main.py"
    assert located(two, str(inside)) == inside
    assert shown(two, str(inside)) == "api/src/main.py"


def test_an_absolute_path_outside_every_root_names_them_all(two: WorkspaceRoots) -> None:
    outside = two.paths[0].parent / "outside" / "secret.txt"
    with pytest.raises(Outside) as caught:
        two.root_for(str(outside))
    assert "outside every workspace folder" in caught.value.message
    assert "web at" in caught.value.message and "api at" in caught.value.message


def test_dot_dot_out_of_a_folder_is_refused(two: WorkspaceRoots) -> None:
    with pytest.raises(Outside):
        located(two, "api/../outside/secret.txt")


def test_a_folder_name_that_is_also_a_primary_entry_is_ambiguous(two: WorkspaceRoots) -> None:
    (two.paths[0] / "api").mkdir()
    with pytest.raises(Ambiguous) as caught:
        two.root_for("api/src/main.py")
    message = caught.value.message
    assert "ambiguous" in message and "'./api/src/main.py'" in message
    assert str(two.paths[1] / "src" / "main.py") in message
    # both ways out work, and the other folder is then shown absolute (its name is taken)
    assert located(two, "./api/x") == two.paths[0] / "api" / "x"
    assert located(two, str(two.paths[1] / "src" / "main.py")) == two.paths[1] / "src/main.py"
    assert shown(two, str(two.paths[1] / "src")) == str(two.paths[1] / "src")
    assert shown(two, "./api") == "./api"


def test_two_folders_with_one_name_are_named_absolutely(tmp_path: Path) -> None:
    (tmp_path / "a" / "lib" / "lib").mkdir(parents=True)
    (tmp_path / "b" / "lib").mkdir(parents=True)
    roots = WorkspaceRoots.of(tmp_path / "a" / "lib", tmp_path / "b" / "lib")
    assert located(roots, "lib/x") == tmp_path / "a" / "lib" / "lib" / "x"  # not a qualifier
    assert shown(roots, str(tmp_path / "b" / "lib" / "x")) == str(tmp_path / "b" / "lib" / "x")


def test_one_root_keeps_the_plain_rule(tmp_path: Path) -> None:
    roots = WorkspaceRoots.of(tmp_path)
    (tmp_path / tmp_path.name).mkdir()
    assert located(roots, f"{tmp_path.name}/x") == tmp_path / tmp_path.name / "x"


def test_the_primary_folder_is_never_removed(two: WorkspaceRoots) -> None:
    changed = two.changed([WorkspaceFolder.of(two.paths[0].parent / "outside")], two.paths)
    assert changed.paths == (two.paths[0], two.paths[0].parent / "outside")


async def test_tools_read_write_list_and_grep_across_roots(two: WorkspaceRoots) -> None:
    ctx = ToolContext(two, ReadLedger())
    read = await ReadFile().run({"path": "api/src/main.py"}, ctx)
    assert not read.is_error and "print('api')" in read.output
    edit = await EditFile().run(
        {"path": "api/src/main.py", "old_string": "api", "new_string": "API"}, ctx
    )
    assert not edit.is_error and edit.edit is not None and edit.edit.path == "api/src/main.py"
    assert (two.paths[1] / "src" / "main.py").read_text() == "print('API')\n"
    wrote = await WriteFile().run({"path": "api/new/n.txt", "content": "n\n"}, ctx)
    assert not wrote.is_error and (two.paths[1] / "new" / "n.txt").read_text() == "n\n"
    listed = await ListFiles().run({}, ctx)
    assert listed.output.splitlines() == ["src/main.py", "api/new/n.txt", "api/src/main.py"]
    only_api = await ListFiles().run({"path": "api/src"}, ctx)
    assert only_api.output.splitlines() == ["api/src/main.py"]
    grep = await Grep().run({"pattern": "print"}, ctx)
    assert grep.output.splitlines() == [
        "src/main.py:1:print('web')",
        "api/src/main.py:1:print('API')",
    ]


async def test_a_symlink_in_a_second_root_never_leads_out(two: WorkspaceRoots) -> None:
    outside = two.paths[0].parent / "outside"
    (two.paths[1] / "escape").symlink_to(outside)
    (two.paths[1] / "to_web").symlink_to(two.paths[0] / "src")
    ctx = ToolContext(two, ReadLedger())
    for path in ("api/escape/secret.txt", "api/to_web/main.py"):
        result = await ReadFile().run({"path": path}, ctx)
        assert result.is_error and "outside the workspace" in result.output
        assert "SECRET" not in result.output
    wrote = await WriteFile().run({"path": "api/escape/new.txt", "content": "x"}, ctx)
    assert wrote.is_error and not (outside / "new.txt").exists()


# --- the rule as a property: whatever is shown names the same file again ---------------------

NAMES = st.sampled_from(["src", "api", "web", "docs", "main.py", "x"])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    root=st.integers(min_value=0, max_value=2),
    parts=st.lists(NAMES, min_size=1, max_size=3),
    primary_has=st.sets(st.sampled_from(["api", "docs", "src"])),
)
def test_a_shown_path_resolves_to_the_same_file(
    root: int, parts: list[str], primary_has: set[str]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(os.path.realpath(tmp))
        folders = [base / "web", base / "api", base / "docs"]
        for folder in folders:
            folder.mkdir()
        for name in primary_has:
            (folders[0] / name).mkdir(exist_ok=True)
        roots = WorkspaceRoots.of(*folders)
        target = folders[root].joinpath(*parts)
        text = roots.shown(target)
        try:
            again = located(roots, text)
        except ToolInputError as err:  # only a missing directory on the way may stop it
            assert "does not exist" in err.message, err.message
            return
        assert again == target, (text, again, target)


# --- Claude Code's permissions.additionalDirectories ----------------------------------------


def test_settings_additional_directories_become_roots_and_a_missing_one_is_told(
    tmp_path: Path,
) -> None:
    from tiller.extend.additional_dirs import additional_directories
    from tiller.extend.settings_layer import read_settings
    from tiller.extend.trust import Trust

    trusted, untrusted = Trust(True, "the test"), Trust(False, "not trusted yet")
    ws, docs, home = tmp_path / "ws", tmp_path / "docs", tmp_path / "home"
    for folder in (ws / ".claude", docs, home / "notes"):
        folder.mkdir(parents=True)
    (ws / ".claude" / "settings.json").write_text(
        '{"permissions": {"additionalDirectories": ["../docs", "~/notes", "../missing"]}}'
    )
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
    found = additional_directories(read_settings(ws, trusted, env), env)
    assert found.found == (docs, home / "notes")
    assert len(found.problems) == 1 and "../missing is not a directory" in found.problems[0]
    # an untrusted folder's files widen nothing: no folder of theirs becomes a root
    assert additional_directories(read_settings(ws, untrusted, env), env).found == ()
    (ws / ".claude" / "settings.local.json").write_text(
        '{"permissions": {"additionalDirectories": "../docs"}}'
    )
    problems = read_settings(ws, trusted, env).problems
    assert any("additionalDirectories must be a list" in p for p in problems)


# --- checkpoints: one shadow repository per root, one snapshot id -----------------------------


def test_one_snapshot_id_covers_every_root_and_restores_them_together(tmp_path: Path) -> None:
    from tiller.workspace.checkpoints.roots import RootsShadow, commits_of_root, decode

    web, api = tmp_path / "web", tmp_path / "api"
    for root, name in ((web, "a.txt"), (api, "b.txt")):
        root.mkdir()
        (root / name).write_text("one\n")
    shadow = RootsShadow.open(tmp_path / "data", WorkspaceRoots.of(web, api))
    shadow.ensure()
    before = shadow.snapshot("before")
    (web / "a.txt").write_text("two\n")
    (api / "b.txt").write_text("two\n")
    (api / "new.txt").write_text("new\n")
    after = shadow.snapshot("after")
    assert set(decode(before.commit)) == {str(web), str(api)}
    changes = shadow.changes(after.commit, before.commit)
    assert sorted(changes.changed) == ["a.txt", "api/b.txt"] and changes.added == ("api/new.txt",)
    done = shadow.restore(before.commit)
    assert done.count == 3 and not shadow.restore_pending()
    assert (web / "a.txt").read_text() == (api / "b.txt").read_text() == "one\n"
    assert not (api / "new.txt").exists()
    # a one-root keeper of the primary root keeps the commits multi-root ids name in it
    plain = "f" * 40
    assert commits_of_root([before.commit, plain], web) == {decode(before.commit)[str(web)], plain}
    shadow.collect([before.commit, after.commit])  # commits of both roots: no error


# --- a resumed session's roots (core/sessions.resumed_roots) ----------------------------------


def _stored(primary: Path, *more: Path) -> SessionRow:
    roots = WorkspaceRoots.of(primary, *more)
    return SessionRow(
        "ses_x", str(primary), "t", None, 0.0, 0.0, "m", "default", Thinking(), (), 1,
        roots=roots.folders[1:],
    )  # fmt: skip


def test_a_client_naming_no_second_folder_gets_the_stored_ones_that_still_exist(
    tmp_path: Path,
) -> None:
    web, api, gone = tmp_path / "web", tmp_path / "api", tmp_path / "gone"
    for folder in (web, api):
        folder.mkdir()
    roots, missing = resumed_roots(_stored(web, api, gone), WorkspaceRoots.of(web))
    assert roots.paths == (web, api)
    assert missing == f"gone ({gone})"


def test_a_client_naming_folders_wins_and_another_primary_keeps_its_own(tmp_path: Path) -> None:
    web, api, docs, other = (tmp_path / n for n in ("web", "api", "docs", "other"))
    for folder in (web, api, docs, other):
        folder.mkdir()
    given = WorkspaceRoots.of(web, docs)
    assert resumed_roots(_stored(web, api), given) == (given, "")
    elsewhere = WorkspaceRoots.of(other)
    assert resumed_roots(_stored(web, api), elsewhere) == (elsewhere, "")
