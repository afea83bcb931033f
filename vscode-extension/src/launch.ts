// How the server is launched: `python -m tiller --warm` (the server forked from the user's warm
// template, which has the SDK loaded already; a plain server in that process when there is
// none), and plain `python -m tiller` once a warm launch failed to start.
// The transport is stdio either way: the forked server takes the pipes this process was given.
// `-P` first: the server starts in the workspace, which must not be on its `sys.path`.
import { SAFE_PATH } from "./pythonChoice";

/** The arguments after the Python executable. */
export function serverArgs(warm: boolean): string[] {
  return warm ? [SAFE_PATH, "-m", "tiller", "--warm"] : [SAFE_PATH, "-m", "tiller"];
}

/** Whether to try the warm start: off after one warm launch failed, or with TILLER_WARM=0. */
export class WarmChoice {
  private failed = false;

  constructor(private readonly env: NodeJS.ProcessEnv) {}

  get warm(): boolean {
    return !this.failed && this.env.TILLER_WARM !== "0";
  }

  /** A launch did not start: the next ones spawn plainly (the server answers the same). */
  launchFailed(warm: boolean): boolean {
    if (!warm) return false;
    this.failed = true;
    return true;
  }
}
