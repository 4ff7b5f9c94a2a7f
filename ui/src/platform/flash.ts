// A message for the next page (after an action that leaves the current
// one, such as deleting what it showed). In memory only.

let pending = "";

export function setFlash(message: string): void {
  pending = message;
}

export function takeFlash(): string {
  const m = pending;
  pending = "";
  return m;
}
