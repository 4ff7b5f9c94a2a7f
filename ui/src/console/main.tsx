// The notification service's web console. It finds out who the browser is
// to the API (GET /administrators/whoami, with the credential kept in this
// tab, or none: an admin address is SuperAdmin with nothing to type), and
// shows the pages that role may use, or the sign-in page. The OIDC
// provider's answer comes back to /oidc-callback, handled here first.

import "../shared/styles.css";
import "./console.css";
import { render } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import { ErrorNote, Loading } from "../shared/components";
import { navigate } from "../shared/router";
import { ConsoleApp } from "./app";
import { callbackPath, clearCredential, finishOIDC, loadCredential, saveCredential, type Credential } from "./auth";
import { Client } from "./client";
import { ConsoleContext, type Console, type Who } from "./context";
import { SignIn } from "./pages/signin";

type State = { kind: "loading" } | { kind: "signedOut"; problem?: unknown; notice?: string; canGoBack?: boolean } | { kind: "signedIn"; who: Who; cred: Credential } | { kind: "failed"; error: unknown };

function Root() {
  const [state, setState] = useState<State>({ kind: "loading" });
  const client = useMemo(() => new Client(""), []);

  /** Asks the API who this credential (or this address) is. */
  const check = async (cred: Credential | null, problem?: unknown): Promise<void> => {
    client.authorization = cred?.authorization ?? "";
    client.expires = cred?.expires;
    let who: Who;
    try {
      who = await client.get<Who>("/administrators/whoami");
    } catch (e) {
      if (cred) {
        // The kept credential no longer works: sign in again.
        clearCredential();
        return check(null, e);
      }
      setState({ kind: "failed", error: e });
      return;
    }
    if (who.role === "Anonymous" || !who.role) {
      if (cred) {
        clearCredential();
        client.authorization = "";
        setState({ kind: "signedOut", problem: problem ?? new Error("The API did not accept these credentials: it treats this browser as anonymous.") });
      } else {
        setState({ kind: "signedOut", problem });
      }
      return;
    }
    const kept: Credential = cred ?? { method: "adminIp", authorization: "" };
    if (cred) saveCredential(cred);
    setState({ kind: "signedIn", who, cred: kept });
  };

  useEffect(() => {
    client.onUnauthorized = () => {
      clearCredential();
      client.authorization = "";
      client.expires = undefined;
      setState({ kind: "signedOut", notice: "Your sign-in has ended (the API refused the credential). Sign in again." });
    };
    if (location.pathname === callbackPath) {
      finishOIDC().then(
        (to) => {
          navigate(to, { replace: true });
          return check(loadCredential());
        },
        (e: unknown) => {
          navigate("/", { replace: true });
          setState({ kind: "signedOut", problem: e });
        },
      );
      return;
    }
    void check(loadCredential());
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  const ctx: Console | null = useMemo(
    () =>
      state.kind === "signedIn"
        ? {
            client,
            who: state.who,
            method: state.cred.method,
            signOut: async () => {
              // A password sign-in's token is the console's own: it is
              // deleted on the server. A pasted token (made on purpose,
              // perhaps used elsewhere) and an OIDC token are only
              // forgotten here.
              if (state.cred.method === "login") await client.logout();
              clearCredential();
              client.authorization = "";
              client.expires = undefined;
              setState({ kind: "signedOut", notice: state.cred.method === "adminIp" ? undefined : "You are signed out." });
            },
            // From an admin address the console needs no sign-in, but a
            // person there may want to act as someone else (an OIDC user,
            // another administrator): a credential keeps its own role at
            // an admin address.
            switchUser: () => setState({ kind: "signedOut", notice: "This address is a super administrator without signing in. Sign in below to use the console as someone else.", canGoBack: true }),
          }
        : null,
    [state, client],
  );

  switch (state.kind) {
    case "loading":
      return (
        <main class="boot" id="main">
          <Loading what="Opening the console" />
        </main>
      );
    case "failed":
      return (
        <main class="boot" id="main">
          <h1>The console could not start</h1>
          <ErrorNote error={state.error} action="ask the API who you are" />
          <p>
            <a href="/">Try again</a>
          </p>
        </main>
      );
    case "signedOut":
      return <SignIn client={client} problem={state.problem} notice={state.notice} onSignedIn={(c) => check(c)} onBack={state.canGoBack ? () => void check(null) : undefined} />;
    case "signedIn":
      return (
        <ConsoleContext.Provider value={ctx}>
          <ConsoleApp />
        </ConsoleContext.Provider>
      );
  }
}

render(<Root />, document.getElementById("app")!);
