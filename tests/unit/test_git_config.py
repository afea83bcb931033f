"""git_config: which repositories git would use from a directory, found the way git finds
them (pointer files, HEAD, the index's gitlinks), and whether any could run a program.
(The classifier's git tests, through ``is_read_only_command``, are in test_bash_readonly.py.)"""

from __future__ import annotations

import os
import struct
import subprocess
import time
from pathlib import Path

import pytest

from tiller.workspace.bash import git_config
from tiller.workspace.bash.git_config import repository_is_inert

PROGRAM = "[core]\n\tpager = touch marker\n"  # a config that names a program


def git(cwd: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"},
    )
    return done.stdout


def inert(ws: Path, where: Path | None = None) -> bool:
    return repository_is_inert(str(where or ws), str(ws))


def by_hand(gitdir: Path, config: str | None = None) -> Path:
    """A git directory made by hand, as little as git needs to use it (HEAD, objects, refs),
    with ``config`` as its config when given."""
    (gitdir / "objects").mkdir(parents=True)
    (gitdir / "refs").mkdir()
    (gitdir / "HEAD").write_text("ref: refs/heads/main\n")
    if config is not None:
        (gitdir / "config").write_text(config)
    return gitdir


def add_gitlinks(worktree: Path, *paths: str, oid: str = "1" * 40) -> None:
    """Gitlinks (submodule entries) at ``paths`` in the index of the repository at
    ``worktree``, as ``git submodule add`` would leave them."""
    lines = "".join(f"160000 {oid} 0\t{path}\n" for path in paths)
    git(worktree, "update-index", "--index-info", stdin=lines)


def index_bytes(version: int, body: bytes = b"", entries: int = 0) -> bytes:
    """An index file made by hand: header, ``body`` (entries and extensions), checksum."""
    return b"DIRC" + struct.pack(">II", version, entries) + body + bytes(20)


def entry(name: bytes, *, mode: int = 0o160000, extended: bool = False) -> bytes:
    """One index entry (versions 2 and 3) made by hand: a gitlink unless ``mode`` says."""
    flags = min(len(name), 0xFFF) | (0x4000 if extended else 0)
    head = bytes(24) + struct.pack(">I", mode) + bytes(12) + b"\x11" * 20
    head += struct.pack(">H", flags) + (bytes(2) if extended else b"")
    size = len(head) + len(name)
    return head + name + bytes(8 - size % 8)  # one to eight NULs


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A repository beside the workspace, outside it."""
    place = tmp_path / "elsewhere"
    place.mkdir()
    git(place, "init", "-q")
    return place


def _padded(target: str) -> str:
    """``target`` behind enough ``./`` that its first MAX_POINTER_BYTES bytes name only ``.``."""
    return "./" * (git_config.MAX_POINTER_BYTES // 2 + 8) + target


def test_a_gitdir_file_longer_than_what_is_read_is_refused_not_cut(
    ws: Path, elsewhere: Path
) -> None:
    """Its first 4,096 bytes named the workspace itself (a harmless place), while git reads
    the whole file and uses the repository outside."""
    (ws / ".git").write_text(f"gitdir: {_padded('../elsewhere/.git')}\n")
    assert not inert(ws)
    (ws / ".git").write_text("gitdir: ../elsewhere/.git\n")  # the same, short: refused too
    assert not inert(ws)


def test_a_commondir_file_longer_than_what_is_read_is_refused_not_cut(
    ws: Path, elsewhere: Path
) -> None:
    git(ws, "init", "-q")
    assert inert(ws)
    (ws / ".git" / "commondir").write_text(_padded("../../elsewhere/.git") + "\n")
    assert not inert(ws)


def test_a_pointer_file_of_exactly_the_limit_is_followed(ws: Path) -> None:
    git(ws, "init", "-q", "--separate-git-dir", str(ws / "store"))
    room = git_config.MAX_POINTER_BYTES - len("gitdir: store\n")
    pointer = f"gitdir: {'./' * (room // 2)}{'/' * (room % 2)}store\n"
    assert len(pointer) == git_config.MAX_POINTER_BYTES
    (ws / ".git").write_text(pointer)
    assert inert(ws)
    git(ws / "store", "config", "--file", "config", "core.fsmonitor", "touch marker")
    assert not inert(ws)


# --- HEAD: where git surely stops its walk up --------------------------------------------------


@pytest.fixture
def nested(ws: Path) -> Path:
    """The workspace is a repository whose config names a program; ``sub/.git`` is a
    repository made by hand (HEAD, objects, refs), whose HEAD the test writes."""
    git(ws, "init", "-q")
    git(ws, "config", "core.fsmonitor", "touch marker")
    inner = ws / "sub" / ".git"
    (inner / "objects").mkdir(parents=True)
    (inner / "refs").mkdir()
    return ws / "sub"


@pytest.mark.parametrize(
    "head",
    [
        "ref: refs/heads/main\n",
        "ref:refs/heads/main",
        "0123456789abcdef0123456789abcdef01234567\n",
        "0123456789abcdef0123456789abcdef01234567",
        "ab" * 32 + "\n",  # sha256
    ],
)
def test_git_stops_at_a_repository_whose_head_is_valid(nested: Path, head: str) -> None:
    """git uses sub/.git and never reads the outer repository's config (its program)."""
    (nested / ".git" / "HEAD").write_text(head)
    assert repository_is_inert(str(nested), str(nested.parent))


