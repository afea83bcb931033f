"""The offline demo: a scripted model that answers any number of prompts.

Each prompt plays the next scene of a short cycle (write and edit a program, plan a change in
plan mode, a tour of what the chat renders, a todo board with commands). What a scene does next
is read from the request alone (the tool results of the current turn), so it survives restarts
and resumes, and its words follow what the user approved or denied: a denied edit is never
reported as made. When plan mode refuses a write, the scene presents the rest of its work as a
plan (with ``exit_plan_mode``) instead; once the plan is approved it carries it out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tiller.jsontypes import JSON
from tiller.model.history import JOINED_PROMPT_HEADER, Message
from tiller.model.models import DEFAULT_CATALOG, ModelSpec
from tiller.model.provider import (
    CountUnsupported,
    ModelInfo,
    ModelRequest,
    ModelResponse,
    StreamListener,
)

PLAN_APPROVED = "Plan approved."
PLAN_NOT_APPROVED = "Plan not approved:"
PLAN_KEY = "plan"  # the key of a scene's exit_plan_mode calls (plan0, plan1, ...)
PLAN_MODE_DENIAL = "in plan mode"
ID_PREFIX = "toolu_demo_"

HELLO_DIR = "tiller-demo"
HELLO = f"{HELLO_DIR}/hello.py"
HELLO_SOURCE = (
    '"""A tiny program written by the Tiller demo."""\n\n\n'
    "def greet(name: str) -> str:\n"
    '    return f"Hello, {name}!"\n\n\n'
    'if __name__ == "__main__":\n'
    '    print(greet("world"))\n'
)
NOTES = f"{HELLO_DIR}/NOTES.md"


# --- what the request says about the current turn ------------------------------------------


@dataclass(frozen=True)
class Result:
    is_error: bool
    text: str

    @property
    def denied_by_user(self) -> bool:
        return self.is_error and self.text.startswith("Denied by the user")

    @property
    def denied_by_plan_mode(self) -> bool:
        return self.is_error and PLAN_MODE_DENIAL in self.text

    @property
    def ok(self) -> bool:
        return not self.is_error


@dataclass(frozen=True)
class Turn:
    """The current turn as the demo sees it.

    ``number``: how many prompts the conversation holds (1 for the first). ``phase`` counts
    the plans approved in this turn; tool ids carry it, and ``results`` holds only the results
    of the current phase, keyed by the short key the scene gave each call.
    ``revisions``: the feedback of plans rejected since the last approval, oldest first."""

    number: int
    prompt: str
    phase: int
    results: dict[str, Result] = field(default_factory=dict)
    revisions: tuple[str, ...] = ()

    def call(self, key: str, name: str, **tool_input: Any) -> JSON:
        return {
            "type": "tool_use",
            "id": f"{ID_PREFIX}{self.number}_{self.phase}_{key}",
            "name": name,
            "input": tool_input,
        }

    def has(self, key: str) -> bool:
        return key in self.results

    def result(self, key: str) -> Result | None:
        return self.results.get(key)

    @property
    def plan_mode_refused(self) -> bool:
        return any(r.denied_by_plan_mode for r in self.results.values())

    @property
    def approved_plan(self) -> bool:
        return self.phase > 0


def _result_text(block: JSON) -> str:
    body = block.get("content", "")
    if isinstance(body, str):
        return body
    if isinstance(body, list):
        return "\n".join(str(b.get("text", "")) for b in body if isinstance(b, dict))
    return str(body)


def _user_texts(message: Message) -> list[str]:
    """Texts the user side said in ``message``: text blocks, and a prompt joined into a
    tool result (history.for_request)."""
    texts = [str(b.get("text", "")) for b in message.content if b.get("type") == "text"]
    for block in message.content:
        if block.get("type") == "tool_result":
            joined = _result_text(block)
            if JOINED_PROMPT_HEADER.strip() in joined:
                texts.append(joined.split(JOINED_PROMPT_HEADER.strip(), 1)[1].strip())
    return texts


def _is_loop_note(text: str) -> bool:
    return text.startswith(PLAN_APPROVED) or text.startswith(PLAN_NOT_APPROVED)


def read_turn(messages: Sequence[Message]) -> Turn:
    """Where the conversation stands: the current prompt and what happened since."""
    number = 0
    prompt = ""
    start = 0
    for index, message in enumerate(messages):
        if message.role != "user":
            continue
        prompts = [t for t in _user_texts(message) if t.strip() and not _is_loop_note(t)]
        if prompts:
            number += 1
            prompt = prompts[-1]
            start = index
    phase = 0
    revisions: list[str] = []
    results: dict[str, Result] = {}
    for message in messages[start:]:
        if message.role != "user":
            continue
        for text in _user_texts(message):
            if text.startswith(PLAN_APPROVED):
                phase += 1
                revisions.clear()
                results.clear()
            elif text.startswith(PLAN_NOT_APPROVED):
                feedback = text.removeprefix(PLAN_NOT_APPROVED).strip()
                revisions.append(feedback.split(". Revise it", 1)[0].strip().rstrip("."))
        for block in message.content:
            if block.get("type") != "tool_result":
                continue
            tool_id = str(block.get("tool_use_id", ""))
            own = f"{ID_PREFIX}{number}_{phase}_"
            if not tool_id.startswith(own):
                continue
            key = tool_id.removeprefix(own)
            result = Result(bool(block.get("is_error")), _result_text(block))
            if key.startswith(PLAN_KEY) and result.ok:  # the scene's plan was approved
                phase += 1
                revisions.clear()
                results.clear()
            elif key.startswith(PLAN_KEY):
                revisions.append(_plan_feedback(result.text))
            else:
                results[key] = result
    return Turn(max(number, 1), prompt, phase, results, tuple(revisions))


def _plan_feedback(text: str) -> str:
    """The user's feedback in an exit_plan_mode result ("...not approve the plan: <it>. ...")."""
    _, _, rest = text.partition(": ")
    return rest.split(". Revise", 1)[0].strip().rstrip(".") or "no feedback"


