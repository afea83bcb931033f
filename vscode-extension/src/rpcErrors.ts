// JSON-RPC error codes and helpers the extension uses with every request (re-exported by the
// generated protocol.ts, so `import { hasErrorCode } from "./protocol"` keeps working).

export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;

/** True when an error is a JSON-RPC error with one of the given codes. */
export function hasErrorCode(error: unknown, ...codes: number[]): boolean {
  if (typeof error !== "object" || error === null || !("code" in error)) {
    return false;
  }
  const code = (error as { code: unknown }).code;
  return typeof code === "number" && codes.includes(code);
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
