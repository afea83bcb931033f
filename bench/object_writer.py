"""pygit2 against the hand-written git object writer (issue 35, item 4).

``tiller.workspace.checkpoints.objects`` writes a snapshot's blobs, trees and commit as loose
objects itself (hashlib, zlib, a file renamed into place). This bench puts libgit2 (through
pygit2) behind the same interface (``ObjectWriter``: ``put``, ``blob_of``, ``commit``,
``forget``; ``TreeCache``: ``root``, ``reset``), swapped into ``ShadowRepo``
(``checkpoints/shadow_repo.py``), and compares four writers:

- ``hand``: ``objects`` as it is;
- ``odb``: every object written by ``pygit2.Odb.write`` (libgit2 hashes it, looks it up,
  compresses and writes it); trees and commits are built as before, so the objects are the same;
- ``odb-checked``: ``odb`` behind the hand-written writer's look-up (ids remembered, a loose
  file looked for), so libgit2 writes only objects that are not there yet;
- ``repo``: pygit2's own API: ``Repository.create_blob``, a ``TreeBuilder`` per changed folder,
  ``Repository.create_commit``.

Speed, in this process (the server runs the same code in a worker thread), rounds interleaved
(the writers' order turns each round), each on a fresh shadow repository: the first snapshot of
10,000 files of 2 KiB (watched, as the server takes it); an incremental snapshot after 3 files
change, watched and with a full scan; the writer alone (blobs, trees, commit; a new writer,
as in a new process) on 1,000 of those files, then again with every object already there (as
after a restart), each ``Plan.alone_repeats`` times a round; 20 files of 1 MiB of random bytes
(hashing and compression), likewise. Then ``checkpoint_turn.py``'s figure through the
protocol, with the server started by this script (``--serve WRITER`` swaps the writer in, then
runs ``tiller.faces.serve.main``, what ``python -m tiller`` runs), ``hand`` and ``odb``
interleaved, alone and under load 3 (``--load``). Medians; each pygit2 writer also as its
ratio to ``hand``. ``--quick`` measures less (``QUICK``: 8.8 min at load 6-11 on 2 cores).

Correctness, each writer: a series of snapshots of a workspace with odd names (not UTF-8,
spaces, a folder sorting between files of the same stem), links, exec bits, an empty file, a
folder replaced by a file and back: each snapshot's tree must be ``hand``'s, a rewind to the
first and then the last snapshot must give those states back byte for byte, and ``git fsck
--full --strict`` must find nothing. A racy-clean file, on a simulated file system with 1 s
timestamps (``lstat`` truncated): a file rewritten with the same size in the second of the
snapshot that hashed it; the next snapshot must hold the new content, with a full scan and with
the watch; with the racy rule switched off the full scan must miss it (the check can fail).

Needs pygit2, which the project does not install::

    uv run --frozen --with pygit2==1.21.0 python bench/object_writer.py

The figures and the decision (the hand-written writer stays): ``bench/README.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import hashlib
import importlib
import json
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import checkpoint_turn
from _common import Figure, machine_note, median
from _lsp import SERVER_COMMAND, TillerClient
from tiller.faces.serve import main as serve_tiller
from tiller.workspace.checkpoints import scan as shadow_scan
from tiller.workspace.checkpoints import shadow_repo as checkpoints
from tiller.workspace.checkpoints.git import CheckpointError, Entry, ShadowGit
from tiller.workspace.checkpoints.objects import TREE_MODE, ObjectWriter, TreeCache
from tiller.workspace.checkpoints.shadow_repo import ShadowRepo

FILES = 10_000
ALONE_FILES = 1_000  # written by the writer alone, ``Plan.alone_repeats`` times a round
BIG_FILES = 20  # of 1 MiB of random bytes, likewise
WRITERS = ("hand", "odb", "odb-checked", "repo")
TITLE = "pygit2 against the hand-written object writer"
SPENT = ("wall_ms", "user_ms", "kernel_ms", "cpu_ms")
_TYPES = {b"commit": 1, b"tree": 2, b"blob": 3}  # git's object type numbers (libgit2's too)


@dataclass(frozen=True)
class Plan:
    """How much a run measures. The correctness part always takes every writer (seconds)."""

    rounds: int = 3  # in-process rounds, the writers' order turned each round (0: none)
    alone_repeats: int = 4  # writer-alone runs per round, each on other files
    watched_changes: int = 7  # incremental snapshots per round, watched
    scanned_changes: int = 5  # and with a full scan
    writers: tuple[str, ...] = WRITERS[:3]  # in process (``repo`` on request: see QUICK)
    turn_pairs: int = 3  # checkpoint_turn.py runs per writer, interleaved (0: none)
    turn_writers: tuple[str, ...] = ("hand", "odb")
    load: int = checkpoint_turn.LOAD  # busy loops of the loaded protocol runs (0: none)


# ``repo`` is measured in process only when asked for (``--writers``): it cannot write a name
# that is not UTF-8 (the correctness part shows it), so it cannot be adopted, and its first
# snapshot takes twice ``hand``'s time.
FULL = Plan()  # 21.4 min with ``--load 0`` at load 2-13 on 2 cores
# No busy loops: on a host already busier than they would make it they only add noise.
QUICK = Plan(rounds=2, alone_repeats=2, watched_changes=5, scanned_changes=3, turn_pairs=1,
             load=0)  # fmt: skip


@functools.cache
def pygit2() -> Any:
    """pygit2, imported by name: the project does not install it (see the module's doc)."""
    try:
        return importlib.import_module("pygit2")
    except ImportError:
        sys.exit(
            "pygit2 is not installed: uv run --frozen --with pygit2==1.21.0 python " + __file__
        )


# --- the pygit2 writers ---------------------------------------------------------------------


@dataclass
class OdbWriter(ObjectWriter):
    """Every object through libgit2's object database (``Odb.write``): it hashes, looks the id
    up (an object already there has its file's time refreshed), compresses and writes."""

    _odb: Any = None

    def put(self, kind: bytes, data: bytes) -> str:
        if self._odb is None:
            self._odb = pygit2().Odb(str(self.git_dir / "objects"))
        return str(self._odb.write(_TYPES[kind], data))

    def forget(self) -> None:
        self._odb = None  # what gc packed and pruned is looked up afresh


@dataclass
class CheckedOdbWriter(OdbWriter):
    """``OdbWriter`` behind the hand-written writer's look-up: the ids it wrote or found are
    remembered, and libgit2 writes only an object whose loose file is absent (libgit2's own
    look-up of an object already there makes and removes a temporary file)."""

    def put(self, kind: bytes, data: bytes) -> str:
        raw = b"%s %d\0%s" % (kind, len(data), data)
        oid = hashlib.sha1(raw, usedforsecurity=False).hexdigest()
        if oid not in self._known:
            if not (self.git_dir / "objects" / oid[:2] / oid[2:]).exists():
                super().put(kind, data)
            self._known.add(oid)
        return oid


@dataclass
class RepoWriter(ObjectWriter):
    """pygit2's own API: ``create_blob`` and ``create_commit`` on a ``Repository``."""

    _repo: Any = None

    @property
    def repo(self) -> Any:
        if self._repo is None:
            self._repo = pygit2().Repository(str(self.git_dir))
        return self._repo

    def put(self, kind: bytes, data: bytes) -> str:
        if kind != b"blob":
            raise CheckpointError("trees and commits go through the API")
        return str(self.repo.create_blob(data))

    def commit(self, tree: str, message: str) -> str:
        git = pygit2()
        who = git.Signature("tiller", "tiller@localhost", int(time.time()), 0)
        oid = self.repo.create_commit(None, who, who, f"{message}\n", git.Oid(hex=tree), [])
        return str(oid)

    def forget(self) -> None:
        self._repo = None


@dataclass
class BuilderTrees(TreeCache):
    """``TreeCache`` whose trees a ``TreeBuilder`` writes (it sorts the entries itself)."""

    def _write(self, dirty: Iterable[str]) -> str:
        assert isinstance(self.objects, RepoWriter)
        repo, oid = self.objects.repo, pygit2().Oid
        root = ""
        for folder in sorted(dirty, key=lambda f: -f.count("/") if f else 1):
            held = self._folders.get(folder, {})
            parent, _, name = folder.rpartition("/")
            if not held and folder:
                self._folders.pop(folder, None)
                siblings = self._folders.get(parent, {})
                if name in siblings and siblings[name].mode == TREE_MODE:
                    del siblings[name]
                continue
            builder = repo.TreeBuilder()
            for entry_name, entry in held.items():
                builder.insert(entry_name, oid(hex=entry.blob), int(entry.mode, 8))
            tree = str(builder.write())
            if folder:
                self._folders.setdefault(parent, {})[name] = Entry(TREE_MODE, tree)
            else:
                root = tree
        if not root:
            raise CheckpointError("the snapshot's root tree was not written")
        return root


CLASSES: dict[str, tuple[type[ObjectWriter], type[TreeCache]]] = {
    "hand": (ObjectWriter, TreeCache),
    "odb": (OdbWriter, TreeCache),
    "odb-checked": (CheckedOdbWriter, TreeCache),
    "repo": (RepoWriter, BuilderTrees),
}


def install(name: str) -> None:
    """Make ``ShadowRepo`` use writer ``name`` from now on (in this process)."""
    objects, trees = CLASSES[name]
    setattr(checkpoints, "ObjectWriter", objects)  # noqa: B010  (a class name: mypy refuses =)
    setattr(checkpoints, "TreeCache", trees)  # noqa: B010


@contextlib.contextmanager
def writer(name: str) -> Iterator[None]:
    saved = vars(checkpoints)["ObjectWriter"], vars(checkpoints)["TreeCache"]
    install(name)
    try:
        yield
    finally:
        setattr(checkpoints, "ObjectWriter", saved[0])  # noqa: B010
        setattr(checkpoints, "TreeCache", saved[1])  # noqa: B010


def serve(name: str) -> None:
    """What ``python -m tiller`` runs (``tiller.faces.serve.main``), with writer ``name``."""
    if name != "hand":
        pygit2()
    install(name)
    sys.argv = [sys.argv[0]]
    serve_tiller()


# --- speed, in this process -----------------------------------------------------------------


@dataclass(frozen=True)
class Spent:
    wall_ms: float
    user_ms: float  # this process and the children it waited for (git), in user mode
    kernel_ms: float  # and in the kernel (the file system's work: inodes, folders, renames)

    @property
    def cpu_ms(self) -> float:
        return self.user_ms + self.kernel_ms


def timed(work: Callable[[], object]) -> Spent:
    before, started = _usage(), time.perf_counter()
    work()
    wall, after = time.perf_counter() - started, _usage()
    return Spent(wall * 1000, (after[0] - before[0]) * 1000, (after[1] - before[1]) * 1000)


def _usage() -> tuple[float, float]:
    """User and kernel CPU seconds of this process and its waited-for children (getrusage:
    finer than ``os.times``' clock ticks)."""
    me, children = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + children.ru_utime, me.ru_stime + children.ru_stime


def generate(root: Path, files: int, content: Callable[[random.Random], bytes]) -> list[str]:
    """``files`` files in 100 folders; their workspace paths."""
    rng = random.Random(files)
    paths = []
    for n in range(files):
        path = f"pkg{n % 100:02}/file{n:05}.py"
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(content(rng))
        paths.append(path)
    return paths


def small_file(rng: random.Random) -> bytes:
    return rng.randbytes(1024).hex().encode()  # 2 KiB of text, as checkpoint_turn.py's


def big_file(rng: random.Random) -> bytes:
    return rng.randbytes(1024 * 1024)


def write_alone(
    name: str, git_dir: Path, workspace: Path, paths: Sequence[str]
) -> Callable[[], object]:
    """Writer ``name``'s whole part of a first snapshot of ``paths``: every blob, every tree,
    the commit (a new writer: it remembers no id)."""
    writes, trees = CLASSES[name]

    def work() -> None:
        objects = writes(git_dir)
        blobs = [objects.blob_of(workspace / path) for path in paths]
        entries = {p: Entry("100644", b) for p, b in zip(paths, blobs, strict=True) if b}
        objects.commit(trees(objects).root(entries), "alone")

    return work


def one_round(
    plan: Plan,
    name: str,
    scratch: Path,
    small: Path,
    small_paths: list[str],
    big: Path,
    big_paths: list[str],
) -> dict[str, list[Spent]]:
    """Every in-process case with writer ``name``, each on a fresh shadow repository."""
    rng = random.Random(len(name))
    found: dict[str, list[Spent]] = {}
    with writer(name):
        repo = ShadowRepo(scratch / f"{name}-watched.git", small, watch=True)
        repo.ensure()
        found["first snapshot, 10,000 files x 2 KiB, watched"] = [
            timed(lambda: repo.snapshot("first"))
        ]
        found["incremental snapshot, 3 files changed, watched"] = [
            changed_and_snapshot(repo, small, small_paths, rng) for _ in range(plan.watched_changes)
        ]
        repo.close()  # from now on every snapshot scans everything
        repo.snapshot("the first full scan")
        found["incremental snapshot, 3 files changed, full scan"] = [
            changed_and_snapshot(repo, small, small_paths, rng) for _ in range(plan.scanned_changes)
        ]
    for label, workspace, paths, count, again in (
        (f"{ALONE_FILES:,} files x 2 KiB", small, small_paths, ALONE_FILES, True),
        (f"{BIG_FILES} files x 1 MiB random", big, big_paths, BIG_FILES, False),
    ):
        for n in range(plan.alone_repeats):
            some = paths[n * count : (n + 1) * count]
            git = ShadowGit(scratch / f"{name}-alone-{n}-{len(paths)}.git", workspace)
            git.ensure()
            spent = timed(write_alone(name, git.git_dir, workspace, some))
            found.setdefault(f"writer alone, {label}, new objects", []).append(spent)
            if again:
                spent = timed(write_alone(name, git.git_dir, workspace, some))
                found.setdefault(f"writer alone, {label}, every object there", []).append(spent)
    return found


def changed_and_snapshot(
    repo: ShadowRepo, workspace: Path, paths: list[str], rng: random.Random
) -> Spent:
    for path in rng.sample(paths, 3):
        (workspace / path).write_bytes(rng.randbytes(600).hex().encode())
    return timed(lambda: repo.snapshot("after 3 changes"))


def speed(plan: Plan, where: Path | None) -> dict[str, dict[str, list[Spent]]]:
    """case -> writer -> every measurement, rounds interleaved (scratch files under ``where``)."""
    results: dict[str, dict[str, list[Spent]]] = {}
    with tempfile.TemporaryDirectory(prefix="tiller-bench-writer-", dir=where) as raw:
        root = Path(raw)
        small, big = root / "small", root / "big"
        small_paths = generate(small, FILES, small_file)
        big_paths = generate(big, BIG_FILES * plan.alone_repeats, big_file)
        writers = plan.writers
        for n in range(plan.rounds):
            order = [*writers[n % len(writers) :], *writers[: n % len(writers)]]
            for name in order:
                scratch = root / f"round{n}"
                scratch.mkdir(exist_ok=True)
                cases = one_round(plan, name, scratch, small, small_paths, big, big_paths)
                for case, spent in cases.items():
                    results.setdefault(case, {}).setdefault(name, []).extend(spent)
                shown = ", ".join(f"{median([s.wall_ms for s in v]):.0f}" for v in cases.values())
                print(f"  round {n + 1} {name}: {shown} ms ({load_note()})", flush=True)
                shutil.rmtree(scratch)
    return results


def speed_figures(results: Mapping[str, Mapping[str, list[Spent]]]) -> list[Figure]:
    """Per case and writer the median wall time (CPU, user and kernel in the note); each
    pygit2 writer's ratio to ``hand``'s, wall and CPU."""
    figures = []
    for case, by_writer in results.items():
        hand = by_writer.get("hand")
        for name, spent in by_writer.items():
            wall, user, kernel, cpu = (median([getattr(s, k) for s in spent]) for k in SPENT)
            note = f"CPU {cpu:.0f} ms: user {user:.0f}, kernel {kernel:.0f}; n={len(spent)}"
            figures.append(Figure(f"{case}: {name}", wall, "ms", note=note))
            if hand and name != "hand":
                base = [median([getattr(s, k) for s in hand]) for k in SPENT]
                ratios = [
                    m / b if b else math.nan
                    for m, b in zip((wall, user, kernel, cpu), base, strict=True)
                ]
                note = (
                    f"wall; CPU {ratios[3]:.2f}x (user {ratios[1]:.2f}x, kernel {ratios[2]:.2f}x)"
                )
                figures.append(Figure(f"{case}: {name} / hand", ratios[0], "x", note=note))
    return figures


# --- speed, through the protocol ------------------------------------------------------------


def client_for(name: str) -> type[TillerClient]:
    """A client whose server runs writer ``name`` (this script's ``--serve``)."""

    class Swapped(TillerClient):
        @classmethod
        async def spawn(
            cls,
            data_dir: Path,
            stderr_path: Path | None = None,
            command: Sequence[str] = SERVER_COMMAND,
            extra_env: Mapping[str, str] | None = None,
        ) -> TillerClient:
            ours = (sys.executable, __file__, "--serve", name)
            return await super().spawn(data_dir, stderr_path, ours, extra_env)

    return Swapped


async def through_protocol(plan: Plan) -> list[Figure]:
    """``checkpoint_turn.py`` per writer, runs interleaved, alone and (with ``plan.load``)
    under load: its figure (the 10,000-file median minus the 3-file one, which the load's
    noise can make negative) and the 10,000-file median itself, whose ratio to ``hand``'s is
    shown."""
    figures = []
    writers = plan.turn_writers
    for load in (0, plan.load) if plan.load else (0,):
        added: dict[str, list[float]] = {name: [] for name in writers}
        bigs: dict[str, list[float]] = {name: [] for name in writers}
        with checkpoint_turn.load(load) if load else contextlib.nullcontext():
            for n in range(plan.turn_pairs):
                turn = n % len(writers)
                for name in [*writers[turn:], *writers[:turn]]:
                    print(f"  {f'under load {load}' if load else 'alone'}, {name}:", flush=True)
                    setattr(checkpoint_turn, "TillerClient", client_for(name))  # noqa: B010
                    try:
                        value, big, _ = await checkpoint_turn.added_ms(checkpoint_turn.ROUNDS)
                    except (ConnectionError, TimeoutError) as err:  # the run is left out
                        print(f"  that run failed: {type(err).__name__}: {err}", flush=True)
                        continue
                    added[name].append(value)
                    bigs[name].append(big)
        where = f"checkpoint_turn.py, {f'under load {load}' if load else 'alone'}"
        for name in [w for w in writers if added[w]]:
            shown = ", ".join(f"{v:.0f}" for v in added[name])
            figures.append(Figure(f"{where}: {name}", median(added[name]), "ms", 100, "<=",
                                  f"runs: {shown}"))  # fmt: skip
            shown = ", ".join(f"{v:.0f}" for v in bigs[name])
            figures.append(Figure(f"{where}, 10,000 files, prompt -> first tool: {name}",
                                  median(bigs[name]), "ms", note=f"runs: {shown}"))  # fmt: skip
            if name != "hand" and bigs.get("hand"):
                ratio = median(bigs[name]) / median(bigs["hand"])
                figures.append(Figure(f"{where}, 10,000 files: {name} / hand", ratio, "x"))
    return figures


# --- correctness ----------------------------------------------------------------------------

ODD = os.fsdecode(b"caf\xe9.txt")  # not UTF-8


def state(workspace: Path, step: int) -> None:
    """The workspace as it is at ``step`` of the series."""
    match step:
        case 0:
            files = {
                "a.txt": b"a\n", "a-b": b"stem\n", "a0": b"zero\n", "a/inner.txt": b"inner\n",
                "bin.dat": b"\x00\xff\x00binary", "empty": b"", "run.sh": b"#!/bin/sh\n",
                "dir with space/x y.txt": b"spaces\n", "deep/1/2/3/f": b"deep\n",
                "\u00fcn\u00ef.txt": b"utf-8 name\n",
            }  # fmt: skip
            for path, data in files.items():
                (workspace / path).parent.mkdir(parents=True, exist_ok=True)
                (workspace / path).write_bytes(data)
            os.chmod(workspace / "run.sh", 0o755)
            os.symlink("a.txt", workspace / "link")
        case 1:
            (workspace / "a.txt").write_bytes(b"changed\n")
            os.chmod(workspace / "run.sh", 0o644)
            os.unlink(workspace / "link")
            os.symlink("run.sh", workspace / "link")
            shutil.rmtree(workspace / "deep")
            (workspace / "new").mkdir()
            (workspace / "new" / "n.txt").write_bytes(b"new\n")
            (workspace / ODD).write_bytes(b"latin-1 name\n")
        case 2:
            shutil.rmtree(workspace / "a")
            (workspace / "a").write_bytes(b"a file where a folder was\n")
        case 3:
            (workspace / "a").unlink()
            (workspace / "a" / "b").mkdir(parents=True)
            (workspace / "a" / "b" / "c.txt").write_bytes(b"a folder again\n")
            (workspace / "empty").write_bytes(b"x")
        case _:
            pass  # nothing changed: the same tree


STEPS = 5


def digest(root: Path) -> dict[str, tuple[str, str]]:
    found = {}
    for path in sorted(root.rglob("*")):
        rel = os.fsencode(path.relative_to(root)).hex()
        if path.is_symlink():
            found[rel] = ("link", os.readlink(path))
        elif path.is_file():
            mode = oct(path.lstat().st_mode & 0o777)
            found[rel] = (mode, hashlib.sha256(path.read_bytes()).hexdigest())
    return found


@dataclass(frozen=True)
class Verdict:
    writer: str
    trees_equal: int  # snapshots whose tree is hand's
    failure: str  # the first thing that went wrong ("" when nothing)
    fsck: str  # git fsck's complaint ("" when clean)

    @property
    def correct(self) -> bool:
        return not self.failure and not self.fsck and self.trees_equal == STEPS


def series(writers: Sequence[str]) -> list[Verdict]:
    """The series of snapshots, every writer on the same workspace states."""
    with tempfile.TemporaryDirectory(prefix="tiller-bench-writer-") as raw:
        root = Path(raw)
        workspace = root / "ws"
        workspace.mkdir()
        repos: dict[str, ShadowRepo] = {}
        for name in writers:
            with writer(name):
                repos[name] = ShadowRepo(root / f"{name}.git", workspace)
        trees: dict[str, list[str]] = {name: [] for name in writers}
        commits: dict[str, list[str]] = {name: [] for name in writers}
        failures = dict.fromkeys(writers, "")
        digests = []
        for step in range(STEPS):
            state(workspace, step)
            digests.append(digest(workspace))
            for name, repo in repos.items():
                if failures[name]:
                    continue
                try:
                    snapshot = repo.snapshot(f"step {step}")
                except Exception as err:
                    failures[name] = f"step {step}: {type(err).__name__}: {err}"
                    continue
                trees[name].append(snapshot.tree)
                commits[name].append(snapshot.commit)
        for name, repo in repos.items():  # rewinds: to the first state, then the last
            if failures[name]:
                continue
            for index in (0, -1):
                try:
                    repo.restore(commits[name][index])
                except Exception as err:
                    failures[name] = f"rewind: {type(err).__name__}: {err}"
                    break
                if digest(workspace) != digests[index]:
                    failures[name] = f"the rewind to snapshot {index} is not that state"
                    break
        for name, repo in repos.items():
            repo.keep_alive(commits[name])  # fsck follows them: every snapshot is reachable
        hand = trees.get("hand", [])
        return [
            Verdict(name, sum(a == b for a, b in zip(trees[name], hand, strict=False)),
                    failures[name], fsck(repos[name].git_dir))
            for name in writers
        ]  # fmt: skip


def fsck(git_dir: Path) -> str:
    """What ``git fsck --full --strict`` says is wrong ("" when nothing)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), "fsck", "--full", "--strict", "--no-dangling"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    lines = (done.stdout + done.stderr).splitlines()
    complaint = "; ".join(line for line in lines if not line.startswith("notice:"))
    return "" if done.returncode == 0 and not complaint else complaint or f"exit {done.returncode}"


@contextlib.contextmanager
def coarse_timestamps() -> Iterator[None]:
    """``lstat`` as a file system with 1 s timestamps answers it (ext3, HFS+, some network
    file systems): a rewrite in the same second leaves mtime and ctime as they were."""
    real = os.lstat
    second = 1_000_000_000

    def lstat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        st = real(path, *args, **kwargs)
        ns = [getattr(st, f"st_{k}time_ns") // second * second for k in "amc"]
        times: dict[str, float | int] = {}
        for k, v in zip("amc", ns, strict=True):
            times[f"st_{k}time"], times[f"st_{k}time_ns"] = float(v // second), v
        return os.stat_result((*tuple(st)[:7], *(v // second for v in ns)), times)

    setattr(os, "lstat", lstat)  # noqa: B010
    try:
        yield
    finally:
        setattr(os, "lstat", real)  # noqa: B010


@contextlib.contextmanager
def racy_rule(on: bool) -> Iterator[None]:
    saved = shadow_scan.RACY_NS
    if not on:
        shadow_scan.RACY_NS = -(10**19)  # no stat is ever taken as too recent
    try:
        yield
    finally:
        shadow_scan.RACY_NS = saved


def racy_change_seen(name: str, watch: bool, rule_on: bool) -> bool | None:
    """Whether the next snapshot holds a same-size rewrite made in the second of the snapshot
    that hashed the file; None when the second ran out before the rewrite (try again)."""
    with tempfile.TemporaryDirectory(prefix="tiller-bench-racy-") as raw, writer(name):
        workspace = Path(raw) / "ws"
        workspace.mkdir()
        (workspace / "other.txt").write_bytes(b"other\n")
        repo = ShadowRepo(Path(raw) / "shadow.git", workspace, watch=watch)
        repo.ensure()
        with coarse_timestamps(), racy_rule(rule_on):
            time.sleep(1 - time.time() % 1 + 0.01)  # at the start of a second
            second = int(time.time())
            (workspace / "f.txt").write_bytes(b"before\n")
            repo.snapshot("hashes f.txt")
            (workspace / "f.txt").write_bytes(b"after!\n")  # same size, same inode
            if int(time.time()) != second:
                return None
            tree = repo.tree(repo.snapshot("the next snapshot").commit)
        repo.close()
        want = hashlib.sha1(b"blob 7\0after!\n", usedforsecurity=False).hexdigest()
        return tree["f.txt"].blob == want


def racy(writers: Sequence[str]) -> dict[str, dict[str, bool | None]]:
    """writer -> case -> whether the change was seen."""
    cases = {"full scan": (False, True), "watched": (True, True),
             "full scan, racy rule off": (False, False)}  # fmt: skip
    found: dict[str, dict[str, bool | None]] = {}
    for name in writers:
        for case, (watch, rule_on) in cases.items():
            seen = None
            for _ in range(3):
                seen = racy_change_seen(name, watch, rule_on)
                if seen is not None:
                    break
            found.setdefault(name, {})[case] = seen
    return found


def correctness_figures(writers: Sequence[str]) -> list[Figure]:
    figures = []
    verdicts = series(writers)
    seen = racy(writers)
    for verdict in verdicts:
        cases = seen[verdict.writer]
        racy_ok = bool(cases["full scan"] and cases["watched"])
        racy_ok = racy_ok and cases["full scan, racy rule off"] is False  # the check can fail
        shown = "; ".join(f"{c}: {'seen' if s else 'missed' if s is False else '?'}"
                          for c, s in cases.items())  # fmt: skip
        note = (
            f"trees equal to hand's {verdict.trees_equal}/{STEPS}; "
            f"{verdict.failure or 'rewinds exact'}; fsck {verdict.fsck or 'clean'}; racy: {shown}"
        )
        figures.append(
            Figure(f"correct: {verdict.writer}", float(verdict.correct and racy_ok), "",
                   note=note)
        )  # fmt: skip
    return figures


# --- the run --------------------------------------------------------------------------------


def load_note() -> str:
    return f"load average {os.getloadavg()[0]:.2f}"


async def measure(plan: Plan, scratch: Path | None) -> list[Figure]:
    """Every part's figures, each part's printed as soon as it is done."""
    started = time.perf_counter()
    figures = shown(correctness_figures(WRITERS))
    if plan.rounds:
        figures += shown(speed_figures(speed(plan, scratch)))
    if plan.turn_pairs:
        figures += shown(await through_protocol(plan))
    minutes = (time.perf_counter() - started) / 60
    print(f"   the run took {minutes:.1f} min ({load_note()} at its end)", flush=True)
    return figures


def shown(figures: list[Figure]) -> list[Figure]:
    for figure in figures:
        print(figure.line(), flush=True)
    return figures


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=TITLE)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--quick", action="store_true", help="a smaller run (about 10 min)")
    parser.add_argument("--rounds", type=int, help="in-process rounds (0: none)")
    parser.add_argument("--alone-repeats", type=int, help="writer-alone runs per round")
    parser.add_argument("--writers", nargs="+", choices=WRITERS, help="in process")
    parser.add_argument("--turn-pairs", type=int,
                        help="checkpoint_turn.py runs per writer (0: none)")  # fmt: skip
    parser.add_argument("--turn-writers", nargs="+", choices=WRITERS[:3],
                        help="through the protocol")  # fmt: skip
    parser.add_argument("--load", type=int, help="busy loops of the loaded protocol runs (0: none)")
    parser.add_argument(
        "--scratch", type=Path, help="where the in-process cases write (default: the system's "
        "temporary folder; a tmpfs such as /dev/shm leaves the disk's noise out)",
    )  # fmt: skip
    args = parser.parse_args()
    given = {
        "rounds": args.rounds, "alone_repeats": args.alone_repeats, "turn_pairs": args.turn_pairs,
        "load": args.load, "writers": args.writers and tuple(args.writers),
        "turn_writers": args.turn_writers and tuple(args.turn_writers),
    }  # fmt: skip
    plan = replace(
        QUICK if args.quick else FULL, **{k: v for k, v in given.items() if v is not None}
    )
    pygit2()
    print(f"== {TITLE}  ({machine_note()})", flush=True)
    print(f"   pygit2 {pygit2().__version__}, libgit2 {pygit2().LIBGIT2_VERSION}", flush=True)
    print(f"   {plan}", flush=True)
    figures = asyncio.run(measure(plan, args.scratch))
    if args.json:
        args.json.write_text(json.dumps([asdict(f) for f in figures], indent=1))


if __name__ == "__main__":
    main()
