"""Whether git, started in a directory, could run a program that its repository names.

A repository's configuration can name programs that "read-only" git commands run:
``core.fsmonitor`` (``git status``, ``git diff``), ``diff.external``, a textconv driver, a
clean filter, a pager, hooks. Without a sandbox that is code chosen by the repository, run
without the user's yes. So ``repository_is_inert`` finds the repositories git would use, the
way git finds them, and accepts only configurations made of harmless keys:

- walk up from the directory to the first ``.git`` (a directory, or a file ``gitdir: X``) or
  bare repository, as git does; every candidate on the way that git might use is checked,
  and each must lie inside the workspace (a repository outside it could show files from
  outside, and is none of the model's business);
- each repository's ``config`` (and ``config.worktree``, and the common directory's config
  for linked worktrees) is read with git's own parser (``git config --file F --list``, which
  runs no program) and every key must be on an allowlist;
- populated submodules (gitlinks in the index whose directory holds a ``.git``) are checked
  the same way, because ``git status`` and ``git diff`` run git inside them;
- user configuration files that lie inside the workspace are checked too (the workspace is
  writable without asking in ``acceptEdits``).

Anything unusual (unreadable, unparsable, too many repositories, git's location variables
set) is "not inert": the cost is a confirmation. Results per file are cached by its stat,
except for files changed in the last seconds (a rewrite within one timestamp tick could keep
the stat), so the check stays cheap on every call.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

__all__ = ["key_is_harmless", "repository_is_inert"]

MAX_REPOSITORIES = 64  # repositories (submodules included) one check may look at
MAX_DEPTH = 8  # submodules of submodules ...
CONFIG_TIMEOUT_SECONDS = 5.0
RACY_SECONDS = 3.0  # files changed this recently are read again next time
MAX_POINTER_BYTES = 4096  # a longer ``gitdir:`` or ``commondir`` file is refused
_CACHE_LIMIT = 1024

# Variables that move the repository, its index or objects: the walk below would be wrong.
_LOCATION_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_CONFIG",
)

# --- which keys are harmless ----------------------------------------------------------------

# Keys without a subsection (``section.name``, lowercased) that name no program.
_CORE_KEYS = """
    repositoryformatversion filemode bare logallrefupdates ignorecase precomposeunicode
    symlinks autocrlf eol safecrlf quotepath untrackedcache checkstat trustctime abbrev
    compression loosecompression bigfilethreshold whitespace commentchar commentstring
    warnambiguousrefs multipackindex commitgraph preloadindex sharedrepository sparsecheckout
    sparsecheckoutcone splitindex packedrefstimeout filesreflocktimeout protecthfs protectntfs
    longpaths fscache deltabasecachelimit packedgitlimit packedgitwindowsize fsync
    fsyncmethod hidedotfiles fsmonitorhookversion
"""
_DIFF_KEYS = """
    renames algorithm noprefix mnemonicprefix context colormoved colormovedws
    interhunkcontext renamelimit relative statgraphwidth statnamewidth dirstat
    indentheuristic submodule ignoresubmodules suppressblankempty wserrorhighlight
    autorefreshindex srcprefix dstprefix
"""
_OTHER_KEYS = """
    user.name user.email user.useconfigonly user.signingkey init.defaultbranch pull.rebase
    pull.ff
    submodule.recurse submodule.active submodule.fetchjobs merge.conflictstyle
    rerere.enabled rerere.autoupdate extensions.worktreeconfig extensions.objectformat
    extensions.refstorage extensions.noop extensions.preciousobjects
    lfs.repositoryformatversion
