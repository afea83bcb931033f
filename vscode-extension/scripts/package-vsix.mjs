// `npm run package`'s last step: dist/tiller.vsix, made by vsce in a staging directory that
// holds only what the package may take (.vscodeignore still says what it takes). vsce lists
// every file under its directory before it filters them, and this directory also holds the
// end-to-end cache (code-server: ~6,000 files): that listing was most of the packaging's CPU.
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const EXT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const STAGED = ["package.json", "README.md", ".vscodeignore", "dist", "media", "server-wheel"];
const VSIX = path.join(EXT_DIR, "dist", "tiller.vsix");

const staging = mkdtempSync(path.join(tmpdir(), "tiller-vsix-"));
try {
  for (const name of STAGED) {
    cpSync(path.join(EXT_DIR, name), path.join(staging, name), {
      recursive: true,
      filter: (source) => source !== VSIX && !source.endsWith(".map"),
    });
  }
  const vsce = path.join(EXT_DIR, "node_modules", ".bin", "vsce");
  execFileSync(vsce, ["package", "--no-dependencies", "--skip-license", "--allow-missing-repository", "-o", VSIX], { cwd: staging, stdio: "inherit" });
} finally {
  rmSync(staging, { recursive: true, force: true });
}
