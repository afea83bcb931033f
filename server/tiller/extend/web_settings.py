"""Web search and web fetch as the user turned them on: ``webSearch`` / ``webFetch`` in the
settings files, under what the client said in ``initializationOptions``.

A settings file says them in the shape of the ``initializationOptions`` keys (``{enabled,
allowedDomains?, blockedDomains?, maxUses?, allowInPlanMode?}``), or ``true`` / ``false`` for
``{"enabled": …}``. The layers, lowest precedence first (``settings_layer``'s order): the
user's files (``~/.claude/settings.json``, ``~/.config/tiller/settings.json``), the workspace's
(``.claude/settings.json``, ``.tiller/settings.json``), the local ones
(``.claude/settings.local.json``, ``.tiller/settings.local.json``), then the client's options
(``tiller run --web-search``, the editor's settings). Each layer's keys replace those of the
layers below; the two domain lists count as one key (the API takes one of them).

A file inside the workspace is a stranger's until the folder is trusted: until then it may only turn
a tool off (``enabled: false``); whatever else it says of them is left out (``Settings.withheld``
lists it in the trust notice). A wrong value is a problem naming the file and the key, and that
file's value is left out; the other layers still count.
"""

from __future__ import annotations

from dataclasses import dataclass

from tiller.extend.settings_layer import Settings
from tiller.extend.settings_schema import web_setting_value, web_settings_of
from tiller.model.server_tools import (
    ServerTools,
    WebSettingError,
    WebToolSettings,
    parse_web_tool,
)


@dataclass(frozen=True)
class WebTools:
    """The server tools a session declares, and what was wrong in the files (one line each)."""

    tools: ServerTools
    problems: tuple[str, ...] = ()


def web_tools(settings: Settings, given: ServerTools) -> WebTools:
    """The web tools of ``settings``' files with the client's ``given`` over them."""
    problems: list[str] = []
    search = _layered(settings, "webSearch", given.web_search, problems)
    fetch = _layered(settings, "webFetch", given.web_fetch, problems)
    return WebTools(ServerTools(search, fetch), tuple(problems))


def _layered(
    settings: Settings, key: str, given: WebToolSettings, problems: list[str]
) -> WebToolSettings:
    merged = WebToolSettings()
    for source in settings.sources:  # lowest precedence first
        raw = dict(web_settings_of(source.settings)).get(key)
        if raw is None:
            continue
        try:
            layer = parse_web_tool(web_setting_value(raw), key)
        except WebSettingError as err:
            problems.append(f"{source.shown}: {err}: left out")
            continue
        if not source.trusted:  # a stranger's file may only turn the tool off
            if layer.enabled is not False:
                continue
            layer = WebToolSettings(enabled=False)
        merged = layer.over(merged)
    return given.over(merged)