@pytest.mark.parametrize(
    "head",
    [
        "ref: heads/main\n",  # a symbolic ref outside refs/
        "refs/heads/main\n",
        "garbage\n",
        "",
        "0123456789abcdef0123456789abcdef0123456\n",  # 39 digits
    ],
)
def test_git_walks_on_past_a_repository_whose_head_is_not_valid(nested: Path, head: str) -> None:
    """git skips sub/.git and uses the outer repository, whose config names a program."""
    (nested / ".git" / "HEAD").write_text(head)
    assert not repository_is_inert(str(nested), str(nested.parent))


@pytest.mark.parametrize("missing", ["objects", "refs"])
def test_git_walks_on_past_a_repository_without_objects_or_refs_directories(
    nested: Path, missing: str
) -> None:
    (nested / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (nested / ".git" / missing).rmdir()
    (nested / ".git" / missing).write_text("not a directory\n")
    assert not repository_is_inert(str(nested), str(nested.parent))


@pytest.mark.parametrize("outer_names_a_program", [True, False])
def test_a_head_that_is_a_symbolic_link_is_not_taken_as_valid(
    nested: Path, outer_names_a_program: bool
) -> None:
    """HEAD is read without following a link (a link could point anywhere): the walk goes
    on, and the outer repository decides."""
    (nested / ".git" / "refs-head").write_text("ref: refs/heads/main\n")
    (nested / ".git" / "HEAD").symlink_to("refs-head")
    if not outer_names_a_program:
        git(nested.parent, "config", "--unset", "core.fsmonitor")
    verdict = repository_is_inert(str(nested), str(nested.parent))
    assert verdict is not outer_names_a_program


# --- the index: gitlinks in every format -------------------------------------------------------


def test_gitlinks_after_long_paths_in_an_index_v4_are_found(ws: Path) -> None:
    """Index v4 stores a path as how much of the previous one to drop (a varint, two bytes
    from 128 on) and the rest; git_config reads the index for the submodules git enters."""
    git(ws, "init", "-q")
    # the drops: 301 (bytes 0x81 0x2d), 1, 200 (0x80 0x48), 1
    names = ["p" * 301, "q", "r/" + "s" * 200, "r/t", "u" * 130 + "/v"]
    for name in names:
        git(ws, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},{name}")
    git(ws, "update-index", "--index-version", "4")
    data = (ws / ".git" / "index").read_bytes()
    assert data[4:8] == b"\x00\x00\x00\x04"
    links, shared = git_config.parse_gitlinks(data, 20)
    assert (links, shared) == ([n.encode() for n in sorted(names)], None)


def test_a_path_of_4095_bytes_or_more_in_an_index_v2_is_read_to_its_end(ws: Path) -> None:
    """From 0xFFF bytes on, the entry's length field is saturated and the path ends at NUL."""
    git(ws, "init", "-q")
    names = ["a", "b" * 4094, "c" * 4095, "d" * 5000, "e"]
    add_gitlinks(ws, *names)
    git(ws, "update-index", "--index-version", "2")
    links, _ = git_config.parse_gitlinks((ws / ".git" / "index").read_bytes(), 20)
    assert links == [n.encode() for n in names]


def test_entries_are_read_whatever_their_padding(ws: Path) -> None:
    """An entry ends with one to eight NULs, to a multiple of 8 bytes (62 + 2 is one)."""
    git(ws, "init", "-q")
    names = ["ab", "abc", "abcdefghij", "b", "c" * 9]
    add_gitlinks(ws, *names)
    git(ws, "update-index", "--index-version", "2")
    links, _ = git_config.parse_gitlinks((ws / ".git" / "index").read_bytes(), 20)
    assert links == [n.encode() for n in names]
    handmade = b"".join(entry(n.encode()) for n in names)
    assert git_config.parse_gitlinks(index_bytes(2, handmade, len(names)), 20)[0] == links


def test_extended_flags_are_refused_in_a_version_2_index() -> None:
    body = entry(b"lib", extended=True)
    with pytest.raises(ValueError):
        git_config.parse_gitlinks(index_bytes(2, body, 1), 20)
    assert git_config.parse_gitlinks(index_bytes(3, body, 1), 20) == ([b"lib"], None)


def test_an_entry_running_into_the_checksum_is_refused() -> None:
    whole = entry(b"lib")
    assert git_config.parse_gitlinks(index_bytes(2, whole, 1), 20) == ([b"lib"], None)
    with pytest.raises(ValueError):
        git_config.parse_gitlinks(index_bytes(2, whole[:-12], 1), 20)


def test_a_file_without_the_index_signature_is_refused() -> None:
    with pytest.raises(ValueError):
        git_config.parse_gitlinks(b"DIRX" + index_bytes(2)[4:], 20)


def test_extensions_before_the_link_extension_are_skipped_by_their_size() -> None:
    shared = bytes(range(20))
    link = b"link" + struct.pack(">I", 20) + shared
    for size in (0, 10, 300):
        tree = b"TREE" + struct.pack(">I", size) + b"\xff" * size
        index = index_bytes(2, entry(b"lib") + tree + link, 1)
        assert git_config.parse_gitlinks(index, 20) == ([b"lib"], shared.hex()), size


def test_an_index_shorter_than_its_header_and_checksum_is_refused() -> None:
    with pytest.raises(ValueError):
        git_config.parse_gitlinks(index_bytes(2)[:-1], 20)
    assert git_config.parse_gitlinks(index_bytes(2), 20) == ([], None)  # empty, but whole


def test_bytes_too_few_for_an_extension_are_not_read_as_one() -> None:
    """git reads an extension only where its 8-byte header fits before the checksum."""
    assert git_config.parse_gitlinks(index_bytes(2, b"link123"), 20) == ([], None)
    shared = bytes(range(20))
    linked = index_bytes(2, b"link" + struct.pack(">I", 20) + shared)
    assert git_config.parse_gitlinks(linked, 20) == ([], shared.hex())


@pytest.mark.parametrize("populated_config", [PROGRAM, ""], ids=["program", "harmless"])
def test_a_split_index_is_read_with_its_shared_index(ws: Path, populated_config: str) -> None:
    git(ws, "init", "-q")
    by_hand(ws / "lib" / ".git", populated_config)
    add_gitlinks(ws, "lib")
    git(ws, "update-index", "--split-index")
    assert list((ws / ".git").glob("sharedindex.*"))
    assert inert(ws) is (populated_config == "")


@pytest.mark.parametrize("setup", [["2"], ["3"], ["4"], ["4", "--split-index"]])
@pytest.mark.parametrize("populated_config", [PROGRAM, ""], ids=["program", "harmless"])
def test_submodules_are_found_in_every_index_version_git_writes(
    ws: Path, setup: list[str], populated_config: str
) -> None:
    git(ws, "init", "-q")
    by_hand(ws / "lib" / ".git", populated_config)
    add_gitlinks(ws, "lib")
    if setup == ["3"]:  # git writes version 3 only for an extended flag (intent to add)
        (ws / "new.txt").write_text("new\n")
        git(ws, "add", "-N", "new.txt")
    git(ws, "update-index", "--index-version", *setup)
    assert (ws / ".git" / "index").read_bytes()[4:8] == struct.pack(">I", int(setup[0]))
    assert inert(ws) is (populated_config == "")


def _varint_off_the_end() -> bytes:
    """A version 4 index whose one entry's path varint runs past the file's end."""
    head = bytes(24) + struct.pack(">I", 0o160000) + bytes(12) + b"\x11" * 20 + bytes(2)
    return b"DIRC" + struct.pack(">II", 4, 1) + head + b"\x80" * 21


@pytest.mark.parametrize(
    "index",
    [
        index_bytes(9, entry(b"lib"), 1),  # a version git does not write
        index_bytes(2, entry(b"\xff\xfe"), 1),  # a path that is not UTF-8
        index_bytes(2, entry(b"lib")[:-12], 1),  # cut short
        _varint_off_the_end(),
    ],
)
def test_an_index_that_cannot_be_read_is_not_inert(ws: Path, index: bytes) -> None:
    git(ws, "init", "-q")
    (ws / ".git" / "index").write_bytes(index)
    assert not inert(ws)


@pytest.mark.parametrize("object_format", ["sha256", "sha1"])
@pytest.mark.parametrize("populated_config", [PROGRAM, ""], ids=["program", "harmless"])
def test_gitlinks_are_read_with_the_repositorys_hash_size(
    ws: Path, object_format: str, populated_config: str
) -> None:
    """A sha256 repository's index holds 32-byte object ids."""
    git(ws, "init", "-q", f"--object-format={object_format}")
    git(ws, "config", "core.repositoryformatversion", "1")
    git(ws, "config", "extensions.objectFormat", object_format)
    by_hand(ws / "lib" / ".git", populated_config)
    add_gitlinks(ws, "lib", oid="1" * (64 if object_format == "sha256" else 40))
    assert inert(ws) is (populated_config == "")


@pytest.mark.parametrize("value", ["", "md5"])
def test_an_unknown_or_missing_object_format_is_not_inert(ws: Path, value: str) -> None:
    git(ws, "init", "-q")
    with (ws / ".git" / "config").open("a") as config:
        config.write(f"[extensions]\n\tobjectFormat{' = ' + value if value else ''}\n")
    assert not inert(ws)


# --- submodules: which git enters, and how far ----------------------------------------------


def test_an_unpopulated_submodule_does_not_end_the_check_of_the_next(ws: Path) -> None:
    git(ws, "init", "-q")
    (ws / "a-empty").mkdir()  # a submodule never checked out: git does not look inside
    by_hand(ws / "b-lib" / ".git", PROGRAM)
    add_gitlinks(ws, "a-empty", "b-lib")
    assert not inert(ws)


def test_a_submodule_whose_git_directory_is_absorbed_names_its_own_worktree(ws: Path) -> None:
    """``git submodule absorbgitdirs`` keeps the git directory in .git/modules/NAME, with
    core.worktree naming the submodule's folder: that is where git expects it."""
    git(ws, "init", "-q")
    gitdir = by_hand(ws / ".git" / "modules" / "lib", "[core]\n\tworktree = ../../../lib\n")
    (ws / "lib").mkdir()
    (ws / "lib" / ".git").write_text("gitdir: ../.git/modules/lib\n")
    add_gitlinks(ws, "lib")
    assert inert(ws)
    (gitdir / "config").write_text("[core]\n\tworktree = ../../../elsewhere\n")
    assert not inert(ws)
    (gitdir / "config").write_text("[core]\n\tworktree = ../../../lib\n\tpager = less\n")
    assert not inert(ws)  # the keys after core.worktree are judged too


def test_a_worktree_whose_common_directory_is_outside_is_not_inert(
    ws: Path, elsewhere: Path
) -> None:
    """A linked worktree: its own git directory is inside, the shared one (objects, refs,
    config) outside."""
    gitdir = by_hand(ws / "wt-git")
    (gitdir / "commondir").write_text("../../elsewhere/.git\n")
    (ws / ".git").write_text("gitdir: wt-git\n")
    assert not inert(ws)
    (gitdir / "commondir").write_text("../store\n")  # the same, inside: harmless
    by_hand(ws / "store")
    assert inert(ws)


def test_a_linked_worktrees_own_config_is_checked_too(ws: Path) -> None:
    """git reads the shared config; the worktree's git directory's own config is checked as
    well (erring on the safe side)."""
    gitdir = by_hand(ws / "wt-git")
    (gitdir / "commondir").write_text("../store\n")
    by_hand(ws / "store")
    (ws / ".git").write_text("gitdir: wt-git\n")
    assert inert(ws)
    (gitdir / "config").write_text(PROGRAM)
    assert not inert(ws)


@pytest.mark.parametrize("shared_config", [PROGRAM, ""], ids=["program", "harmless"])
def test_a_git_directory_with_a_commondir_is_a_repository_without_objects_or_refs(
    ws: Path, shared_config: str
) -> None:
    """Its objects and refs are in the common directory, whose config git reads."""
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / ".git" / "commondir").write_text("../store\n")
    by_hand(ws / "store", shared_config)
    assert inert(ws) is (shared_config == "")


