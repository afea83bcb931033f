// The permission rules as the Permissions view lists them (pure: unit-tested).
import type { Rule as RuleWire, RuleScope } from "./protocol";

/** Set once the running server listed its rules: the view's welcome (package.json's
 *  viewsWelcome, shown while the tree is empty) then says there are none, where rules come from
 *  and how to add one; before, that the rules show once the server runs. */
export const RULES_LISTED_CONTEXT = "tiller.permissionsListed";

export const SCOPE_ORDER: readonly RuleScope[] = ["session", "local", "workspace", "user"];

export const SCOPE_LABELS: Record<RuleScope, string> = {
  session: "Session (allowed for this session)",
  local: "Local (not checked in)",
  workspace: "Workspace (checked in)",
  user: "User",
};

/** The rules of each scope, most specific scope first; a scope with no rule is left out. */
export function rulesByScope(rules: readonly RuleWire[]): { scope: RuleScope; rules: RuleWire[] }[] {
  return SCOPE_ORDER.map((scope) => ({ scope, rules: rules.filter((rule) => rule.scope === scope) })).filter(
    (group) => group.rules.length > 0,
  );
}

/** One rule's line: the rule, then its effect and file. */
export function ruleDescription(rule: RuleWire): string {
  return rule.scope === "session" ? rule.effect : `${rule.effect} · ${rule.source}`;
}
