// What a notification says for an event, if anything (pure: unit-tested). The server posts a
// question as an event before it asks, and every turn ends with `turnEnded`.
import type { TillerEvent } from "./protocol";

export function notificationFor(event: TillerEvent): string | undefined {
  switch (event.type) {
    case "confirmRequested":
      return `Tiller needs your answer: allow ${event.name}?`;
    case "planRequested":
      return "Tiller needs your answer: a plan to approve.";
    case "checkpointRequested":
      return `Tiller needs your answer: continue after ${event.toolsUsed} tool calls?`;
    case "turnEnded":
      return event.outcome === "completed" ? "Tiller finished the turn." : `Tiller's turn ended: ${event.outcome}.`;
    default:
      return undefined;
  }
}
