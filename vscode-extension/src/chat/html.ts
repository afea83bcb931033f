// The chat webview's page: the script and the stylesheet from dist/, under a strict Content
// Security Policy (scripts by nonce only, never a remote image).
import { randomBytes } from "node:crypto";
import * as vscode from "vscode";

export function chatHtml(webview: vscode.Webview, dist: vscode.Uri): string {
  const nonce = makeNonce();
  const script = webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js"));
  const style = webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.css"));
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource}`,
    // Never a remote image: a URL in model output could carry data out (prompt injection).
    `img-src ${webview.cspSource} data:`,
    `font-src ${webview.cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style.toString()}">
<title>Tiller</title>
</head>
<body>
<main id="log" aria-live="polite"></main>
<section id="queue" hidden></section>
<form id="composer">
  <div id="info"><span id="mode"></span><span id="usage" title="Context used / the model's window · session cost"></span></div>
  <ul id="slash" hidden></ul>
  <textarea id="input" rows="3" placeholder="Ask Tiller… (Enter to send, Shift+Enter for a new line, Shift+Tab: mode, Esc: interrupt)"></textarea>
  <div id="bar"><span class="spacer"></span><button type="button" id="stop" hidden>Stop</button><button type="submit" id="send">Send</button></div>
</form>
<script nonce="${nonce}" src="${script.toString()}"></script>
</body>
</html>`;
}

/** The CSP nonce: 128 bits from the system's cryptographic random source. */
function makeNonce(): string {
  return randomBytes(16).toString("base64url");
}
