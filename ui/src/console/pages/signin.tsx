// The sign-in page: the ways the API accepts, one form each.

import { useEffect, useRef, useState } from "preact/hooks";
import { Button, ErrorNote, setPageTitle, Status, TextField } from "../../shared/components";
import { startOIDC, type Credential } from "../auth";
import type { Client } from "../client";
import { oidcEnabled } from "../settings";

export function SignIn({ client, problem, notice, onSignedIn, onBack }: { client: Client; problem?: unknown; notice?: string; onSignedIn: (c: Credential) => Promise<void>; onBack?: () => void }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [token, setToken] = useState("");
  const [error, setError] = useState<unknown>(problem);
  const [busy, setBusy] = useState<"" | "login" | "token" | "oidc">("");
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    setPageTitle("Sign in");
    heading.current?.focus();
  }, []);
  useEffect(() => setError(problem), [problem]);

  const login = async (e: Event) => {
    e.preventDefault();
    if (busy) return;
    setBusy("login");
    setError(undefined);
    try {
      client.authorization = "";
      // The API bounds the token's life (loginTokenTtlHours) and says
      // how long it is; the console forgets it then.
      const r = await client.post<{ token: string; ttl?: number }>("/administrators/login", { email, password, tokenName: "console" });
      await onSignedIn({ method: "login", authorization: r.token, label: email, expires: typeof r.ttl === "number" ? Date.now() + r.ttl * 1000 : undefined });
    } catch (err) {
      setError(err);
    } finally {
      setBusy("");
    }
  };
  const useToken = async (e: Event) => {
    e.preventDefault();
    if (busy) return;
    const t = token.trim();
    if (!t) {
      setError(new Error("Paste an access token first."));
      return;
    }
    setBusy("token");
    setError(undefined);
    try {
      await onSignedIn({ method: "token", authorization: t });
    } finally {
      setBusy("");
    }
  };
  const oidc = async () => {
    setBusy("oidc");
    setError(undefined);
    try {
      await startOIDC(location.pathname === "/" ? "/" : location.pathname + location.search);
    } catch (err) {
      setError(err);
      setBusy("");
    }
  };

  return (
    <div class="signed-out">
      <main id="main" class="signin">
        <div class="signin-card">
          <img class="signin-logo" src="/favicon.svg" alt="" width={48} height={48} />
          <h1 ref={heading} tabIndex={-1}>
            Notification console
          </h1>
          <p class="lead">Sign in to manage subscriptions, notifications and the service's configuration.</p>
          {notice ? <Status kind="info">{notice}</Status> : null}
          {onBack ? (
            <p class="signin-back">
              <Button variant="quiet" onClick={onBack}>
                Back to the console as super administrator
              </Button>
            </p>
          ) : null}
          <ErrorNote error={error} action="sign in" />
          {oidcEnabled() ? (
            <section aria-labelledby="signin-oidc" class="signin-method">
              <h2 id="signin-oidc">With your organisation's account</h2>
              <Button variant="primary" class="signin-button" busy={busy === "oidc"} onClick={oidc}>
                Sign in with OIDC
              </Button>
            </section>
          ) : null}
          <section aria-labelledby="signin-login" class="signin-method">
            <h2 id="signin-login">Administrator email and password</h2>
            <form class="form" onSubmit={login}>
              <TextField label="Email" type="email" value={email} onValue={setEmail} required autoComplete="username" />
              <div class="field">
                <label for="signin-password">Password</label>
                <input id="signin-password" type="password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} required autoComplete="current-password" />
              </div>
              <Button type="submit" variant="primary" busy={busy === "login"}>
                Sign in
              </Button>
            </form>
          </section>
          <section aria-labelledby="signin-token" class="signin-method">
            <h2 id="signin-token">Access token</h2>
            <form class="form" onSubmit={useToken}>
              <div class="field">
                <label for="signin-token-value">Access token</label>
                <input id="signin-token-value" type="password" class="mono" value={token} onInput={(e) => setToken(e.currentTarget.value)} autoComplete="off" aria-describedby="signin-token-hint" />
                <p class="hint" id="signin-token-hint">
                  An administrator's access token, as sent in the Authorization header.
                </p>
              </div>
              <Button type="submit" busy={busy === "token"}>
                Use access token
              </Button>
            </form>
          </section>
          <p class="hint">
            Requests from the service's admin addresses (adminIps) need no sign-in when the console is opened under one of the service's own names (httpHost, allowedHosts, localhost) over HTTPS or at a loopback address.
          </p>
        </div>
      </main>
    </div>
  );
}