"""
_SAFE_KEYS = frozenset(
    [f"core.{name}" for name in _CORE_KEYS.split()]
    + [f"diff.{name}" for name in _DIFF_KEYS.split()]
    + _OTHER_KEYS.split()
)

# Sections whose every key (with or without a subsection) names no program.
_SAFE_SECTIONS = frozenset(
    {
        *("color", "status", "advice", "column", "i18n", "index", "pack", "blame", "grep"),
        *("commit", "tag", "rebase", "fetch", "push", "http", "feature", "maintenance"),
        "branch",  # editors add their own keys (branch.<name>.vscode-merge-base)
    }
)

# Sections that are harmless except for the keys listed.
_SAFE_SECTIONS_EXCEPT = {
    "log": frozenset({"showsignature"}),  # runs gpg
    "gc": frozenset({"recentobjectshook"}),  # a program that lists objects
    # programs on the other end; a promisor remote is fetched from when an object is missing
    "remote": frozenset({"uploadpack", "receivepack", "promisor", "partialclonefilter"}),
}

# Keys with a subsection: ``section.<anything>.name``.
_SAFE_SUBSECTION_KEYS = {
    "submodule": frozenset({"url", "active", "branch", "ignore", "shallow"}),
    "diff": frozenset({"xfuncname", "funcname", "wordregex", "binary"}),  # no textconv, command
}

_FALSE = frozenset({"false", "no", "off", "0"})


def key_is_harmless(key: str, value: str | None) -> bool:
    """Whether the configuration entry ``key`` (as ``git config --list`` spells it) names no
    program that a read-only git command could run."""
    section, _, rest = key.partition(".")
    subsection, _, name = rest.rpartition(".")
    section, name = section.lower(), name.lower()
    if not section or not name:
        return False
    if section in _SAFE_SECTIONS:
        return True
    if section in _SAFE_SECTIONS_EXCEPT:
        return name not in _SAFE_SECTIONS_EXCEPT[section]
    if subsection:
        return name in _SAFE_SUBSECTION_KEYS.get(section, frozenset())
    if f"{section}.{name}" == "core.fsmonitor":
        return value is not None and value.strip().lower() in _FALSE
    return f"{section}.{name}" in _SAFE_KEYS


# --- one configuration file -----------------------------------------------------------------


@dataclass(frozen=True)
class _Config:
    """What a config file says that matters here; ``harmless`` False: it names a program,
    or could not be read."""

    harmless: bool
    worktrees: tuple[str, ...] = ()  # core.worktree values
    hash_size: int = 20


_UNREADABLE = _Config(harmless=False)
_ABSENT = _Config(harmless=True)

_cache: dict[tuple[str, str], tuple[tuple[int, ...], object]] = {}
_cache_lock = threading.Lock()


def _stat_key(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _cached(kind: str, path: str, st: os.stat_result) -> object | None:
    with _cache_lock:
        hit = _cache.get((kind, path))
    return hit[1] if hit is not None and hit[0] == _stat_key(st) else None


def _remember(kind: str, path: str, st: os.stat_result, value: object) -> None:
    newest = max(st.st_mtime_ns, st.st_ctime_ns) / 1e9
    if time.time() - newest < RACY_SECONDS:
        return  # it may change again within the same timestamp: read it next time too
    with _cache_lock:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        _cache[(kind, path)] = (_stat_key(st), value)


def _git_program(workspace: str) -> str | None:
    """git's absolute path, unless it is a program inside the workspace."""
    found = shutil.which("git")
    if found is None or not os.path.isabs(found):
        return None
    return None if _inside(os.path.realpath(found), workspace) else found


def _read_config(path: str, workspace: str) -> _Config:
    """The entries of one config file, by git's own parser (includes not followed)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return _ABSENT
    except OSError:
        return _UNREADABLE
    hit = _cached("config", path, st)
    if isinstance(hit, _Config):
        return hit
    git = _git_program(workspace)
    if git is None:
        return _UNREADABLE
    env = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C", "HOME": "/nonexistent"}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    try:
        done = subprocess.run(
            [git, "config", "--file", path, "--no-includes", "--list", "--null"],
            cwd="/",
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=CONFIG_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return _UNREADABLE
    if done.returncode != 0:
        return _UNREADABLE
    config = _judge_entries(done.stdout)
    _remember("config", path, st, config)
    return config


def _judge_entries(listing: bytes) -> _Config:
    worktrees: list[str] = []
    hash_size = 20
    for raw in listing.split(b"\0"):
        if not raw:
            continue
        try:
            entry = raw.decode()
        except UnicodeDecodeError:
            return _UNREADABLE
        key, newline, rest = entry.partition("\n")
        value = rest if newline else None
        if key.lower() == "core.worktree" and value:
            worktrees.append(value)  # harmless where it names the expected worktree
            continue
        if not key_is_harmless(key, value):
            return _UNREADABLE
        if key.lower() == "extensions.objectformat":
            sizes = {"sha1": 20, "sha256": 32}
            if value is None or value.lower() not in sizes:
                return _UNREADABLE
            hash_size = sizes[value.lower()]
    return _Config(True, tuple(worktrees), hash_size)


# --- the index: which submodules git looks into ---------------------------------------------

_GITLINK = 0o160000
_VERSIONS = frozenset(struct.pack(">I", version) for version in (2, 3, 4))


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """git's offset varint (varint.c) at ``pos``: value and the position after it."""
    c = data[pos]
    pos += 1
    value = c & 127
    while c & 128:
        c = data[pos]
        pos += 1
        value = ((value + 1) << 7) + (c & 127)
    return value, pos


