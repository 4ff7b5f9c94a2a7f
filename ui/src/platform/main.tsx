// The document platform's web UI: it signs the person in through the
// platform (/api/auth/login), loads the profile from /api/auth/me, keeps
// the session alive by the refresh rules (shared/session.ts) and shows
// the pages of the signed-in app, or the signed-out home.

import "../shared/styles.css";
import "./platform.css";
import { render } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import { Api, SessionEndedError } from "../shared/api";
import { ErrorNote, Loading } from "../shared/components";
import { Session } from "../shared/session";
import { navigate } from "../shared/router";
import { SignedInApp } from "./app";
import { AppContext, People, type App } from "./context";
import { SignedOut, takeReturnPath, type SignedOutReason } from "./pages/signedout";
import type { Me } from "./types";

type State =
  | { kind: "loading" }
  | { kind: "signedOut"; reason?: SignedOutReason }
  | { kind: "signedIn"; me: Me }
  | { kind: "failed"; error: unknown };

function Root() {
  const [state, setState] = useState<State>({ kind: "loading" });
  const { session, api, people } = useMemo(() => {
    const session = new Session({
      refreshPath: "/api/auth/refresh",
      csrfCookie: "csrf_token",
      // The refresh failed: the whole page becomes the signed-out home,
      // which knows nothing of the person.
      onEnded: () => setState({ kind: "signedOut", reason: "ended" }),
    });
    const api = new Api(session);
    return { session, api, people: new People(api) };
  }, []);

  const loadMe = async () => {
    try {
      const me = await api.get<Me>("/api/auth/me");
      session.begin(me.expires_in);
      setState({ kind: "signedIn", me });
    } catch (e) {
      if (!(e instanceof SessionEndedError)) setState({ kind: "failed", error: e });
    }
  };

  useEffect(() => {
    const query = new URLSearchParams(location.search);
    const authError = query.get("auth_error");
    if (authError !== null) {
      // The login callback failed; keep the address clean for a retry.
      query.delete("auth_error");
      const rest = query.toString();
      history.replaceState(null, "", location.pathname + (rest ? `?${rest}` : ""));
    }
    if (!session.mayExist()) {
      // No CSRF cookie: nobody is signed in here, so the profile is not
      // even asked for (it would answer 401).
      setState({ kind: "signedOut", reason: authError !== null ? "callback_failed" : undefined });
      return;
    }
    const back = takeReturnPath();
    if (back && location.pathname === "/") navigate(back, { replace: true });
    void loadMe();
  }, []);

  const app: App | null = useMemo(() => {
    if (state.kind !== "signedIn") return null;
    return {
      api,
      me: state.me,
      people,
      reloadMe: async () => {
        const me = await api.get<Me>("/api/auth/me");
        session.note(me.expires_in);
        setState({ kind: "signedIn", me });
      },
    };
  }, [state, api, people, session]);

  switch (state.kind) {
    case "loading":
      return (
        <main id="main" class="boot">
          <Loading what="Loading your profile" />
        </main>
      );
    case "signedOut":
      return <SignedOut reason={state.reason} />;
    case "failed":
      return (
        <main id="main" class="boot">
          <h1>govkit documents</h1>
          <ErrorNote error={state.error} action="load your profile" />
          <button
            type="button"
            class="btn btn-primary"
            onClick={() => {
              setState({ kind: "loading" });
              void loadMe();
            }}
          >
            Try again
          </button>
        </main>
      );
    case "signedIn":
      return (
        <AppContext.Provider value={app}>
          <SignedInApp />
        </AppContext.Provider>
      );
  }
}

const root = document.getElementById("app");
if (root) {
  root.textContent = "";
  render(<Root />, root);
}
