// The console's API client: JSON over fetch, with the credential the
// person signed in with in the Authorization header (an access token as
// NotifyBC takes it, bare; an OIDC access token as "Bearer …"). From an
// admin address there is none: the server makes such requests SuperAdmin.
// Errors are ApiErrors carrying the server's words.

import { ApiError, withQuery, type Query } from "../shared/api";
import { settings } from "./settings";

export { ApiError, withQuery, type Query };

/** The filter parameter NotifyBC takes on lists. */
export interface Filter {
  where?: Record<string, unknown>;
  order?: string | [string, string][];
  skip?: number;
  limit?: number;
  fields?: Record<string, boolean>;
}

export class Client {
  /** Called when the credential has ended: the server refuses it (401),
   * its time is up, or a refusal (403) turns out to be because the API no
   * longer knows it (revoked, or its administrator's password changed). */
  onUnauthorized: () => void = () => {};
  /** When the credential ends (ms since the epoch), if the console knows. */
  expires?: number;

  constructor(public authorization: string) {}

  get<T>(path: string, query?: Query): Promise<T> {
    return this.request<T>("GET", withQuery(path, query));
  }
  list<T>(path: string, filter: Filter): Promise<T[]> {
    return this.get<T[]>(path, { filter: JSON.stringify(filter) });
  }
  count(path: string, where: Record<string, unknown> | undefined): Promise<number> {
    return this.get<{ count: number }>(path + "/count", where && Object.keys(where).length ? { where: JSON.stringify(where) } : undefined).then((c) => c.count);
  }
  post<T>(path: string, body?: unknown): Promise<T> {
    return this.request<T>("POST", path, body);
  }
  patch<T = void>(path: string, body: unknown): Promise<T> {
    return this.request<T>("PATCH", path, body);
  }
  put<T = void>(path: string, body: unknown): Promise<T> {
    return this.request<T>("PUT", path, body);
  }
  delete<T = void>(path: string): Promise<T> {
    return this.request<T>("DELETE", path);
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    if (this.authorization && this.expires !== undefined && Date.now() >= this.expires) {
      this.onUnauthorized();
      throw new ApiError(401, "Your sign-in has ended. Sign in again.", "Unauthorized");
    }
    const headers: Record<string, string> = { Accept: "application/json" };
    if (this.authorization) headers.Authorization = this.authorization;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let res: Response;
    let text: string;
    try {
      res = await fetch(settings.api + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: "no-store",
        credentials: "omit",
      });
      text = await res.text();
    } catch {
      throw new ApiError(0, "The server could not be reached. Check the connection and try again.", "No answer");
    }
    if (res.status === 401 && this.authorization) this.onUnauthorized();
    if (res.status === 403 && this.authorization && path !== "/administrators/whoami") void this.checkStillKnown();
    return decode<T>(res, text);
  }

  /** After a refusal: does the API still take the credential? An access
   * token it no longer knows makes the request anonymous, which is 403,
   * not 401. */
  private async checkStillKnown(): Promise<void> {
    try {
      const who = await this.get<{ role?: string }>("/administrators/whoami");
      if (!who.role || who.role === "Anonymous") this.onUnauthorized();
    } catch {
      // no answer: the next request will tell
    }
  }

  /** Ends a password sign-in's token on the server (POST
   * /administrators/logout), so that Sign out ends it everywhere and not
   * only in this tab. Best effort: a token the server cannot be told
   * about still ends at its ttl. */
  async logout(): Promise<void> {
    if (!this.authorization) return;
    try {
      await this.request("POST", "/administrators/logout");
    } catch {
      // ignored: see above
    }
  }
}

function decode<T>(res: Response, text: string): T {
  if (res.ok) {
    if (text === "") return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      // Some of NotifyBC's answers are text/plain.
      return text as T;
    }
  }
  let message = "";
  let reason = res.statusText;
  try {
    const e = JSON.parse(text) as { message?: unknown; error?: unknown };
    if (typeof e.message === "string") message = e.message;
    else if (Array.isArray(e.message)) message = e.message.join("; ");
    else if (e.error && typeof e.error === "object" && typeof (e.error as { message?: unknown }).message === "string") message = (e.error as { message: string }).message;
    if (typeof e.error === "string") reason = e.error;
  } catch {
    if (text && text.length < 300 && !text.trimStart().startsWith("<")) message = text;
  }
  if (!message) message = reason || `The request failed with status ${res.status}.`;
  const retry = res.headers.get("Retry-After");
  throw new ApiError(res.status, message, reason, retry !== null && Number.isFinite(Number(retry)) ? Number(retry) : undefined);
}
