// The chat input's attachments: `@` opens a fuzzy picker (the host answers each query), picked
// mentions and pasted or dropped images show as chips removable before sending, and the active
// editor's file or selection is a chip the user can turn off. Nothing is attached silently: only
// what a chip shows goes with the prompt.
import {
  activeEditorLabel,
  chipLabel,
  formatBytes,
  imageProblem,
  mentionAt,
  MAX_IMAGES,
  sniffImage,
  THUMBNAIL_MAX,
  type ActiveEditor,
  type Mention,
  type PastedImage,
} from "../chat/attachments";
import type { FromWebview } from "../chat/messages";
import type { AttachmentSummary } from "../protocol";

type Post = (message: FromWebview) => void;

/** What goes with the prompt being sent. */
export interface Attached {
  mentions?: Mention[];
  images?: PastedImage[];
  activeEditor?: boolean;
}

export class Composer {
  private mentions: Mention[] = [];
  private images: PastedImage[] = [];
  private active: ActiveEditor | null = null;
  private activeOn = true;
  private requestId = 0;
  private items: Mention[] = [];
  private selected = 0;
  private query: { start: number; query: string } | undefined;
  private problem = "";
  private readonly chips: HTMLElement;
  private readonly picker: HTMLElement;

  constructor(
    private readonly input: HTMLTextAreaElement,
    private readonly post: Post,
  ) {
    this.chips = document.createElement("div");
    this.chips.id = "attachments";
    this.picker = document.createElement("ul");
    this.picker.id = "mention-picker";
    this.picker.setAttribute("role", "listbox");
    this.picker.hidden = true;
    input.before(this.picker, this.chips);
    input.addEventListener("input", () => this.typed());
    input.addEventListener("keydown", (event) => this.key(event), true);
    input.addEventListener("blur", () => setTimeout(() => this.close(), 150));
    input.addEventListener("paste", (event) => {
      const files = Array.from(event.clipboardData?.files ?? []);
      if (files.some((file) => file.type.startsWith("image/"))) {
        event.preventDefault();
        void this.addImages(files);
      }
    });
    const form = input.form ?? input.parentElement;
    form?.addEventListener("dragover", (event) => event.preventDefault());
    form?.addEventListener("drop", (event) => {
      const files = Array.from((event as DragEvent).dataTransfer?.files ?? []);
      if (files.length > 0) {
        event.preventDefault();
        void this.addImages(files);
      }
    });
    this.render();
  }

  /** The attachments of the prompt being sent; the chips then empty (the editor chip stays). */
  take(): Attached {
    const taken: Attached = {
      ...(this.mentions.length > 0 ? { mentions: this.mentions } : {}),
      ...(this.images.length > 0 ? { images: this.images } : {}),
      ...(this.active !== null && this.activeOn ? { activeEditor: true } : {}),
    };
    this.mentions = [];
    this.images = [];
    this.problem = "";
    this.close();
    this.render();
    return taken;
  }

  setActiveEditor(editor: ActiveEditor | null): void {
    this.active = editor;
    this.render();
  }

  /** The host's answer to a query: shown when it is the latest one. A second answer to the same
   * query adds symbols after the entries already shown: the selection stays where it is. */
  showMentions(requestId: number, items: Mention[]): void {
    if (requestId !== this.requestId || this.query === undefined) return;
    const grows = this.items.length > 0 && this.items.every((item, index) => sameMention(item, items[index]));
    this.items = items;
    if (!grows) this.selected = 0;
    this.renderPicker();
  }

  private typed(): void {
    this.query = mentionAt(this.input.value, this.input.selectionStart ?? this.input.value.length);
    if (this.query === undefined) {
      this.close();
      return;
    }
    this.requestId += 1;
    this.post({ type: "mentionQuery", requestId: this.requestId, query: this.query.query });
  }

  private key(event: KeyboardEvent): void {
    if (this.picker.hidden || this.items.length === 0) return;
    const move = (by: number): void => {
      this.selected = (this.selected + by + this.items.length) % this.items.length;
      this.renderPicker();
    };
    switch (event.key) {
      case "ArrowDown":
        move(1);
        break;
      case "ArrowUp":
        move(-1);
        break;
      case "Enter":
      case "Tab": {
        const item = this.items[this.selected];
        if (item !== undefined) this.pick(item);
        break;
      }
      case "Escape":
        this.close();
        break;
      default:
        return;
    }
    event.preventDefault();
    event.stopImmediatePropagation();
  }

  private pick(item: Mention): void {
    const query = this.query;
    if (query !== undefined) {
      const value = this.input.value;
      const end = query.start + 1 + query.query.length;
      const inserted = `${chipLabel(item).replace(/ \(.*\)$/, "")} `;
      this.input.value = value.slice(0, query.start) + inserted + value.slice(end);
      const caret = query.start + inserted.length;
      this.input.setSelectionRange(caret, caret);
    }
    if (!this.mentions.some((known) => JSON.stringify(known) === JSON.stringify(item))) this.mentions.push(item);
    this.close();
    this.render();
    this.input.focus();
  }

  private close(): void {
    this.query = undefined;
    this.items = [];
    this.picker.hidden = true;
    this.picker.replaceChildren();
  }

  private async addImages(files: File[]): Promise<void> {
    for (const file of files) {
      if (this.images.length >= MAX_IMAGES) {
        this.problem = `At most ${MAX_IMAGES} images a prompt`;
        break;
      }
      const bytes = new Uint8Array(await file.arrayBuffer());
      const name = file.name !== "" ? file.name : `pasted-${this.images.length + 1}.${(sniffImage(bytes) ?? "image/png").split("/")[1]}`;
      const problem = imageProblem(name, bytes);
      const mediaType = sniffImage(bytes);
      if (problem !== undefined || mediaType === undefined) {
        this.problem = problem ?? `${name}: not an image`;
        continue;
      }
      const data = toBase64(bytes);
      const thumbnail = await thumbnailOf(file).catch(() => undefined);
      this.images.push({ name, mediaType, data, ...(thumbnail !== undefined ? { thumbnail } : {}) });
      this.problem = "";
    }
    this.render();
  }

