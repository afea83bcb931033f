// Builds dist/extension.js (Node, CommonJS), dist/webview.js (browser IIFE) and
// dist/webview.css; with --tests, also the test files into out/ for `node --test`.
import { build } from "esbuild";
import { copyFile, mkdir, readdir } from "node:fs/promises";
import path from "node:path";

const production = process.argv.includes("--production");
const tests = process.argv.includes("--tests");
const common = { bundle: true, sourcemap: !production, minify: production, logLevel: "warning" };

await mkdir("dist", { recursive: true });
await Promise.all([
  build({
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    platform: "node",
    format: "cjs",
    target: "node20",
    external: ["vscode"],
  }),
  build({
    ...common,
    entryPoints: ["src/webview/main.ts"],
    outfile: "dist/webview.js",
    platform: "browser",
    format: "iife",
    target: "es2022",
  }),
  copyFile("src/webview/style.css", "dist/webview.css"),
]);

if (tests) {
  for (const kind of ["unit", "e2e"]) {
    const dir = path.join("test", kind);
    const entryPoints = (await readdir(dir)).filter((f) => f.endsWith(".test.ts")).map((f) => path.join(dir, f));
    await build({
      ...common,
      sourcemap: true,
      entryPoints,
      outdir: path.join("out", kind),
      platform: "node",
      format: "cjs",
      target: "node20",
      packages: "external",
    });
  }
}
