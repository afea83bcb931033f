"""What diagnostics after edits through a language server cost an edit (issue 22, item 3).

Runs Tiller's language-server source (``extend/language_servers``) in-process against the real
pyright installed for the tests (tests/e2e/lsp-npm, ``scripts/setup-node-tests.sh``), the way an
edit asks it: the file before the edit, then after. Prints: the first check of a session (the
server's start, ``initialize`` and its first analysis), then, median of N edits, the check
after an edit (``didChange``, the new diagnostics, the 0.3 s debounce) and the check of an
unchanged file (answered from what the server said). Not a test: nothing fails on a slow
number.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tiller.extend.language_servers.config import read_language_servers
from tiller.extend.language_servers.diagnostics import LanguageServers
from tiller.extend.settings_layer import Settings
from tiller.extend.trust import Trust
from tiller.workspace.tool_env import EnvRules

REPO = Path(__file__).resolve().parents[1]
PYRIGHT = REPO / "tests" / "e2e" / "lsp-npm" / "node_modules" / ".bin" / "pyright-langserver"
EDITS = 10


async def measure(workspace: Path) -> dict[str, float]:
    entry = {"command": [str(PYRIGHT), "--stdio"], "extensions": [".py"], "timeoutSeconds": 120}
    settings = Settings(workspace, Trust(True, "the bench"))  # no settings files
    config = read_language_servers(settings, {"pyright": entry})
    servers = LanguageServers(config, workspace, EnvRules())
    path = workspace / "m.py"
    path.write_text('count: int = "x"\n')

    async def check() -> float:
        started = time.perf_counter()
        found = await servers.diagnostics("bench", (path,), settle=True)
        assert isinstance(found, tuple), found
        return (time.perf_counter() - started) * 1000

    try:
        first = await check()
        after_edit, unchanged = [], []
        for n in range(EDITS):
            path.write_text(f'count: int = "x"\nvalue{n}: str = {n}\n')
            after_edit.append(await check())
            unchanged.append(await check())
    finally:
        await servers.close()
    return {
        "first check (start + first analysis), ms": first,
        "after an edit, median ms": statistics.median(after_edit),
        "unchanged file, median ms": statistics.median(unchanged),
    }


def main() -> None:
    if not PYRIGHT.exists():
        sys.exit(f"{PYRIGHT} is missing: run scripts/setup-node-tests.sh")
    with tempfile.TemporaryDirectory() as tmp:
        figures = asyncio.run(measure(Path(tmp)))
    print(f"diagnostics after edits through pyright (load {os.getloadavg()[0]:.1f})")
    for name, value in figures.items():
        print(f"  {name:<45} {value:8.1f}")


if __name__ == "__main__":
    main()
