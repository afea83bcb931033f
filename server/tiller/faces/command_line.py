"""The command line of the terminal clients, parsed and run (``tiller.faces.cli`` is the
cheap front door; it hands ``tiller run`` to a fork of the warm template, which runs it
here). It hands over to ``tiller run`` (the headless client,
``tiller.faces.client.headless``), ``tiller chat`` (the resident shell,
``tiller.faces.chat``) or ``tiller acp`` (the Agent Client Protocol, ``tiller.faces.acp``).

``tiller run [options] PROMPT...`` starts the server (``python -m tiller``) over stdio, sends
one prompt, streams what happens and exits when the turn ends (output:
``tiller.faces.client.plain``). ``tiller run -``, or no PROMPT with stdin not a terminal,
reads the prompt from stdin. For CI (docs/ci.md): ``--output-format json`` prints one result
object, ``stream-json`` every event as a JSON line between an ``init`` and a ``result`` line
(``tiller.faces.client.report``); ``--max-turns N`` stops the run before the tool calls of
the model's response N+1 (``tiller.faces.client.limits``); ``--allowed-tools`` /
``--disallowed-tools`` answer the server's confirmations for the tools they name.

Exit codes (one per outcome; ``EXIT_*`` in ``tiller.faces.client.options``):
0 completed (or a slash command handled), 1 failed (the turn failed: ``error.kind`` says
why), 2 stopped (at a checkpoint, at ``--max-turns``, or at a plan that no terminal could
approve: ``--yes`` approves it), 3 refused (the model declined), 64 usage error (the command
line, or options the server refused), 70 server died (it exited, or the link to it broke,
mid-run), 130 interrupted (Ctrl-C).

``--demo`` without ``--workspace`` plays in a new temporary folder, removed when the client
exits (with the server it started).

``tiller chat`` with stdout not on a terminal runs the headless client too: each line of stdin
is a prompt, rendered as ``tiller run`` renders it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from tiller import __version__
from tiller.faces.client.options import (
    EXIT_USAGE,
    OUTPUT_FORMATS,
    SERVER_TOOL_BUDGET,
    ChatOptions,
    RunOptions,
    ToolRules,
)
from tiller.jsontypes import JSON

DEMO_PREFIX = "tiller-demo-"
STDIN_PROMPT = "-"
RUN_EXIT_CODES = """exit codes:
  0    completed (or a slash command handled)
  1    failed (the turn failed; with --output-format json, error.kind says why)
  2    stopped (a checkpoint, --max-turns, or a plan with no terminal to approve it on)
  3    refused (the model declined)
  64   usage error
  70   server died (it exited, or the link to it broke, mid-run)
  130  interrupted (Ctrl-C)

JSON output, its schema and a CI example: docs/ci.md."""


class UsageError(Exception):
    """A wrong command line: exit 64 with the message."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _add_session_options(command: argparse.ArgumentParser) -> None:
    """The options ``run`` and ``chat`` share: mode, model, where answers come from, workspace."""
    from tiller.protocol import MODE_WORDS, MODES

    command.add_argument(
        "--mode",
        choices=MODES,
        default="default",
        help="permission mode: "
        + ", ".join(f"{mode} ({MODE_WORDS[mode]})" for mode in MODES)
        + "; default: %(default)s",
    )
    command.add_argument("--model", help="model id (default: $TILLER_MODEL or the server's)")
    source = command.add_mutually_exclusive_group()
    source.add_argument(
        "--demo", action="store_true", help="play the bundled offline demo instead of a model"
    )
    source.add_argument("--script", metavar="FILE", help="play a JSON script of responses")
    source.add_argument(
        "--base-url", metavar="URL", help="Messages API base URL (key: $ANTHROPIC_API_KEY)"
    )
    command.add_argument(
        "--workspace",
        metavar="DIR",
        type=Path,
        help="workspace root (default: the current directory; with --demo a new temp dir, "
        "removed on exit)",
    )
    command.add_argument(
        "--add-dir",
        metavar="DIR",
        type=Path,
        action="append",
        default=[],
        help="another workspace root the agent may read and write (repeatable); a path in it "
        "is named by the folder's name first (DIR's last component) or absolutely",
    )
    command.add_argument(
        "--tool-budget",
        metavar="N",
        type=int,
        help="ask to continue after every N tool calls (0: never)",
    )
    _add_web_options(command)
    command.add_argument(
        "--trust",
        action="store_true",
        help="trust the workspace for this run: its settings files may run hooks, MCP and "
        "language servers and widen grants (`tiller trust DIR` records it for good)",
    )


