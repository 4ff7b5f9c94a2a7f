import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { SessionEndedError } from "./api";

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
  set: (v: T) => void;
}

/** Runs load when deps change (and on reload) and keeps its latest
 * result; an answer that arrives after a newer request is dropped. A
 * session that ended shows no error: the page is leaving. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const seq = useRef(0);
  useEffect(() => {
    const n = ++seq.current;
    setLoading(true);
    setError(undefined);
    load().then(
      (v) => {
        if (n !== seq.current) return;
        setData(v);
        setLoading(false);
      },
      (e: unknown) => {
        if (n !== seq.current || e instanceof SessionEndedError) return;
        setError(e);
        setLoading(false);
      },
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  return {
    data,
    error,
    loading,
    reload: useCallback(() => setTick((t) => t + 1), []),
    set: useCallback((v: T) => setData(v), []),
  };
}

export interface Action {
  busy: boolean;
  error: unknown;
  /** Runs fn unless one is running; its error is kept for display. */
  run: (fn: () => Promise<unknown>) => Promise<boolean>;
  clear: () => void;
}

/** State of a button's action: busy while it runs, its error after. */
export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const running = useRef(false);
  const run = useCallback(async (fn: () => Promise<unknown>) => {
    if (running.current) return false;
    running.current = true;
    setBusy(true);
    setError(undefined);
    try {
      await fn();
      return true;
    } catch (e) {
      if (!(e instanceof SessionEndedError)) setError(e);
      return false;
    } finally {
      running.current = false;
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: useCallback(() => setError(undefined), []) };
}

/** The signed-in frame's folding menu, and what an in-app navigation to
 * path does (as a page load would): the menu folds, the view goes to the
 * top and focus to the new page's heading. The first render keeps focus
 * where the browser put it. */
export function useNavigationFrame(path: string): [boolean, (open: boolean) => void] {
  const [menuOpen, setMenuOpen] = useState(false);
  const first = useRef(true);
  useEffect(() => {
    setMenuOpen(false);
    if (first.current) {
      first.current = false;
      return;
    }
    window.scrollTo(0, 0);
    document.getElementById("page-title")?.focus();
  }, [path]);
  // Escape closes the open phone menu and gives the focus back to its
  // button, as a disclosure is expected to behave. The listener is there
  // from the first render (an effect run when the menu opens could come
  // after the key), and reads whether the menu is open from a ref.
  const open = useRef(menuOpen);
  open.current = menuOpen;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape" || !open.current) return;
      setMenuOpen(false);
      document.querySelector<HTMLElement>(".menu-toggle")?.focus();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);
  return [menuOpen, setMenuOpen];
}
