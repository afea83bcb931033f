// The end-to-end tests that start from a plain workspace, in one code-server session (a
// session's start and close cost ~19 s of CPU on the 2-core CI machine): the permission rules,
// the basics, the editor as context, then the chat, whose window reload and offline demo come
// last. Each module starts from a new chat in "ask before edits" and takes back what would
// decide a later module's tests; its screenshots are named after it
// (`.e2e-artifacts/<module>-NN-<step>.png`). The editor module comes after the basics: its git
// repository, TypeScript files, editors and terminal are its own (its `after` takes them back),
// and what the rules and the basics leave (a few files, views) decides none of its tests.
import { after, describe } from "node:test";
import { chatTests } from "./chat";
import { editorTests } from "./editor";
import { closeSharedChatSession } from "./harness";
import { rulesTests } from "./rules";
import { tillerTests } from "./tiller";

describe("rules", rulesTests);
describe("tiller", tillerTests);
describe("editor", editorTests);
describe("chat", chatTests);

after(closeSharedChatSession);