# --- scenes ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """One response: text first, then tool calls (none: the turn's closing words)."""

    text: str
    calls: tuple[JSON, ...] = ()


Scene = Callable[[Turn], Reply]


def _plan_reply(turn: Turn, title: str, steps: Sequence[str]) -> Reply:
    """The rest of a scene as a plan, presented with exit_plan_mode (the server asks the user
    to approve it; nothing else runs until then). Each rejection with feedback revises it: the
    feedback becomes steps of its own, first, and the plan says what changed."""
    revision = len(turn.revisions)
    heading = f"## Plan: {title}" if not revision else f"## Plan, revision {revision}: {title}"
    lines = [heading, ""]
    if revision:
        earlier = {1: ".", 2: "; step 2 keeps your earlier feedback."}
        kept = earlier.get(revision, f"; steps 2-{revision} keep your earlier feedback.")
        lines += [
            f"**What changed:** step 1 is new, from your feedback “{turn.revisions[-1]}”{kept} "
            "The rest moved down.",
            "",
        ]
    taken = [f"Follow your feedback: “{feedback}”." for feedback in reversed(turn.revisions)]
    lines += [f"{n}. {step}" for n, step in enumerate([*taken, *steps], 1)]
    lines += ["", "Nothing changes until you approve."]
    intro = (
        f"Here is the plan, revised after your feedback (revision {revision}).\n"
        if revision
        else "Here is my plan.\n"
    )
    key = f"{PLAN_KEY}{revision}"
    return Reply(intro, (turn.call(key, "exit_plan_mode", plan="\n".join(lines)),))


