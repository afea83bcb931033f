"""WebFetch and WebSearch permission rules folded into the API's server tool definitions, and
the domains of rules and settings in one spelling (IDNA, no port, no scheme)."""

from __future__ import annotations

import pytest

from tiller.core.config import parse_config
from tiller.core.permissions.rules import Effect, RuleBook, parse_rule, rules_of
from tiller.core.permissions.web_fetch_rules import FoldedWebFetch, fold
from tiller.errors import ConfigError
from tiller.model.server_tools import WEB_FETCH_TYPE, ServerTools, WebToolSettings

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


# --- domains in one spelling (IDNA, no port, no scheme) ------------------------------------------


def test_a_unicode_rule_domain_removes_its_punycode_spelling_from_the_allowed_list() -> None:
    setting = WebToolSettings(enabled=True, allowed_domains=("xn--bcher-kva.example", "pypi.org"))
    folded = fold(setting, book(("deny", "WebFetch(domain:bücher.example)")))
    assert folded.setting.allowed_domains == ("pypi.org",)
    upper = fold(setting, book(("ask", "WebFetch(domain:BÜCHER.EXAMPLE.)")))
    assert upper.setting.allowed_domains == ("pypi.org",)


def test_rule_domains_with_a_port_or_a_url_are_blocked_as_their_host() -> None:
    folded = fold(
        ON,
        book(
            ("deny", "WebFetch(domain:evil.example:443)"),
            ("deny", "WebFetch(domain:https://other.example/path)"),
            ("ask", "WebFetch(domain:*.Bücher.example)"),
        ),
    )
    assert folded.setting.blocked_domains == (
        "evil.example",
        "other.example",
        "xn--bcher-kva.example",
    )


def test_an_allowed_entry_with_a_path_is_dropped_when_a_rule_names_its_host() -> None:
    setting = WebToolSettings(enabled=True, allowed_domains=("github.com/anthropics", "pypi.org"))
    folded = fold(setting, book(("deny", "WebFetch(domain:GitHub.com:443)")))
    assert folded.setting.allowed_domains == ("pypi.org",)


def test_the_settings_domains_are_normalised_before_the_lists_are_built() -> None:
    config = parse_config(
        {
            "webFetch": {
                "enabled": True,
                "allowedDomains": [
                    "BÜCHER.example.",
                    "https://GitHub.com/anthropics/",
                    "pypi.org:443",
                    "pypi.org",
                ],
            },
            "webSearch": {"enabled": True, "blockedDomains": ["https://evil.example:8443/x?y"]},
        }
    )
    fetch, search = config.server_tools.web_fetch, config.server_tools.web_search
    assert fetch.allowed_domains == ("xn--bcher-kva.example", "github.com/anthropics", "pypi.org")
    assert search.blocked_domains == ("evil.example",)


@pytest.mark.parametrize("entry", ["*.example.com", "a b.example", "evil.example:x", "-x.org"])
def test_a_settings_domain_that_is_not_a_host_is_refused_naming_it(entry: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"webFetch": {"enabled": True, "blockedDomains": [entry]}})
    assert raised.value.key == "webFetch.blockedDomains"
    assert repr(entry) in raised.value.message


def test_an_unreadable_webfetch_deny_leaves_web_fetch_out() -> None:
    rules, problems = rules_of(
        {"deny": ["WebFetch(domain:a b.example)"]}, "workspace", ".tiller/settings.json"
    )
    folded = fold(ON, RuleBook(tuple(rules)))
    assert not folded.setting.enabled
    assert folded.describe() == (
        "unreadable deny rule: WebFetch(domain:a b.example) (workspace .tiller/settings.json)"
    )
    assert "until it is fixed, every WebFetch call is asked" in problems[0]


# --- web search ----------------------------------------------------------------------------------


def test_a_websearch_deny_or_ask_rule_leaves_web_search_out_and_is_kept_with_the_session() -> None:
    tools = ServerTools(web_search=ON, web_fetch=ON)
    for effect in ("deny", "ask"):
        folded = fold(ON, book((effect, "WebSearch")))
        applied = folded.applied_to(tools)
        assert not applied.web_search.enabled and applied.web_fetch == ON
        back = FoldedWebFetch.from_json(folded.to_json(), ON)
        assert back.shape() == folded.shape()
        assert back.applied_to(tools).definitions("default") == applied.definitions("default")
    allowed = fold(ON, book(("allow", "WebSearch"), ("deny", "WebFetch(domain:a.com)")))
    assert allowed.applied_to(tools).web_search == ON
    lower = fold(WebToolSettings(), book(("deny", "web_search")))
    assert lower.search_left_out_by is not None
    assert fold(ON, RuleBook()).search_left_out_by is None


def test_an_allowed_entry_ending_in_a_full_width_dot_is_the_host_a_deny_rule_names() -> None:
    setting = WebToolSettings(enabled=True, allowed_domains=("example.com\uff0e", "pypi.org"))
    folded = fold(setting, book(("deny", "WebFetch(domain:example.com)")))
    assert folded.setting.allowed_domains == ("pypi.org",)
