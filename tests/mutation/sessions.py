"""The mutation run's two steps around cosmic-ray (scripts/mutation.sh calls them).

``config``: one module's session config, from the template ``cosmic-ray.toml`` with the
module's path, its test command and the per-mutant timeout filled in.

``report``: from the sessions' dumps (``cosmic-ray dump``, one JSON line per mutant), per
module the mutants, how many the tests killed, timed out on, let survive, and how many of the
survivors are reviewed equivalents (``equivalent.toml``, and the mutants of annotations alone
that run_mutant.py finds); the share of non-equivalent mutants
killed; then every other survivor (operator, line, the mutated line) to act on, and the
equivalents that no longer match a survivor. Exit status 1 while any non-equivalent mutant
survives (or did not run), else 0.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

Outcome = Literal["killed", "timed out", "survived", "error", "pending", "invalid"]

# What cosmic-ray's local runner writes as the output of a test run it stopped at the timeout.
_TIMEOUT_OUTPUT = "timeout"
_TIMEOUT_FAILURE = "Failed: Timeout"  # pytest-timeout's, when one test hangs
# What run_mutant.py prints when it could not run the tests, or when no test executes the line.
_RUNNER_ERROR = "MUTATION-RUNNER-ERROR"
_NOT_PYTHON = "MUTATION-NOT-PYTHON"
_ANNOTATION_ONLY = "MUTATION-ANNOTATION-ONLY"
_UNTESTED = "no test executes line"
_MODULE_ROOT = "server/tiller/"


# --- config -----------------------------------------------------------------------------------


def _toml_string(text: str) -> str:
    """A TOML literal string (cosmic-ray's ``toml`` parser mishandles some escapes)."""
    if "'" in text or "\n" in text:
        raise SystemExit(f"cannot write {text!r} in the config: it holds a quote or a newline")
    return f"'{text}'"


def session_config(template: str, module: str, command: str, timeout: float) -> str:
    """The template with ``module-path``, ``test-command`` and ``timeout`` set."""
    values = {
        "module-path": _toml_string(module),
        "test-command": _toml_string(command),
        "timeout": f"{timeout:.1f}",
    }
    text = template
    for key, value in values.items():
        text, count = re.subn(rf"(?m)^{re.escape(key)} = .*$", f"{key} = {value}", text)
        if count != 1:
            raise SystemExit(f"the template sets {key} {count} times, not once")
    return text


# --- reading a session ------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutant:
    """One mutant of a session: where, what it changed, and what the tests did with it."""

    module: str  # under server/tiller/
    operator: str  # cosmic-ray's name without ``core/``
    line: int
    definition: str  # the enclosing function or class ('' at module level)
    original: str  # the changed source line(s), stripped
    mutated: str  # the same line(s) in the mutant
    after: str  # the nearest line above them that is not blank, stripped
    outcome: Outcome
    untested: bool = False  # no test executes the mutated lines
    annotation_only: bool = False  # equivalent by construction (run_mutant.py)


def _changed_lines(diff: str) -> tuple[str, str, str]:
    """The removed and the added lines of a one-hunk unified diff, each stripped and joined
    (blank ones left out: cosmic-ray drops blank lines around what it changes), and the
    nearest line of context above them that is not blank."""
    removed: list[str] = []
    added: list[str] = []
    above = ""
    for line in diff.splitlines():
        if line.startswith(("---", "+++", "@@")) or not line[1:].strip():
            continue
        if line.startswith("-"):
            removed.append(line[1:].strip())
        elif line.startswith("+"):
            added.append(line[1:].strip())
        elif not removed:
            above = line.strip()
    return " / ".join(removed), " / ".join(added), above


def _outcome(result: dict[str, object] | None) -> Outcome | None:
    """What became of a work item; None when it is no mutant (filtered, or none possible)."""
    if result is None:
        return "pending"
    match result.get("worker_outcome"), result.get("test_outcome"):
        case (("skipped" | "no-test"), _):
            return None
        case "normal", "killed":
            output = str(result.get("output") or "")
            if output == _TIMEOUT_OUTPUT or _TIMEOUT_FAILURE in output:
                return "timed out"
            return "killed"
        case "normal", "survived":
            output = str(result.get("output") or "")
            if _NOT_PYTHON in output:
                return "invalid"
            return "error" if _RUNNER_ERROR in output else "survived"
        case "exception", _:
            return "invalid"  # cosmic-ray failed to make this mutant
        case _:
            return "error"  # the test command could not run


def read_dump(lines: Iterable[str]) -> list[Mutant]:
    """The mutants of one session from ``cosmic-ray dump``'s JSON lines."""
    mutants: list[Mutant] = []
    for text in lines:
        if not text.strip():
            continue
        item, result = json.loads(text)
        outcome = _outcome(result)
        if outcome is None:
            continue
        (mutation,) = item["mutations"]
        module = str(mutation["module_path"])
        original, mutated, above = _changed_lines(str((result or {}).get("diff") or ""))
        mutants.append(
            Mutant(
                module=module.removeprefix(_MODULE_ROOT),
                operator=str(mutation["operator_name"]).removeprefix("core/"),
                line=int(mutation["start_pos"][0]),
                definition=str(mutation.get("definition_name") or ""),
                original=original,
                mutated=mutated,
                after=above,
                outcome=outcome,
                untested=_UNTESTED in str((result or {}).get("output") or ""),
                annotation_only=_ANNOTATION_ONLY in str((result or {}).get("output") or ""),
            )
        )
    return mutants


# --- the reviewed equivalents -----------------------------------------------------------------


@dataclass(frozen=True)
class Equivalent:
    """A survivor reviewed as equivalent: no test can tell it from the real code."""

    module: str
    operator: str
    definition: str
    original: str
    mutated: str
    after: str  # the line above, so that a common line (return True) names one place
    reason: str

    def matches(self, mutant: Mutant) -> bool:
        where = (self.module, self.operator, self.definition, self.after)
        what = (self.original, self.mutated)
        return (where, what) == (
            (mutant.module, mutant.operator, mutant.definition, mutant.after),
            (mutant.original, mutant.mutated),
        )


def read_equivalents(path: Path) -> list[Equivalent]:
    """``[[equivalent]]`` entries: module, operator, in, after, line, mutant, reason (all
    required)."""
    table = tomllib.loads(path.read_text())
    found: list[Equivalent] = []
    for entry in table.get("equivalent", []):
        try:
            found.append(
                Equivalent(
                    module=str(entry["module"]),
                    operator=str(entry["operator"]),
                    definition=str(entry["in"]),
                    original=str(entry["line"]).strip(),
                    mutated=str(entry["mutant"]).strip(),
                    after=str(entry["after"]).strip(),
                    reason=str(entry["reason"]),
                )
            )
        except KeyError as missing:
            raise SystemExit(f"{path}: an [[equivalent]] entry lacks {missing}: {entry}") from None
    return found


# --- the report -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tally:
    """One module's figures; ``survivors``: those not reviewed as equivalent."""

    name: str
    mutants: int
    killed: int
    timed_out: int
    survived: int
    equivalent: int
    errors: int
    pending: int
    invalid: int  # not counted as mutants: cosmic-ray failed to make them, or they do not compile
    survivors: tuple[Mutant, ...]
    failed: tuple[Mutant, ...]  # the tests could not run on these (errors)

    @property
    def share(self) -> str:
        """Killed (timeouts included) out of the non-equivalent mutants."""
        base = self.mutants - self.equivalent
        caught = self.killed + self.timed_out
        return f"{caught}/{base} = {100 * caught / base:.1f} %" if base else "-"


def tally(name: str, made: Sequence[Mutant], equivalents: Sequence[Equivalent]) -> Tally:
    count = {o: sum(m.outcome == o for m in made) for o in get_args(Outcome)}
    mutants = [m for m in made if m.outcome != "invalid"]
    survivors = [m for m in mutants if m.outcome == "survived"]
    unexplained = tuple(
        m for m in survivors if not m.annotation_only and not any(e.matches(m) for e in equivalents)
    )
    return Tally(
        name=name,
        mutants=len(mutants),
        killed=count["killed"],
        timed_out=count["timed out"],
        survived=count["survived"],
        equivalent=len(survivors) - len(unexplained),
        errors=count["error"],
        pending=count["pending"],
        invalid=count["invalid"],
        survivors=unexplained,
        failed=tuple(m for m in mutants if m.outcome == "error"),
    )


_COLUMNS = ("mutants", "killed", "timed out", "survived", "equivalent", "errors", "pending")


def _row(name: str, t: Tally) -> str:
    figures = (t.mutants, t.killed, t.timed_out, t.survived, t.equivalent, t.errors, t.pending)
    cells = "".join(f"{f:>11}" for f in figures)
    return f"{name:<18}{cells}   {t.share}"


def _list(mutants: Iterable[Mutant]) -> None:
    for m in sorted(mutants, key=lambda m: (m.line, m.operator)):
        where = f"{m.module}:{m.line}"
        untested = "  (no test executes it)" if m.untested else ""
        print(f"  {m.operator:<40} {where:<42} in {m.definition or '<module>'}{untested}")
        print(f"      was: {m.original}")
        print(f"      now: {m.mutated}")


def report(sessions: Sequence[tuple[str, Path]], equivalents_file: Path) -> int:
    equivalents = read_equivalents(equivalents_file)
    tallies: list[Tally] = []
    everyone: list[Mutant] = []
    for name, dump in sessions:
        mutants = read_dump(dump.read_text().splitlines())
        everyone += mutants
        tallies.append(tally(name, mutants, equivalents))
    print(f"{'module':<18}{''.join(f'{c:>11}' for c in _COLUMNS)}   killed share")
    for t in tallies:
        print(_row(t.name, t))
    if len(tallies) > 1:
        total = tally("all", everyone, equivalents)
        print(_row("all", total))
    invalid = sum(t.invalid for t in tallies)
    print(
        "(killed share: killed or timed out, out of the mutants less the reviewed equivalents; "
        f"equivalents: {equivalents_file}; {invalid} mutants cosmic-ray made invalid not counted)"
    )
    for t in tallies:
        for title, listed in (("survivors", t.survivors), ("errors (tests not run)", t.failed)):
            if listed:
                print(f"\n== {t.name}: {len(listed)} {title} (operator, line, the mutated line)")
                _list(listed)
    modules = {m.module for m in everyone}
    stale = [
        e
        for e in equivalents
        if e.module in modules
        and not any(e.matches(m) and m.outcome == "survived" for m in everyone)
    ]
    if stale:
        print(f"\n== {len(stale)} reviewed equivalents match no survivor (killed now, or the")
        print("   code changed): review them again in the equivalents file")
        for e in stale:
            print(f"  {e.operator:<40} {e.module} in {e.definition}: {e.mutated}")
    unfinished = any(t.survivors or t.errors or t.pending for t in tallies)
    return 1 if unfinished else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True)
    config = commands.add_parser("config", help="one module's session config, on stdout")
    config.add_argument("template", type=Path)
    config.add_argument("module", help="the module's path, relative to the tree's root")
    config.add_argument("timeout", type=float, help="seconds per mutant")
    config.add_argument("test_command", help="the test command, as one string")
    summary = commands.add_parser("report", help="the figures and survivors of finished sessions")
    summary.add_argument("equivalents", type=Path)
    summary.add_argument("sessions", nargs="+", help="NAME=DUMP: a module's name and its dump")
    args = parser.parse_args(argv)
    if args.command == "config":
        template = Path(args.template).read_text()
        print(session_config(template, args.module, args.test_command, args.timeout), end="")
        return 0
    sessions = [(s.partition("=")[0], Path(s.partition("=")[2])) for s in args.sessions]
    return report(sessions, args.equivalents)


if __name__ == "__main__":
    sys.exit(main())