def hello_scene(turn: Turn) -> Reply:
    """Write a tiny program, read it back, edit it, run it."""
    if turn.plan_mode_refused:
        return _plan_reply(
            turn,
            f"write and run `{HELLO}`",
            [
                f"Create `{HELLO}` with a `greet(name)` function.",
                "Change its greeting to greet the one who steers.",
                f"Run `python3 {HELLO}` to check it.",
            ],
        )
    if not turn.has("ls"):
        intro = (
            "Plan approved; carrying it out.\n"
            if turn.approved_plan
            else "Hi! This is the offline Tiller demo: a scripted model, no API key needed. "
            "I will look around the workspace, write a tiny program, read and edit it, "
            "then run it.\n"
        )
        return Reply(intro, (turn.call("ls", "list_files", path="."),))
    listing = turn.result("ls")
    exists = listing is not None and "hello.py" in listing.text
    if exists and not turn.has("read0"):
        return Reply(
            f"`{HELLO}` is already there from an earlier run; reading it first.\n",
            (turn.call("read0", "read_file", path=HELLO),),
        )
    earlier = _earlier_hello(turn.result("read0")) if exists else None
    if earlier not in ("fresh", "edited"):
        written = _write_and_read_back(turn, exists)
        if written is not None:
            return written
    return _edit_and_run(turn, earlier)


def _write_and_read_back(turn: Turn, exists: bool) -> Reply | None:
    """Write ``hello.py`` (fresh, or over what is there) and read it back; None once done."""
    if not turn.has("write"):
        verb = "replace it with a fresh copy of" if exists else "create"
        return Reply(
            f"Next I {verb} `{HELLO}`.\n",
            (turn.call("write", "write_file", path=HELLO, content=HELLO_SOURCE),),
        )
    write = turn.result("write")
    assert write is not None
    if not write.ok:
        what = "replacing" if exists else "creating"
        why = (
            f"You declined {what} it"
            if write.denied_by_user
            else f"{what.capitalize()} it failed "
            f"({write.text.splitlines()[0] if write.text else 'error'})"
        )
        return Reply(f"{why}, so I stopped there: nothing was written to `{HELLO}`.\n")
    if not turn.has("read"):
        return Reply(
            "Reading it back before changing it.\n",
            (turn.call("read", "read_file", path=HELLO),),
        )
    return None


def _edit_and_run(turn: Turn, earlier: str | None) -> Reply:
    """Edit the greeting (unless an earlier run did), run the program, and close."""
    if earlier != "edited" and not turn.has("edit"):
        intro = (
            "It already holds exactly the program I would write, so there is nothing to "
            "create. Now a small edit: greet the one who steers.\n"
            if earlier == "fresh"
            else "Now a small edit: greet the one who steers.\n"
        )
        return Reply(
            intro,
            (
                turn.call(
                    "edit",
                    "edit_file",
                    path=HELLO,
                    old_string='print(greet("world"))',
                    new_string='print(greet("Tiller user"))',
                ),
            ),
        )
    if not turn.has("run"):
        intro = (
            "It already holds the finished program (written and edited by an earlier run), "
            "so there is nothing to write or edit. Let's run it, and list the folder.\n"
            if earlier == "edited"
            else "Let's run it, and list the folder.\n"
        )
        return Reply(
            intro,
            (
                turn.call("run", "bash", command=f"python3 {HELLO}"),
                turn.call("ls2", "bash", command=f"ls {HELLO_DIR}"),
            ),
        )
    return Reply(_hello_closing(turn, earlier))


EDITED_SOURCE = HELLO_SOURCE.replace('greet("world")', 'greet("Tiller user")')


def _file_text(read: Result) -> str:
    """The file's text from a read_file result (numbered lines ``     1\\tline``)."""
    lines = []
    for line in read.text.splitlines():
        number, tab, rest = line.partition("\t")
        if tab and number.strip().isdigit():
            lines.append(rest)
    return "\n".join(lines).rstrip("\n")


def _earlier_hello(read: Result | None) -> str | None:
    """What an earlier run left in hello.py: ``fresh`` (as written), ``edited`` (written and
    edited), ``other``; None when it could not be read."""
    if read is None or not read.ok:
        return None
    text = _file_text(read)
    if text == HELLO_SOURCE.rstrip("\n"):
        return "fresh"
    if text == EDITED_SOURCE.rstrip("\n"):
        return "edited"
    return "other"


