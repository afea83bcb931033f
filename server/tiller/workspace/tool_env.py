"""The environment every tool and hook subprocess gets: the server's, without its secrets.

Names are matched case-insensitively against shell-style patterns (``*`` and ``?``). The
defaults hide the API key Tiller itself uses and anything named like a credential; the
``scrubEnv`` setting adds names or patterns, and an entry ``!NAME`` (or ``!PATTERN``) lets a
name through that a default pattern would hide. ``ANTHROPIC_API_KEY`` and
``ANTHROPIC_AUTH_TOKEN`` can never be let through.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tiller.hardening import ALWAYS_HIDDEN

DEFAULT_SECRET_PATTERNS = (
    *ALWAYS_HIDDEN,
    *("*_API_KEY", "*_APIKEY", "*_TOKEN", "*_SECRET", "*_SECRET_KEY", "*_SECRETS"),
    *("*_PASSWORD", "*_PASSWD", "*_PASS", "*_CREDENTIALS", "*_PRIVATE_KEY", "*_ACCESS_KEY"),
    *("*_ACCESS_KEY_ID", "*_AUTH", "*_COOKIE", "*_SESSION_KEY"),
    *("API_KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIALS"),
    *("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "NPM_TOKEN"),
    *("DATABASE_URL", "*_DATABASE_URL", "PGPASSWORD", "MYSQL_PWD", "REDIS_URL"),
)

# Set for every tool process: nothing prompts, and read-only git commands never rewrite
# the index (``git status`` would otherwise refresh it opportunistically).
TOOL_DEFAULTS = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}


# Set on top for commands that run without the user's yes: git's command-line-level config
# (``GIT_CONFIG_COUNT``, git >= 2.31; it overrides the repository's config, and git passes it
# on to the git it runs in submodules) turns off what a repository could make git run, and
# the index refresh that ``git diff`` writes whatever ``GIT_OPTIONAL_LOCKS`` says (git 2.39:
# ``git diff HEAD`` rewrites ``.git/index`` when two or more entries' stat data changed, as in
# a copied or freshly checked-out repository).
UNASKED_GIT_CONFIG = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("diff.autoRefreshIndex", "false"),
)
UNASKED_DEFAULTS = {"GIT_PAGER": "cat", "PAGER": "cat"}
UNASKED_REMOVED = ("GIT_EXTERNAL_DIFF",)


def _matches(name: str, patterns: Iterable[str]) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in patterns)


@dataclass(frozen=True)
class EnvRules:
    """Which variable names tools never see (``hidden``) and which the user let through."""

    hidden: tuple[str, ...] = DEFAULT_SECRET_PATTERNS
    allowed: tuple[str, ...] = ()

    @staticmethod
    def from_setting(entries: Iterable[str]) -> EnvRules:
        """The defaults plus the ``scrubEnv`` entries: ``NAME``/``PAT*`` hide, ``!NAME`` allow."""
        hidden = list(DEFAULT_SECRET_PATTERNS)
        allowed: list[str] = []
        for entry in entries:
            if entry.startswith("!"):
                allowed.append(entry[1:])
            else:
                hidden.append(entry)
        return EnvRules(tuple(hidden), tuple(allowed))

    def hides(self, name: str) -> bool:
        if _matches(name, ALWAYS_HIDDEN):
            return True
        return _matches(name, self.hidden) and not _matches(name, self.allowed)


def tool_env(rules: EnvRules = EnvRules(), base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) without what ``rules`` hide."""
    source = os.environ if base is None else base
    env = {name: value for name, value in source.items() if not rules.hides(name)}
    env.update(TOOL_DEFAULTS)
    return env


def unasked_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for a command that runs without the user's yes: git runs no fsmonitor, hook or
    pager, whatever the repository's config says (the classifier already refused configs
    that name programs; this holds even if the config changed since). Entries the user put
    in ``GIT_CONFIG_COUNT`` are kept, before ours; commands the user approved get ``env``
    unchanged, so their hooks still run.
    """
    result = {name: value for name, value in env.items() if name not in UNASKED_REMOVED}
    try:
        first = int(result.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        first = -1
    if first < 0:  # git refuses a bogus count: start afresh
        first = 0
    for offset, (key, value) in enumerate(UNASKED_GIT_CONFIG):
        result[f"GIT_CONFIG_KEY_{first + offset}"] = key
        result[f"GIT_CONFIG_VALUE_{first + offset}"] = value
    result["GIT_CONFIG_COUNT"] = str(first + len(UNASKED_GIT_CONFIG))
    result.update(UNASKED_DEFAULTS)
    return result