def parse_gitlinks(data: bytes, hash_size: int) -> tuple[list[bytes], str | None]:
    """The gitlink paths in an index file (versions 2-4) and its shared index's name, if
    split. Raises ValueError (or IndexError) on anything it does not understand."""
    if len(data) < 12 + hash_size or data[:4] != b"DIRC":
        raise ValueError("not an index")
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3, 4):
        raise ValueError(f"index version {version}")
    end = len(data) - hash_size
    pos = 12
    previous = b""
    links: list[bytes] = []
    for _ in range(count):
        start = pos
        mode = int.from_bytes(data[pos + 24 : pos + 28], "big")
        flags = int.from_bytes(data[pos + 40 + hash_size : pos + 42 + hash_size], "big")
        pos += 42 + hash_size
        if flags & 0x4000:  # extended flags
            if version < 3:
                raise ValueError("extended flags in a version 2 index")
            pos += 2
        if version == 4:
            strip, pos = _varint(data, pos)
            nul = data.index(b"\0", pos, end)
            if strip > len(previous):
                raise ValueError("bad path compression")
            name = previous[: len(previous) - strip] + data[pos:nul]
            pos = nul + 1
        else:
            length = flags & 0xFFF
            if length == 0xFFF:
                length = data.index(b"\0", pos, end) - pos
            name = data[pos : pos + length]
            pos = start + ((pos - start + length + 8) & ~7)
        if pos > end:
            raise ValueError("truncated index")
        previous = name
        if mode & 0o170000 == _GITLINK:
            links.append(name)
    shared: str | None = None
    while pos + 8 <= end:
        signature = data[pos : pos + 4]
        size = int.from_bytes(data[pos + 4 : pos + 8], "big")
        if signature == b"link":
            shared = data[pos + 8 : pos + 8 + hash_size].hex()
        pos += 8 + size
    return links, shared


