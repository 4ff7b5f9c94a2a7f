// The JSON API client every UI uses. It sends credentials (cookies) on
// every call, the CSRF cookie's value in X-CSRF-Token on POST, PUT, PATCH
// and DELETE, and applies the session's 401 rule: one shared refresh for
// all requests in flight, each retried once, sign-out only when that
// refresh fails. It never sees a token and stores nothing.

import type { Session } from "./session";

/** An error answer of the API, or a request that did not get one. The
 * message is meant for people: it is what the server said, in its words. */
export class ApiError extends Error {
  constructor(
    /** HTTP status; 0 when no answer came (network, cancelled). */
    readonly status: number,
    message: string,
    /** The status's reason phrase ("Forbidden"), or what went wrong. */
    readonly reason: string,
    /** Seconds the server asked to wait (429), when it said. */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** Rejects the requests whose session could not be renewed: the page is
 * switching to the signed-out view, so there is nothing to show for them. */
export class SessionEndedError extends Error {
  constructor() {
    super("Your session has ended.");
    this.name = "SessionEndedError";
  }
}

export type QueryValue = string | number | boolean | null | undefined;
export type Query = Record<string, QueryValue>;

interface Answer {
  status: number;
  statusText: string;
  body: string;
  retryAfter: string | null;
}

const unsafeMethods = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** path?query, leaving out empty values. */
export function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === "") continue;
    q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

export interface UploadOptions {
  onProgress?: (loaded: number, total: number) => void;
  signal?: AbortSignal;
}

export class Api {
  constructor(private readonly session: Session) {}

  get<T>(path: string, query?: Query): Promise<T> {
    return this.request<T>("GET", withQuery(path, query));
  }

  post<T>(path: string, json?: unknown): Promise<T> {
    return this.request<T>("POST", path, json);
  }

  put<T>(path: string, json?: unknown): Promise<T> {
    return this.request<T>("PUT", path, json);
  }

  delete<T = void>(path: string, query?: Query): Promise<T> {
    return this.request<T>("DELETE", withQuery(path, query));
  }

  async request<T>(method: string, url: string, json?: unknown): Promise<T> {
    const answer = await this.exchange(() => this.sendFetch(method, url, json));
    return decode<T>(answer);
  }

  /** Uploads a multipart form with XMLHttpRequest, whose upload events
   * report progress (fetch has none). */
  async upload<T>(url: string, form: FormData, opts: UploadOptions = {}): Promise<T> {
    const answer = await this.exchange(() => this.sendXHR("POST", url, form, opts));
    return decode<T>(answer);
  }

  /** Sends once; on a 401, shares the refresh and sends once more. */
  private async exchange(send: () => Promise<Answer>): Promise<Answer> {
    await this.session.settled();
    const generation = this.session.generation;
    const first = await send();
    if (first.status !== 401) return first;
    // A refresh that finished after this request left already renewed
    // the cookies it lacked: retry without another.
    const outcome = this.session.generation !== generation ? "ok" : await this.session.refresh();
    if (outcome !== "ok") {
      this.session.end();
      throw new SessionEndedError();
    }
    return send();
  }

  private headers(method: string): Record<string, string> {
    const h: Record<string, string> = { Accept: "application/json" };
    if (unsafeMethods.has(method)) h["X-CSRF-Token"] = this.session.csrfToken();
    return h;
  }

  private async sendFetch(method: string, url: string, json?: unknown): Promise<Answer> {
    const headers = this.headers(method);
    if (json !== undefined) headers["Content-Type"] = "application/json";
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers,
        body: json === undefined ? undefined : JSON.stringify(json),
        credentials: "include",
        cache: "no-store",
      });
    } catch {
      throw unreachable();
    }
    let body = "";
    try {
      body = await res.text();
    } catch {
      throw unreachable();
    }
    return { status: res.status, statusText: res.statusText, body, retryAfter: res.headers.get("Retry-After") };
  }

  private sendXHR(method: string, url: string, form: FormData, opts: UploadOptions): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open(method, url);
      xhr.withCredentials = true;
      for (const [k, v] of Object.entries(this.headers(method))) xhr.setRequestHeader(k, v);
      xhr.upload.addEventListener("progress", (e) => {
        if (e.lengthComputable) opts.onProgress?.(e.loaded, e.total);
      });
      xhr.addEventListener("load", () =>
        resolve({
          status: xhr.status,
          statusText: xhr.statusText,
          body: xhr.responseText,
          retryAfter: xhr.getResponseHeader("Retry-After"),
        }),
      );
      xhr.addEventListener("error", () => reject(unreachable()));
      xhr.addEventListener("abort", () => reject(new ApiError(0, "The upload was cancelled.", "Cancelled")));
      if (opts.signal) {
        if (opts.signal.aborted) {
          reject(new ApiError(0, "The upload was cancelled.", "Cancelled"));
          return;
        }
        opts.signal.addEventListener("abort", () => xhr.abort(), { once: true });
      }
      xhr.send(form);
    });
  }
}

function unreachable(): ApiError {
  return new ApiError(0, "The server could not be reached. Check the connection and try again.", "No answer");
}

function decode<T>(a: Answer): T {
  if (a.status >= 200 && a.status < 300) {
    if (a.body === "") return undefined as T;
    try {
      return JSON.parse(a.body) as T;
    } catch {
      throw new ApiError(a.status, "The server's answer was not JSON.", "Bad answer");
    }
  }
  let message = "";
  let reason = a.statusText;
  try {
    const e = JSON.parse(a.body) as { message?: unknown; error?: unknown };
    if (typeof e.message === "string") message = e.message;
    else if (Array.isArray(e.message)) message = e.message.join("; ");
    if (typeof e.error === "string") reason = e.error;
  } catch {
    // not our JSON error shape (a proxy's page, say): the status says it
  }
  const retry = a.retryAfter !== null ? Number(a.retryAfter) : undefined;
  if (!message) message = reason || `The request failed with status ${a.status}.`;
  throw new ApiError(a.status, message, reason, Number.isFinite(retry) ? retry : undefined);
}
