// The end-to-end tests that need nothing but a plain workspace, in one code-server session (a
// session's start and close cost ~19 s of CPU on the 2-core CI machine): the permission rules,
// the basics, then the chat, whose window reload and offline demo come last. Each module starts
// from a new chat in "ask before edits" and takes back what would decide a later module's tests;
// its screenshots are named after it (`.e2e-artifacts/<module>-NN-<step>.png`).
import { after, describe } from "node:test";
import { chatTests } from "./chat";
import { closeSharedChatSession } from "./harness";
import { rulesTests } from "./rules";
import { tillerTests } from "./tiller";

describe("rules", rulesTests);
describe("tiller", tillerTests);
describe("chat", chatTests);

after(closeSharedChatSession);