def _index_gitlinks(path: str, hash_size: int) -> tuple[str, ...] | None:
    """The gitlink paths in the index at ``path`` (and its shared index); None: unreadable."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return ()
    except OSError:
        return None
    hit = _cached(f"index{hash_size}", path, st)
    if isinstance(hit, tuple):
        return hit
    try:
        with open(path, "rb") as file:
            data = file.read()
        # A gitlink's mode on disk is 00 00 e0 00; without those bytes there is none (fast).
        if data[:4] != b"DIRC" or data[4:8] not in _VERSIONS:
            raise ValueError("not an index git of this kind writes")
        if b"\x00\x00\xe0\x00" not in data and b"link" not in data:
            links: list[bytes] = []
        else:
            links, shared = parse_gitlinks(data, hash_size)
            if shared is not None:
                shared_path = os.path.join(os.path.dirname(path), f"sharedindex.{shared}")
                with open(shared_path, "rb") as file:
                    links += parse_gitlinks(file.read(), hash_size)[0]
        found = tuple(link.decode() for link in links)
    except (OSError, ValueError, IndexError, UnicodeDecodeError, struct.error):
        return None
    _remember(f"index{hash_size}", path, st, found)
    return found


# --- finding repositories the way git does --------------------------------------------------


class _NotInert(Exception):
    """Raised below: some repository git may use could run a program."""


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


_HEAD_REF = re.compile(rb"ref:\s*refs/")
_HEAD_OID = re.compile(rb"[0-9a-f]{40}([0-9a-f]{24})?\s*")


def _maybe_repository(gitdir: str) -> bool:
    """False only where git surely rejects ``gitdir`` (it needs HEAD, objects and refs)."""
    if not os.path.lexists(os.path.join(gitdir, "HEAD")):
        return False
    if os.path.lexists(os.path.join(gitdir, "commondir")):
        return True  # objects and refs are in the common directory
    return all(os.path.lexists(os.path.join(gitdir, name)) for name in ("objects", "refs"))


def _surely_repository(gitdir: str, common: str) -> bool:
    """True only where git surely accepts ``gitdir`` (stricter than git's own test): then
    git stops its walk there."""
    try:
        with open(os.path.join(gitdir, "HEAD"), "rb", opener=_nofollow) as file:
            head = file.read(256)
    except OSError:
        return False
    valid = _HEAD_REF.match(head) is not None or _HEAD_OID.fullmatch(head) is not None
    return (
        valid
        and os.path.isdir(os.path.join(common, "objects"))
        and os.path.isdir(os.path.join(common, "refs"))
    )


def _nofollow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW)


def _read_pointer(path: str, prefix: str) -> str:
    """A ``gitdir: X`` file's or a ``commondir`` file's target, resolved; _NotInert if odd
    (a file longer than ``MAX_POINTER_BYTES`` too: git reads it whole, so its first bytes
    may name another place than git uses)."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_POINTER_BYTES + 1)
        text = data.decode()
    except (OSError, UnicodeDecodeError) as exc:
        raise _NotInert from exc
    if len(data) > MAX_POINTER_BYTES:
        raise _NotInert
    if not text.startswith(prefix):
        raise _NotInert
    target = text[len(prefix) :].rstrip("\r\n")
    if not target or "\0" in target:
        raise _NotInert
    return os.path.realpath(os.path.join(os.path.dirname(path), target))


@dataclass
class _Search:
    """One check: the workspace, and how many repositories it has looked at."""

    workspace: str
    seen: int = 0

    def walk(self, directory: str) -> None:
        """Check every repository git may use when started in ``directory``."""
        current = os.path.realpath(directory)
        if not os.path.isdir(current):
            raise _NotInert
        while True:
            dot_git = os.path.join(current, ".git")
            if os.path.isfile(dot_git):  # git uses the gitdir it names, or dies
                self.repository(_read_pointer(dot_git, "gitdir: "), current, depth=0)
                return
            if (
                os.path.isdir(dot_git)
                and _maybe_repository(dot_git)
                and self.repository(os.path.realpath(dot_git), current, depth=0)
            ):
                return
            if _maybe_repository(current) and self.repository(current, None, depth=0):
                return  # a bare repository
            parent = os.path.dirname(current)
            if parent == current:
                return  # not in a repository: git reads no repository config
            current = parent

    def repository(self, gitdir: str, worktree: str | None, depth: int) -> bool:
        """Check one repository (and its submodules); True when git surely uses it."""
        self.seen += 1
        if self.seen > MAX_REPOSITORIES or depth > MAX_DEPTH:
            raise _NotInert
        common = gitdir
        if os.path.lexists(os.path.join(gitdir, "commondir")):
            common = _read_pointer(os.path.join(gitdir, "commondir"), "")
        if not (_inside(gitdir, self.workspace) and _inside(common, self.workspace)):
            raise _NotInert
        configs = [os.path.join(common, "config"), os.path.join(gitdir, "config.worktree")]
        if common != gitdir:
            configs.append(os.path.join(gitdir, "config"))
        hash_size = 20
        for path in configs:
            config = _read_config(path, self.workspace)
            if not config.harmless:
                raise _NotInert
            for value in config.worktrees:
                where = os.path.realpath(os.path.join(gitdir, value))
                if worktree is None or where != worktree:
                    raise _NotInert
            hash_size = max(hash_size, config.hash_size)
        if os.path.lexists(os.path.join(common, "hooks", "post-index-change")):
            raise _NotInert  # runs when an index is written
        if worktree is not None:
            self.submodules(gitdir, worktree, hash_size, depth)
        return _surely_repository(gitdir, common)

    def submodules(self, gitdir: str, worktree: str, hash_size: int, depth: int) -> None:
        links = _index_gitlinks(os.path.join(gitdir, "index"), hash_size)
        if links is None:
            raise _NotInert
        for link in links:
            dot_git = os.path.join(worktree, link, ".git")
            if not os.path.lexists(dot_git):
                continue  # not populated: git does not look inside
            where = os.path.realpath(os.path.join(worktree, link))
            if not _inside(where, self.workspace):
                raise _NotInert
            if os.path.isfile(dot_git):
                self.repository(_read_pointer(dot_git, "gitdir: "), where, depth + 1)
            else:
                self.repository(os.path.realpath(dot_git), where, depth + 1)


def _user_configs() -> Iterator[str]:
    """The user's own git configuration files (where git would look for them)."""
    explicit = os.environ.get("GIT_CONFIG_GLOBAL")
    if explicit:
        yield explicit
        return
    home = os.environ.get("HOME")
    xdg = os.environ.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else "")
    if xdg:
        yield os.path.join(xdg, "git", "config")
    if home:
        yield os.path.join(home, ".gitconfig")


def repository_is_inert(directory: str, workspace: str, roots: Sequence[str] = ()) -> bool:
    """Whether git started in ``directory`` can only use repositories inside ``workspace``
    whose configuration names no program (nor do user config files inside the workspace or
    any other of the workspace's ``roots``, which the agent may write too)."""
    if any(os.environ.get(name) for name in _LOCATION_VARIABLES):
        return False
    root = os.path.realpath(workspace)
    writable = {root, *(os.path.realpath(r) for r in roots)}
    git = shutil.which("git")
    if git is not None and any(_inside(os.path.realpath(git), w) for w in writable):
        return False  # the git the command would run is one the agent may have written
    try:
        for path in _user_configs():
            real = os.path.realpath(path)
            holder = next((w for w in writable if _inside(real, w)), None)
            if holder is not None and not _read_config(path, holder).harmless:
                return False
        _Search(root).walk(directory)
    except (_NotInert, OSError):
        return False
    return True