@pytest.mark.parametrize("pointer", [b"gitdir: \n", b"gitdir:\n", b"gitdir: a\x00b\n", b"gitdir"])
def test_a_gitdir_file_naming_no_place_is_not_inert(ws: Path, pointer: bytes) -> None:
    (ws / ".git").write_bytes(pointer)
    assert not inert(ws)


def test_at_most_max_repositories_are_looked_at(ws: Path) -> None:
    """A cost bound: the repository and its populated submodules, MAX_REPOSITORIES in all."""
    git(ws, "init", "-q")
    names = [f"m{i:03}" for i in range(git_config.MAX_REPOSITORIES)]
    for name in names:
        by_hand(ws / name / ".git")
    add_gitlinks(ws, *names[:-1])
    assert inert(ws)
    add_gitlinks(ws, names[-1])
    assert not inert(ws)


def _submodule_chain(ws: Path, length: int, pointer_files: bool) -> None:
    """``length`` submodules each inside the previous one (``s/s/s/...``), each populated."""
    worktree = ws
    for _ in range(length):
        add_gitlinks(worktree, "s")
        worktree = worktree / "s"
        if pointer_files:
            by_hand(worktree / "s.git")
            (worktree / ".git").write_text("gitdir: s.git\n")
        else:
            by_hand(worktree / ".git")


