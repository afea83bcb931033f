// The model quick pick's items. Pure: no vscode import, so it is unit-tested.
import type { ModelInfo } from "./protocol";

export interface ModelPickItem {
  label: string;
  description?: string;
  /** The model id `tiller/setModel` gets. */
  id: string;
  /** The item made of what the user typed (shown whatever the filter). */
  alwaysShow?: boolean;
}

/** Whether `typed` can be a model id: one word (ids have no spaces; words filter the list). */
function looksLikeId(typed: string): boolean {
  return /^[\w.:@/-]+$/.test(typed);
}

/**
 * The listed models, and "Use <typed>" for an id the list does not have (the server's list
 * may be short, e.g. in the demo, while `/model ID` takes any id the API knows). That item
 * comes first when no listed model matches what is typed, so Enter takes it; last otherwise.
 */
export function modelPickItems(models: readonly ModelInfo[], current: string, typed: string): ModelPickItem[] {
  const listed: ModelPickItem[] = models.map((model) => ({
    label: model.displayName ?? model.id,
    description: model.id === current ? `${model.id} · current` : model.id,
    id: model.id,
  }));
  const id = typed.trim();
  if (id === "" || !looksLikeId(id) || models.some((model) => model.id === id)) {
    return listed;
  }
  const use: ModelPickItem = { label: `Use “${id}”`, description: "a model id that is not listed", id, alwaysShow: true };
  const needle = id.toLowerCase();
  const matches = listed.some((item) => item.label.toLowerCase().includes(needle) || item.id.toLowerCase().includes(needle));
  return matches ? [...listed, use] : [use, ...listed];
}
