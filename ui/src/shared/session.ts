// The session's refresh rules, exactly as the platform's contract states
// them, and nothing else:
//
//  1. a timer fires at 75 % of the access token's remaining life (at least
//     10 s) and calls the refresh endpoint, then reschedules from that
//     answer's expires_in;
//  2. when the tab becomes visible with under 60 s of token life left, it
//     refreshes at once;
//  3. on a 401, one refresh is shared by every request in flight (see
//     Api), each is retried once, and the person is signed out only when
//     that refresh fails.
//
// There is no refresh at page load or right after sign-in: the remaining
// life comes from the profile endpoint's expires_in. The browser never
// sees a token: the refresh endpoint reads the HttpOnly refresh cookie and
// sets new cookies itself; this code only echoes the readable CSRF cookie.

import { readCookie } from "./cookies";

/** How a refresh ended. "ended": the session is gone (the endpoint refused
 * it); "unavailable": it could not be renewed now (network, rate limit,
 * provider down) but may still be good. */
export type RefreshOutcome = "ok" | "ended" | "unavailable";

export interface SessionConfig {
  /** POST endpoint that renews the cookies and answers {expires_in}. */
  refreshPath: string;
  /** Readable cookie whose value goes in X-CSRF-Token. */
  csrfCookie: string;
  /** Called once when a refresh fails for good: show the signed-out view. */
  onEnded: () => void;
}

export const TIMER_SHARE = 0.75;
export const MIN_TIMER_MS = 10_000;
export const VISIBLE_REFRESH_BELOW_MS = 60_000;
/** When a timer refresh could not reach the provider, try again after this
 * long (or the server's Retry-After, if longer). */
const RETRY_MS = 30_000;

export class Session {
  private expiresAt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private inflight: Promise<RefreshOutcome> | null = null;
  private running = false;
  private ended = false;
  /** Counts successful refreshes: a request sent before the latest one
   * that comes back 401 is retried without refreshing again. */
  generation = 0;

  constructor(private readonly cfg: SessionConfig) {}

  /** Whether a session may exist: the server sets the CSRF cookie at
   * sign-in and clears it at sign-out or when a refresh is refused. */
  mayExist(): boolean {
    return !this.ended && readCookie(this.cfg.csrfCookie) !== "";
  }

  csrfToken(): string {
    return readCookie(this.cfg.csrfCookie);
  }

  /** Starts rules 1 and 2 once the profile is loaded, with its expires_in. */
  begin(expiresInSeconds: number): void {
    this.note(expiresInSeconds);
    if (this.running) return;
    this.running = true;
    this.schedule(expiresInSeconds * 1000);
    document.addEventListener("visibilitychange", this.onVisibility);
  }

  /** Records the remaining token life a later profile load reported. It
   * does not move the timer: that follows the refresh answers. */
  note(expiresInSeconds: number): void {
    this.expiresAt = Date.now() + Math.max(0, expiresInSeconds) * 1000;
  }

  /** Milliseconds of access-token life left, as last reported. */
  remainingMs(): number {
    return this.expiresAt - Date.now();
  }

  /** Waits for a refresh in flight, so that a request about to be sent
   * reads the CSRF cookie the refresh is about to replace. */
  async settled(): Promise<void> {
    if (this.inflight) await this.inflight;
  }

  /** Rule 3's shared refresh (also used by rules 1 and 2): every caller
   * while one is in flight gets that one. */
  refresh(): Promise<RefreshOutcome> {
    if (!this.inflight) {
      this.inflight = this.doRefresh().finally(() => {
        this.inflight = null;
      });
    }
    return this.inflight;
  }

  /** Signs the person out in this page (the server already dropped the
   * session, or no refresh could renew it). */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.stop();
    this.cfg.onEnded();
  }

  private stop(): void {
    this.running = false;
    clearTimeout(this.timer);
    document.removeEventListener("visibilitychange", this.onVisibility);
  }

  private schedule(lifeMs: number): void {
    clearTimeout(this.timer);
    const delay = Math.max(MIN_TIMER_MS, lifeMs * TIMER_SHARE);
    this.timer = setTimeout(() => void this.refreshFromTimer(), delay);
  }

  private async refreshFromTimer(): Promise<void> {
    const outcome = await this.refresh();
    if (outcome === "ended") this.end();
  }

  private readonly onVisibility = (): void => {
    if (document.visibilityState !== "visible" || !this.running) return;
    if (this.remainingMs() < VISIBLE_REFRESH_BELOW_MS) void this.refreshFromTimer();
  };

  private async doRefresh(): Promise<RefreshOutcome> {
    if (this.ended) return "ended";
    const csrf = this.csrfToken();
    if (csrf === "") return "ended"; // the server cleared the session
    let res: Response;
    try {
      res = await fetch(this.cfg.refreshPath, {
        method: "POST",
        credentials: "same-origin",
        headers: { "X-CSRF-Token": csrf },
      });
    } catch {
      this.retryLater(0);
      return "unavailable";
    }
    if (res.ok) {
      let expiresIn = NaN;
      try {
        expiresIn = Number((await res.json()).expires_in);
      } catch {
        // handled below
      }
      if (!Number.isFinite(expiresIn)) {
        this.retryLater(0);
        return "unavailable";
      }
      this.generation++;
      this.note(expiresIn);
      if (this.running) this.schedule(expiresIn * 1000);
      return "ok";
    }
    if (res.status === 401 || res.status === 403) return "ended";
    this.retryLater(Number(res.headers.get("Retry-After")) * 1000 || 0);
    return "unavailable";
  }

  private retryLater(ms: number): void {
    if (!this.running) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.refreshFromTimer(), Math.max(RETRY_MS, ms));
  }
}