  private renderPicker(): void {
    this.picker.replaceChildren();
    this.picker.hidden = this.items.length === 0;
    this.items.forEach((item, index) => {
      const row = document.createElement("li");
      row.className = `mention-option ${item.kind}${index === this.selected ? " selected" : ""}`;
      row.setAttribute("role", "option");
      row.setAttribute("aria-selected", String(index === this.selected));
      const kind = document.createElement("span");
      kind.className = "mention-kind";
      kind.textContent = item.kind;
      const label = document.createElement("span");
      label.className = "mention-label";
      label.textContent = item.kind === "symbol" ? `${item.label} — ${item.path}:${item.startLine}` : item.label;
      row.append(kind, label);
      if (item.detail !== undefined) {
        const detail = document.createElement("span");
        detail.className = "mention-detail";
        detail.textContent = item.detail;
        row.append(detail);
      }
      row.addEventListener("mousedown", (event) => {
        event.preventDefault();
        this.pick(item);
      });
      this.picker.append(row);
    });
  }

  private render(): void {
    this.chips.replaceChildren();
    if (this.active !== null) {
      const chip = chipElement(activeEditorLabel(this.active), `chip active-editor${this.activeOn ? "" : " off"}`);
      chip.title = this.activeOn ? "The current file (or selection) goes with the prompt: click to leave it out" : "Left out: click to send the current file (or selection) with the prompt";
      chip.setAttribute("role", "switch");
      chip.setAttribute("aria-checked", String(this.activeOn));
      chip.addEventListener("click", () => {
        this.activeOn = !this.activeOn;
        this.render();
      });
      this.chips.append(chip);
    }
    this.mentions.forEach((mention, index) => {
      const chip = chipElement(chipLabel(mention), `chip mention ${mention.kind}`);
      chip.append(removeButton(() => {
        this.mentions.splice(index, 1);
        this.render();
      }));
      this.chips.append(chip);
    });
    this.images.forEach((image, index) => {
      const chip = chipElement("", "chip image");
      chip.title = `${image.name} (${formatBytes((image.data.length * 3) / 4)})`;
      if (image.thumbnail !== undefined) {
        const img = document.createElement("img");
        img.src = image.thumbnail;
        img.alt = image.name;
        chip.append(img);
      } else {
        chip.append(image.name);
      }
      chip.append(removeButton(() => {
        this.images.splice(index, 1);
        this.render();
      }));
      this.chips.append(chip);
    });
    if (this.problem !== "") {
      const problem = document.createElement("span");
      problem.className = "attach-problem";
      problem.textContent = this.problem;
      this.chips.append(problem);
    }
    this.chips.hidden = this.chips.childElementCount === 0;
  }
}

/** A sent prompt's attachments, as the chat shows them: chips, and images as thumbnails. */
export function attachmentsView(attachments: AttachmentSummary[]): HTMLElement {
  const row = document.createElement("div");
  row.className = "sent-attachments";
  for (const attachment of attachments) {
    if (attachment.kind === "image" && attachment.thumbnail !== undefined) {
      const img = document.createElement("img");
      img.className = "thumb";
      img.src = attachment.thumbnail;
      img.alt = attachment.name;
      img.title = attachment.name;
      row.append(img);
    } else {
      const size = attachment.bytes !== undefined ? ` (${formatBytes(attachment.bytes)})` : "";
      const chip = chipElement(attachment.kind === "image" ? `🖼 ${attachment.name}` : `@${attachment.name}`, `chip sent ${attachment.kind}`);
      chip.title = `${attachment.kind}: ${attachment.name}${size}`;
      row.append(chip);
    }
  }
  return row;
}

function chipElement(text: string, className: string): HTMLElement {
  const chip = document.createElement("span");
  chip.className = className;
  if (text !== "") chip.textContent = text;
  return chip;
}

function removeButton(onClick: () => void): HTMLButtonElement {
  const remove = document.createElement("button");
  remove.type = "button";
  remove.className = "chip-remove";
  remove.textContent = "×";
  remove.title = "Remove";
  remove.addEventListener("click", (event) => {
    event.stopPropagation();
    onClick();
  });
  return remove;
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let at = 0; at < bytes.length; at += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  }
  return btoa(binary);
}

/** A downscaled copy (at most 160 px a side) as a `data:` URL small enough for the log. */
async function thumbnailOf(file: File): Promise<string | undefined> {
  const bitmap = await createImageBitmap(file);
  const scale = Math.min(1, 160 / Math.max(bitmap.width, bitmap.height));
  const canvas = document.createElement("canvas");
  canvas.width = Math.max(1, Math.round(bitmap.width * scale));
  canvas.height = Math.max(1, Math.round(bitmap.height * scale));
  canvas.getContext("2d")?.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
  bitmap.close();
  for (const [type, quality] of [["image/png", undefined], ["image/jpeg", 0.8], ["image/jpeg", 0.5]] as const) {
    const url = canvas.toDataURL(type, quality);
    if (url.length <= THUMBNAIL_MAX) return url;
  }
  return undefined;
}

function sameMention(a: Mention, b: Mention | undefined): boolean {
  return b !== undefined && a.kind === b.kind && a.label === b.label && ("path" in a ? a.path : "") === ("path" in b ? b.path : "");
}