def _hello_closing(turn: Turn, earlier: str | None = None) -> str:
    edit, run = turn.result("edit"), turn.result("run")
    write = turn.result("write")
    if write is not None and write.ok:
        done = [f"wrote `{HELLO}`"]
    elif earlier == "edited":
        done = [f"found `{HELLO}` already written and edited, so I left it as it was"]
    else:
        done = [f"found `{HELLO}` already written, so I did not write it again"]
    if edit is not None and edit.ok:
        done.append("changed its greeting to “Tiller user” with an edit")
        greeting = "Hello, Tiller user!"
    else:
        greeting = "Hello, Tiller user!" if earlier == "edited" else "Hello, world!"
    if run is not None and run.ok:
        done.append(f"ran it (it printed `{run.text.strip() or greeting}`)")
    text = "Done. I " + ", ".join(done) + "."
    if edit is not None and not edit.ok:
        text += (
            " You denied the edit, so the file is unchanged: it still greets the world."
            if edit.denied_by_user
            else " The edit failed, so the file still greets the world."
        )
    if run is not None and not run.ok:
        text += (
            " You denied running it, so I did not run it."
            if run.denied_by_user
            else " Running it failed."
        )
    # Nothing to tell the user to delete: without --workspace the client removes the whole
    # demo workspace on exit (it says so), and with one the folder is theirs to keep.
    return text + f" It is all in the `{HELLO_DIR}` folder.\n"


def plan_scene(turn: Turn) -> Reply:
    """Switch to plan mode, explore, present a plan; carry it out once approved."""
    if not turn.approved_plan:
        if not turn.has("enter"):
            return Reply(
                "This one deserves a plan first, so I switch to **plan mode**: I can only "
                "look around until you approve.\n",
                (turn.call("enter", "enter_plan_mode"),),
            )
        if not turn.has("look"):
            return Reply("Looking at what is here.\n", (turn.call("look", "list_files", path="."),))
        return _plan_reply(
            turn,
            f"a notes file in `{HELLO_DIR}/`",
            [
                f"Create `{NOTES}` with a short checklist of what the demo showed.",
                "Keep everything else as it is.",
                "Tell you what changed.",
            ],
        )
    if not turn.has("notes"):
        body = "# Tiller demo notes\n\n- [x] a plan, approved before any change\n- [ ] your turn\n"
        if turn.revisions:
            body += f"\nFeedback taken: {turn.revisions[-1]}\n"
        return Reply(
            "Plan approved; carrying it out.\n",
            (turn.call("notes", "write_file", path=NOTES, content=body),),
        )
    notes = turn.result("notes")
    assert notes is not None
    if notes.ok:
        return Reply(f"Done: I created `{NOTES}` as planned. Nothing else changed.\n")
    if notes.denied_by_user:
        return Reply(f"You approved the plan but denied writing `{NOTES}`, so nothing changed.\n")
    return Reply(f"Writing `{NOTES}` failed, so nothing changed: {notes.text}\n")


TOUR = """Here is what the chat can show, no tools needed.

### Code, highlighted

```python
def fib(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
```

```bash
python3 -c "print('hello')"
```

### A table

| Mode | Edits | Commands |
|---|---|---|
| ask before edits | ask | ask |
| accept edits | allowed | ask |
| plan | refused | read-only |

### Lists

- **Shift+Tab** cycles the mode.
- **Esc** interrupts the running turn.
- Type `/help` for the commands.

1. Ask something.
2. Approve what you agree with.
3. Read what it did.
"""


FIB = f"{HELLO_DIR}/fib.py"
FIB_SOURCE = """def fib(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


if __name__ == "__main__":
    print([fib(n) for n in range(10)])
"""