def _add_web_options(command: argparse.ArgumentParser) -> None:
    """``--web-search`` / ``--web-fetch`` and their ``--no-`` forms: the API's server tools."""
    for tool, what in (
        ("search", "search the web ($10 per 1,000 searches)"),
        ("fetch", "read web pages by URL"),
    ):
        command.add_argument(
            f"--web-{tool}",
            action=argparse.BooleanOptionalAction,
            default=None,
            help=f"let the model {what}: off unless turned on here or by "
            f'"web{tool.capitalize()}" in settings.json (its domain lists still apply); '
            "--no-… turns it off for this run",
        )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tiller", description="Tiller, a coding agent you can steer.")
    parser.add_argument("--version", action="version", version=f"tiller {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    _add_run_command(commands)
    _add_chat_command(commands)
    _add_server_commands(commands)
    _add_trust_command(commands)
    return parser


def _add_run_command(commands: argparse._SubParsersAction[_Parser]) -> None:
    run = commands.add_parser(
        "run",
        help="run one prompt to its end and exit",
        description="Run one prompt in a workspace and exit when the turn ends.\nThe prompt "
        "is the PROMPT words, or stdin with `-` (or with no PROMPT on a pipe).",
        epilog=RUN_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_session_options(run)
    run.add_argument(
        "--yes", "-y", action="store_true", help="allow every tool call, plan and checkpoint"
    )
    run.add_argument(
        "--output-format",
        choices=OUTPUT_FORMATS,
        default="text",
        help="text (default): the answer and tool log; json: one result object on stdout at "
        "the end; stream-json: every event as a JSON line, then the result (text to stderr)",
    )
    run.add_argument(
        "--max-turns",
        metavar="N",
        type=int,
        help="let the tool calls of at most N model responses run: when response N+1 asks "
        "for tools, they are not run and the run stops (exit 2)",
    )
    run.add_argument(
        "--allowed-tools",
        metavar="TOOLS",
        help="comma-separated tools to allow when the server asks (e.g. bash,write_file)",
    )
    run.add_argument(
        "--disallowed-tools",
        metavar="TOOLS",
        help="comma-separated tools to deny when the server asks (wins over --allowed-tools "
        "and --yes)",
    )
    run.add_argument(
        "--image",
        metavar="PATH",
        action="append",
        default=[],
        help="attach an image (PNG, JPEG, GIF, WebP; repeatable); `@path` in the prompt "
        "attaches workspace files, folders and images too",
    )
    run.add_argument(
        "prompt",
        nargs="*",
        metavar="PROMPT",
        help="what to do; `-` (or nothing, on a pipe) reads it from stdin",
    )


def _add_chat_command(commands: argparse._SubParsersAction[_Parser]) -> None:
    chat = commands.add_parser(
        "chat",
        help="an interactive shell: a prompt that stays while the agent works",
        description="Chat with the agent in the terminal: shift+tab cycles the mode, Escape "
        "interrupts, prompts typed while it works are queued (a line starting with > steers "
        "the running turn instead: the model gets it at its next step), Ctrl-C twice exits; "
        "a bell rings when it needs an answer or finishes (--notify). When stdout "
        "is not a terminal, each line of stdin is a prompt and the output is `tiller run`'s.",
    )
    _add_session_options(chat)
    chat.add_argument("--resume", metavar="ID", help="resume a stored session")
    chat.add_argument(
        "--notify",
        choices=("bell", "osc9", "off"),
        default=os.environ.get("TILLER_NOTIFY") or "bell",
        help="announce questions and finished turns: the terminal bell (default), an OSC 9 "
        "desktop notification, or nothing ($TILLER_NOTIFY)",
    )


def _add_server_commands(commands: argparse._SubParsersAction[_Parser]) -> None:
    """``acp`` and ``connect``: a server on this process's stdio, for an editor."""
    commands.add_parser(
        "acp",
        help="serve the Agent Client Protocol on stdio (Zed, JetBrains, Neovim, Emacs)",
        description="Serve ACP v1 on stdin/stdout for an editor; see docs/acp.md.",
    )
    connect = commands.add_parser(
        "connect",
        help="serve the Tiller protocol on stdio (what an editor's extension starts)",
        description="A server on stdin/stdout, forked from the warm template when it can be "
        "(no import to wait for), else started here; see docs/architecture.md.",
    )
    connect.add_argument("--acp", action="store_true", help="serve ACP instead")


def _add_trust_command(commands: argparse._SubParsersAction[_Parser]) -> None:
    trust = commands.add_parser(
        "trust",
        help="trust a folder: its settings files may run programs and widen grants",
        description="Record your decision for a folder (and its subfolders) in your own "
        "state, never in the folder: trusted, its settings files (.claude/, .tiller/, "
        ".mcp.json) may run hooks, MCP and language servers and widen grants (allow rules, "
        "extra folders, environment); untrusted, they only narrow them (deny and ask rules) "
        "and their instruction files still apply. Every client follows it; VS Code keeps its "
        "own workspace trust.",
    )
    trust.add_argument(
        "folder", nargs="?", type=Path, default=None, help="the folder (default: the current one)"
    )
    trust.add_argument(
        "--no", action="store_true", help="record that the folder is not trusted instead"
    )


def serve_acp() -> NoReturn:
    """``tiller acp``: ACP on this process's stdio, from a warm server when there is one."""
    from tiller.faces.serve import serve_warm

    serve_warm(["--acp"])


def _session_options(args: argparse.Namespace) -> tuple[Path, JSON]:
    if args.tool_budget is not None and args.tool_budget < 0:
        raise UsageError("--tool-budget must be 0 or more")
    options: JSON = {"permissionMode": args.mode}
    if args.model:
        options["model"] = args.model
    if args.tool_budget is not None:
        options["toolBudget"] = args.tool_budget
    if args.demo:
        options["provider"] = {"kind": "scripted", "script": "demo"}
    elif args.script:
        script = Path(args.script).resolve()
        if not script.is_file():
            raise UsageError(f"--script: no such file: {args.script}")
        options["provider"] = {"kind": "scripted", "script": str(script)}
    elif args.base_url:
        options["provider"] = {"kind": "anthropic", "baseUrl": args.base_url}
    if args.trust:
        options["workspaceTrust"] = {"trusted": True, "by": "--trust"}
    if args.web_search is not None:
        options["webSearch"] = {"enabled": args.web_search}
    if args.web_fetch is not None:
        options["webFetch"] = {"enabled": args.web_fetch}

    if args.workspace is not None:
        workspace = args.workspace.expanduser().resolve()
        if not workspace.is_dir():
            raise UsageError(f"--workspace: not a directory: {args.workspace}")
    elif args.demo:
        workspace = Path(tempfile.mkdtemp(prefix=DEMO_PREFIX)).resolve()
        print(
            f"· demo workspace: {workspace} (removed on exit; --workspace DIR keeps one)",
            file=sys.stderr,
            flush=True,
        )
    else:
        workspace = Path.cwd().resolve()
    return workspace, options


def _tool_names(value: str | None, option: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    names = [name.strip() for name in value.split(",")]
    if not all(names):
        raise UsageError(f"{option}: expected comma-separated tool names, got {value!r}")
    return frozenset(names)


def _tool_rules(args: argparse.Namespace) -> ToolRules:
    allowed = _tool_names(args.allowed_tools, "--allowed-tools")
    disallowed = _tool_names(args.disallowed_tools, "--disallowed-tools")
    if both := sorted(allowed & disallowed):
        raise UsageError(f"both allowed and disallowed: {', '.join(both)}")
    return ToolRules(allowed, disallowed)


def _stdin_is_terminal() -> bool:
    try:
        return sys.stdin is None or sys.stdin.isatty()
    except (ValueError, OSError):
        return False


def _read_prompt(words: list[str]) -> tuple[str, bool]:
    """The prompt, and whether it came from stdin (``-``, or no PROMPT on a pipe)."""
    if words == [STDIN_PROMPT] or (not words and not _stdin_is_terminal()):
        if sys.stdin is None:
            raise UsageError("no stdin to read the prompt from")
        return sys.stdin.buffer.read().decode(errors="replace").strip(), True
    if STDIN_PROMPT in words:
        raise UsageError("`-` (the prompt from stdin) must be the only PROMPT")
    if not words:
        raise UsageError("no prompt: give PROMPT, or `-` to read it from stdin")
    return " ".join(words).strip(), False


def parse_run(args: argparse.Namespace) -> RunOptions:
    if args.max_turns is not None and args.max_turns < 1:
        raise UsageError("--max-turns must be 1 or more")
    tools = _tool_rules(args)
    prompt, from_stdin = _read_prompt(args.prompt)
    if not prompt:
        raise UsageError("the prompt is empty")
    workspace, options = _session_options(args)
    budget = SERVER_TOOL_BUDGET if args.tool_budget is None else args.tool_budget
    if args.max_turns is not None:
        options["toolBudget"] = 1  # a checkpoint before every batch; the client keeps `budget`
    return RunOptions(
        prompt,
        workspace,
        options,
        args.yes,
        output_format=args.output_format,
        max_turns=args.max_turns,
        tool_budget=budget,
        tools=tools,
        prompt_from_stdin=from_stdin,
        images=_images(args.image),
        add_dirs=_add_dirs(args.add_dir),
    )


def _add_dirs(raw: list[Path]) -> tuple[Path, ...]:
    dirs = tuple(path.expanduser().resolve() for path in raw)
    for given, path in zip(raw, dirs, strict=True):
        if not path.is_dir():
            raise UsageError(f"--add-dir: not a directory: {given}")
    return dirs


def _images(raw: list[str]) -> tuple[Path, ...]:
    images = tuple(Path(path).expanduser().resolve() for path in raw)
    for given, path in zip(raw, images, strict=True):
        if not path.is_file():
            raise UsageError(f"--image: no such file: {given}")
    return images


def parse_chat(args: argparse.Namespace) -> ChatOptions:
    workspace, options = _session_options(args)
    return ChatOptions(
        workspace, options, args.resume, args.notify, add_dirs=_add_dirs(args.add_dir)
    )


@contextmanager
def removed_if_demo(args: argparse.Namespace, workspace: Path) -> Iterator[None]:
    """The temp workspace ``--demo`` made is removed once the client (and its server) is done."""
    try:
        yield
    finally:
        if args.demo and args.workspace is None and workspace.name.startswith(DEMO_PREFIX):
            shutil.rmtree(workspace, ignore_errors=True)
            print(f"· removed the demo workspace {workspace}", file=sys.stderr, flush=True)


def parse_command_line(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None
) -> argparse.Namespace:
    """``argv`` parsed; words no option takes are refused by the command they follow, with
    that command's usage (``tiller run --bogus`` shows ``run``'s, not the top level's)."""
    args, extra = parser.parse_known_args(argv)
    if not extra:
        return args
    message = f"unrecognized arguments: {' '.join(extra)}"
    command = _command_parser(parser, args.command)
    if args.command == "run" and args.output_format != "text":
        _json_usage_result(message)
    command.error(message)


def _command_parser(parser: argparse.ArgumentParser, name: str | None) -> argparse.ArgumentParser:
    """The parser of subcommand ``name`` (``parser`` itself when there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            found: argparse.ArgumentParser = action.choices[name]
            return found
    return parser


def _json_usage_result(message: str) -> None:
    """``--output-format json|stream-json``: a usage error still ends with a result line."""
    from tiller.faces.client.report import JsonLines, RunReport

    report = RunReport()
    report.failed("usage", message)
    JsonLines(sys.stdout, stream=True).result(report.result(EXIT_USAGE))


def main(argv: Sequence[str] | None = None) -> None:
    """Parse ``argv`` (default: this process's) and run the command it names, here."""
    parser = build_parser()
    args = parse_command_line(parser, argv)
    try:
        match args.command:
            case "run":
                import asyncio

                from tiller.faces.client.headless import run_prompt

                options = parse_run(args)
                with removed_if_demo(args, options.workspace):
                    code = asyncio.run(run_prompt(options))
                sys.exit(code)
            case "chat":
                chat_options = parse_chat(args)
                from tiller.faces.chat import run_chat  # prompt_toolkit loads only for the chat

                with removed_if_demo(args, chat_options.workspace):
                    code = run_chat(chat_options)
                sys.exit(code)
            case "acp":
                serve_acp()
            case "connect":
                from tiller.faces.serve import serve_warm

                serve_warm(["--acp"] if args.acp else [])
            case "trust":
                from tiller.faces.trust_command import trust_folder

                sys.exit(trust_folder(args.folder or Path.cwd(), trusted=not args.no))
            case _:
                parser.print_help(sys.stderr)
                sys.exit(EXIT_USAGE)
    except UsageError as err:
        if args.command == "run" and args.output_format != "text":
            _json_usage_result(str(err))
        parser.exit(EXIT_USAGE, f"tiller {args.command}: error: {err}\n")
