"""WebFetch permission rules folded into the API's web_fetch server tool definition."""

from __future__ import annotations

from tiller.core.permission_rules import Effect, RuleBook, parse_rule
from tiller.core.web_fetch_rules import FoldedWebFetch, fold
from tiller.model.server_tools import WEB_FETCH_TYPE, WebToolSettings

ON = WebToolSettings(enabled=True)


def book(*rules: tuple[Effect, str]) -> RuleBook:
    return RuleBook(
        tuple(
            parse_rule(text, effect, "workspace", ".tiller/settings.json") for effect, text in rules
        )
    )


def test_deny_and_ask_domains_become_blocked_domains_after_the_settings_own() -> None:
    setting = WebToolSettings(enabled=True, blocked_domains=("ads.example.net",))
    folded = fold(
        setting,
        book(("deny", "WebFetch(domain:evil.com)"), ("ask", "WebFetch(domain:Docs.Example.com)")),
    )
    assert folded.setting.definition(WEB_FETCH_TYPE, "web_fetch") == {
        "type": WEB_FETCH_TYPE,
        "name": "web_fetch",
        "blocked_domains": ["ads.example.net", "evil.com", "docs.example.com"],
    }
    assert folded.describe() == (
        "rule: WebFetch(domain:evil.com) (workspace .tiller/settings.json); "
        "rule: WebFetch(domain:Docs.Example.com) (workspace .tiller/settings.json)"
    )


def test_a_subdomain_wildcard_blocks_the_whole_domain_never_less() -> None:
    folded = fold(ON, book(("deny", "WebFetch(domain:*.example.com)")))
    assert folded.setting.blocked_domains == ("example.com",)


def test_allow_rules_and_other_tools_rules_leave_the_tool_as_the_setting_has_it() -> None:
    folded = fold(
        ON,
        book(
            ("allow", "WebFetch(domain:example.com)"),
            ("deny", "Bash(curl:*)"),
            ("deny", "Read(.env)"),
        ),
    )
    assert folded.setting == ON
    assert folded.describe() is None


def test_a_bare_webfetch_deny_or_ask_rule_leaves_the_tool_out() -> None:
    for effect in ("deny", "ask"):
        folded = fold(ON, book((effect, "WebFetch"), ("deny", "WebFetch(domain:a.com)")))
        assert not folded.setting.enabled
        assert folded.describe() == "rule: WebFetch (workspace .tiller/settings.json)"


def test_an_allowed_list_loses_every_entry_a_rule_names_any_part_of() -> None:
    setting = WebToolSettings(
        enabled=True,
        allowed_domains=(
            "example.com",
            "docs.python.org",
            "pypi.org",
            "github.com/anthropics",
            "x.io",
        ),
    )
    folded = fold(
        setting,
        book(
            ("deny", "WebFetch(domain:docs.example.com)"),  # a subdomain of an allowed entry
            ("ask", "WebFetch(domain:*.python.org)"),  # covers an allowed subdomain
            ("deny", "WebFetch(domain:*.github.com)"),  # the allowed entry's apex is a fetch
            ("deny", "WebFetch(domain:io)"),  # names the host io only: x.io stays
            ("allow", "WebFetch(domain:evil.com)"),  # never added
        ),
    )
    assert folded.setting.allowed_domains == ("pypi.org", "x.io")
    assert not folded.setting.blocked_domains  # the API takes one list or the other
    assert [r.text for r in folded.by] == [
        "WebFetch(domain:docs.example.com)",
        "WebFetch(domain:*.python.org)",
        "WebFetch(domain:*.github.com)",
    ]


def test_an_exact_rule_on_another_host_keeps_an_allowed_subdomain() -> None:
    setting = WebToolSettings(enabled=True, allowed_domains=("docs.example.com",))
    folded = fold(setting, book(("deny", "WebFetch(domain:example.com)")))
    assert folded.setting == setting  # example.com itself is not under docs.example.com
    assert folded.by == ()


def test_an_allowed_list_emptied_by_the_rules_leaves_the_tool_out_rather_than_open() -> None:
    setting = WebToolSettings(enabled=True, allowed_domains=("example.com",))
    folded = fold(setting, book(("deny", "WebFetch(domain:example.com)")))
    assert not folded.setting.enabled
    assert [r.text for r in folded.by] == ["WebFetch(domain:example.com)"]


def test_a_disabled_setting_is_left_alone() -> None:
    off = WebToolSettings()
    assert fold(off, book(("deny", "WebFetch(domain:a.com)"))).setting == off


def test_the_stored_form_brings_back_the_domains_and_the_rules_over_the_setting_now() -> None:
    setting = WebToolSettings(enabled=True, allowed_domains=("example.com", "pypi.org"))
    folded = fold(setting, book(("deny", "WebFetch(domain:docs.example.com)")))
    now = WebToolSettings(enabled=True, allowed_domains=("other.org",), max_uses=3)
    back = FoldedWebFetch.from_json(folded.to_json(), now)
    assert back.setting == WebToolSettings(enabled=True, allowed_domains=("pypi.org",), max_uses=3)
    assert back.describe() == folded.describe()
    turned_off = FoldedWebFetch.from_json(folded.to_json(), WebToolSettings())
    assert not turned_off.setting.enabled