def tour_scene(turn: Turn) -> Reply:
    """Save a small function, then a reply that shows what the chat renders."""
    if turn.plan_mode_refused:
        return _plan_reply(
            turn,
            "save a small function and show what the chat renders",
            [f"Save `fib()` as `{FIB}`.", "Show code, a table and lists in the chat."],
        )
    if not turn.has("ls"):
        return Reply(
            "Let me show what the chat renders. First a look around.\n",
            (turn.call("ls", "list_files", path="."),),
        )
    listing = turn.result("ls")
    if listing is not None and "fib.py" in listing.text and not turn.has("read0"):
        return Reply("", (turn.call("read0", "read_file", path=FIB),))
    if not turn.has("save"):
        return Reply(
            f"I save a small function as `{FIB}`.\n",
            (turn.call("save", "write_file", path=FIB, content=FIB_SOURCE),),
        )
    save = turn.result("save")
    assert save is not None
    if save.ok:
        head = f"Saved `{FIB}`. "
    elif save.denied_by_user:
        head = f"You declined saving `{FIB}`, so nothing was written; the code lives only here. "
    else:
        head = f"Saving `{FIB}` failed, so nothing was written. "
    return Reply(head + TOUR)


TODOS = (
    ("Look at the workspace", "Looking at the workspace"),
    ("Count the files", "Counting the files"),
    ("Report back", "Reporting back"),
)


def _board(done: int) -> list[JSON]:
    return [
        {
            "content": content,
            "status": "completed" if n < done else "in_progress" if n == done else "pending",
            "activeForm": active,
        }
        for n, (content, active) in enumerate(TODOS)
    ]


def todo_scene(turn: Turn) -> Reply:
    """A todo board, a command with live output, the board ticked off."""
    if turn.plan_mode_refused:
        return _plan_reply(
            turn,
            "count the files",
            ["Run a short command that counts the files, step by step.", "Report the count."],
        )
    if not turn.has("board"):
        return Reply(
            "I'll track this on the todo board.\n",
            (turn.call("board", "todo_write", todos=_board(0)),),
        )
    if not turn.has("count"):
        command = (
            'for step in 1 2 3; do echo "step $step"; sleep 0.5; done; '
            'echo "$(ls -A | wc -l) entries here"'
        )
        return Reply(
            "Counting, with output as it comes.\n",
            (
                turn.call("board2", "todo_write", todos=_board(1)),
                turn.call("count", "bash", command=command),
            ),
        )
    if not turn.has("board3"):
        return Reply("", (turn.call("board3", "todo_write", todos=_board(3)),))
    count = turn.result("count")
    assert count is not None
    if count.ok:
        last = count.text.strip().splitlines()[-1] if count.text.strip() else ""
        return Reply(f"All three items are done. The command said: `{last}`.\n")
    if count.denied_by_user:
        return Reply("You denied the command, so I did not count anything. The board is done.\n")
    return Reply(f"The command failed, so I have no count: {count.text.strip()[:200]}\n")


SCENES: tuple[Scene, ...] = (hello_scene, plan_scene, tour_scene, todo_scene)


def next_reply(messages: Sequence[Message]) -> Reply:
    turn = read_turn(messages)
    scene = SCENES[(turn.number - 1) % len(SCENES)]
    return scene(turn)


# --- the provider ---------------------------------------------------------------------------


@dataclass
class DemoProvider:
    """A ``Provider`` that plays the demo scenes, streaming text in small chunks."""

    chunk_delay: float = 0.01
    chunk_size: int = 12

    async def stream(self, request: ModelRequest, listener: StreamListener) -> ModelResponse:
        reply = next_reply(request.messages)
        content: list[JSON] = []
        if reply.text:
            for i in range(0, len(reply.text), self.chunk_size):
                listener.text(reply.text[i : i + self.chunk_size])
                await asyncio.sleep(self.chunk_delay)
            block: JSON = {"type": "text", "text": reply.text}
            listener.block(block)
            content.append(block)
        for call in reply.calls:
            await asyncio.sleep(self.chunk_delay)
            listener.block(call)
            content.append(call)
        return ModelResponse(tuple(content), "tool_use" if reply.calls else "end_turn")

    async def count_tokens(self, request: ModelRequest) -> int:
        raise CountUnsupported("the demo does not count tokens")

    async def list_models(self, refresh: bool = False) -> list[ModelInfo]:
        return []

    def spec(self, model_id: str) -> ModelSpec:
        return DEFAULT_CATALOG.resolve(model_id)