@pytest.mark.parametrize("pointer_files", [False, True])
@pytest.mark.parametrize("top_is_a_pointer", [False, True])
def test_submodules_are_followed_max_depth_deep_and_no_deeper(
    ws: Path, pointer_files: bool, top_is_a_pointer: bool
) -> None:
    if top_is_a_pointer:
        git(ws, "init", "-q", "--separate-git-dir", str(ws / "top.git"))
    else:
        git(ws, "init", "-q")
    _submodule_chain(ws, git_config.MAX_DEPTH, pointer_files)
    assert inert(ws)
    deepest = ws.joinpath(*["s"] * git_config.MAX_DEPTH)
    add_gitlinks(deepest, "s")
    by_hand(deepest / "s" / ".git")
    assert not inert(ws)


# --- which config files git reads -------------------------------------------------------------


def test_a_config_that_is_not_utf8_is_not_inert(ws: Path) -> None:
    git(ws, "init", "-q")
    with (ws / ".git" / "config").open("ab") as config:
        config.write(b"[user]\n\tname = \xff\xfe\n")
    assert not inert(ws)


def test_a_gitdir_file_that_is_not_utf8_is_not_inert(ws: Path) -> None:
    (ws / ".git").write_bytes(b"gitdir: \xff\xfe\n")
    assert not inert(ws)


