import { useEffect } from "preact/hooks";
import { setPageTitle } from "../../shared/components";

export type SignedOutReason = "ended" | "callback_failed";

const returnKey = "govkit.returnPath";

/** Remembers where the person was, so that the login (which always ends at
 * the platform's root) brings them back there. A path, never a token. */
function rememberReturnPath(): void {
  const p = location.pathname + location.search;
  try {
    if (p !== "/") sessionStorage.setItem(returnKey, p);
    else sessionStorage.removeItem(returnKey);
  } catch {
    // storage disabled: the login ends at the home page
  }
}

/** The remembered in-app path, once; only same-origin paths. */
export function takeReturnPath(): string {
  try {
    const p = sessionStorage.getItem(returnKey) ?? "";
    sessionStorage.removeItem(returnKey);
    return p.startsWith("/") && !p.startsWith("//") && !p.startsWith("/api/") ? p : "";
  } catch {
    return "";
  }
}

/** The signed-out home: what the platform is and the way in. It shows
 * nothing of any person, also after a session ended in this page. */
export function SignedOut({ reason }: { reason?: SignedOutReason }) {
  useEffect(() => {
    setPageTitle("Sign in");
  }, []);
  return (
    <div class="signed-out">
      <header class="topbar">
        <span class="brand">
          <img src="/favicon.svg" alt="" width={28} height={28} />
          <span class="brand-text">
            govkit <small>documents</small>
          </span>
        </span>
      </header>
      <main id="main" class="signin">
        <div class="signin-card">
          <img class="signin-logo" src="/favicon.svg" alt="" width={56} height={56} />
          <h1>govkit documents</h1>
          <p class="lead">Upload documents, read their OCR results and review them together with your groups.</p>
          {reason === "ended" ? (
            <div class="note note-info" role="status">
              <p>Your session has ended. Sign in again to continue.</p>
            </div>
          ) : null}
          {reason === "callback_failed" ? (
            <div class="note note-error" role="alert">
              <p>Signing in did not complete. Please try again.</p>
            </div>
          ) : null}
          <a class="btn btn-primary btn-large signin-button" href="/api/auth/login" onClick={rememberReturnPath}>
            Sign in
          </a>
          <p class="hint">You sign in with your organisation's account at its identity provider; this site never sees your password.</p>
        </div>
      </main>
      <footer class="site-footer">
        <a href="/api/docs">API documentation</a>
        <span aria-hidden="true">·</span>
        <a href="/licenses.txt">Licences</a>
      </footer>
    </div>
  );
}
