// How the person signs in, as the original console allows: nothing from an
// admin address; an administrator's email and password (the login API
// gives an access token); a pasted access token; or OIDC, the
// authorization code flow with PKCE run in the browser. The credential is
// kept in sessionStorage (this tab only, gone when it closes) and never
// put in an address: the callback's code is removed from the address bar
// before it is exchanged.

import { ApiError } from "../shared/api";
import { settings } from "./settings";

export type Method = "adminIp" | "login" | "token" | "oidc";

export interface Credential {
  method: Method;
  /** The Authorization header's value ("" from an admin address). */
  authorization: string;
  /** Who signed in, as far as the console knows (an email). */
  label?: string;
  /** When an OIDC access token expires (ms since the epoch). */
  expires?: number;
}

const credentialKey = "notify-console.credential";
const pkceKey = "notify-console.oidc";

export function loadCredential(): Credential | null {
  try {
    const raw = sessionStorage.getItem(credentialKey);
    if (!raw) return null;
    const c = JSON.parse(raw) as Credential;
    if (typeof c.authorization !== "string") return null;
    if (c.expires && c.expires < Date.now()) {
      sessionStorage.removeItem(credentialKey);
      return null;
    }
    return c;
  } catch {
    return null;
  }
}

export function saveCredential(c: Credential): void {
  sessionStorage.setItem(credentialKey, JSON.stringify(c));
}

export function clearCredential(): void {
  sessionStorage.removeItem(credentialKey);
}

/** The path the OIDC provider sends the browser back to. */
export const callbackPath = "/oidc-callback";

function redirectURI(): string {
  return location.origin + callbackPath;
}

function base64url(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomString(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

interface Discovery {
  authorization_endpoint: string;
  token_endpoint: string;
}

async function discover(): Promise<Discovery> {
  let res: Response;
  try {
    res = await fetch(settings.oidcAuthority + "/.well-known/openid-configuration", { cache: "no-store", credentials: "omit" });
  } catch {
    throw new ApiError(0, `The sign-in provider at ${settings.oidcAuthority} could not be reached.`, "No answer");
  }
  if (!res.ok) throw new ApiError(res.status, `The sign-in provider's discovery document could not be read (status ${res.status}).`, res.statusText);
  const d = (await res.json()) as Partial<Discovery>;
  if (!d.authorization_endpoint || !d.token_endpoint) throw new Error("The sign-in provider's discovery document names no authorization or token endpoint.");
  return d as Discovery;
}

/** Starts OIDC sign-in: goes to the provider's authorization endpoint. */
export async function startOIDC(returnTo: string): Promise<void> {
  if (!crypto.subtle) throw new Error("This browser cannot sign in with OIDC here: the console must be opened over HTTPS (or on localhost).");
  const d = await discover();
  const verifier = randomString();
  const state = randomString();
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
  sessionStorage.setItem(pkceKey, JSON.stringify({ verifier, state, returnTo, tokenEndpoint: d.token_endpoint }));
  const q = new URLSearchParams({
    response_type: "code",
    client_id: settings.oidcClientId,
    redirect_uri: redirectURI(),
    scope: "openid profile email",
    state,
    code_challenge: challenge,
    code_challenge_method: "S256",
  });
  location.assign(d.authorization_endpoint + (d.authorization_endpoint.includes("?") ? "&" : "?") + q.toString());
}

/** Finishes OIDC sign-in on the callback page: takes the code out of the
 * address, checks the state, exchanges the code with the verifier and
 * keeps the access token. Returns where to go next. */
export async function finishOIDC(): Promise<string> {
  const q = new URLSearchParams(location.search);
  history.replaceState(null, "", "/");
  const saved = sessionStorage.getItem(pkceKey);
  sessionStorage.removeItem(pkceKey);
  const err = q.get("error");
  if (err) throw new Error(`The sign-in provider refused: ${q.get("error_description") || err}`);
  if (!saved) throw new Error("This sign-in was not started in this tab (or was already finished). Sign in again.");
  const p = JSON.parse(saved) as { verifier: string; state: string; returnTo: string; tokenEndpoint: string };
  if (q.get("state") !== p.state) throw new Error("The sign-in answer does not belong to this sign-in (state mismatch). Sign in again.");
  const code = q.get("code");
  if (!code) throw new Error("The sign-in provider sent no code.");
  let res: Response;
  try {
    res = await fetch(p.tokenEndpoint, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
      body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: redirectURI(), client_id: settings.oidcClientId, code_verifier: p.verifier }).toString(),
      credentials: "omit",
      cache: "no-store",
    });
  } catch {
    throw new ApiError(0, "The sign-in provider's token endpoint could not be reached.", "No answer");
  }
  const body = (await res.json().catch(() => ({}))) as { access_token?: string; expires_in?: number; error?: string; error_description?: string };
  if (!res.ok || !body.access_token) throw new ApiError(res.status, `The sign-in provider did not give a token: ${body.error_description || body.error || res.statusText}`, "Token exchange failed");
  saveCredential({
    method: "oidc",
    authorization: "Bearer " + body.access_token,
    expires: body.expires_in ? Date.now() + body.expires_in * 1000 : undefined,
  });
  return p.returnTo && p.returnTo.startsWith("/") && !p.returnTo.startsWith("//") ? p.returnTo : "/";
}