@pytest.mark.parametrize(
    ("variables", "where"),
    [
        ({}, ".config/git/config"),  # XDG_CONFIG_HOME unset: ~/.config
        ({"XDG_CONFIG_HOME": "{ws}/xdg"}, "xdg/git/config"),
        ({"GIT_CONFIG_GLOBAL": "{ws}/global.cfg"}, "global.cfg"),
    ],
)
def test_every_user_config_git_reads_is_checked_where_it_lies_inside(
    ws: Path, monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], where: str
) -> None:
    git(ws, "init", "-q")
    monkeypatch.setenv("HOME", str(ws))
    for name in ("XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value.format(ws=ws))
    assert inert(ws)
    (ws / where).parent.mkdir(parents=True, exist_ok=True)
    (ws / where).write_text(PROGRAM)
    assert not inert(ws)


def test_with_git_config_global_set_the_home_gitconfig_is_not_read(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(ws, "init", "-q")
    monkeypatch.setenv("HOME", str(ws))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(ws / "global.cfg"))
    (ws / ".gitconfig").write_text(PROGRAM)  # git ignores it too
    assert inert(ws)


@pytest.mark.parametrize("key", ["color", "color.", ".ui", "", "core"])
def test_a_key_without_a_section_or_a_name_is_never_harmless(key: str) -> None:
    assert not git_config.key_is_harmless(key, "x")


# --- the cache of verdicts per file -----------------------------------------------------------


def _no_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on no git to read a config with: a config read again is unreadable."""
    monkeypatch.setattr(git_config, "_git_program", lambda workspace: None)


def _seconds_after_the_config_changed(
    ws: Path, monkeypatch: pytest.MonkeyPatch, after: float
) -> None:
    """A repository with an index, its config changed last; the clock ``after`` seconds later."""
    git(ws, "init", "-q")
    (ws / "a.txt").write_text("a\n")
    git(ws, "add", "a.txt")
    git(ws, "config", "user.name", "someone")
    st = (ws / ".git" / "config").stat()
    newest = max(st.st_mtime_ns, st.st_ctime_ns) / 1e9
    monkeypatch.setattr(time, "time", lambda: newest + after)


def test_a_config_judged_once_is_not_read_again_while_its_status_is_unchanged(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The verdicts of the config and of the index are both kept: one does not push out the
    other. Exactly RACY_SECONDS after its last change a file is no longer recent."""
    _seconds_after_the_config_changed(ws, monkeypatch, git_config.RACY_SECONDS)
    assert inert(ws)
    _no_git(monkeypatch)
    assert inert(ws)  # the verdict kept for this status


@pytest.mark.parametrize("after", [0.0, git_config.RACY_SECONDS - 0.5])
def test_a_config_changed_in_the_last_seconds_is_read_again(
    ws: Path, monkeypatch: pytest.MonkeyPatch, after: float
) -> None:
    """A rewrite within one timestamp tick could keep the status: recent files are judged
    each time."""
    _seconds_after_the_config_changed(ws, monkeypatch, after)
    assert inert(ws)
    _no_git(monkeypatch)
    assert not inert(ws)


def test_without_a_git_program_no_config_is_inert(
    ws: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    git(ws, "init", "-q")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert not inert(ws)
