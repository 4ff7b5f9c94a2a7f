// The signed-in console: the frame (top bar with the role and Sign out,
// side navigation, main region) and the routes. Administrators see every
// page; a signed-in user who is not one sees their own subscriptions and
// notifications, which is all the API lets them have.

import type { ComponentChildren } from "preact";
import { PageTitle } from "../shared/components";
import { useNavigationFrame } from "../shared/hooks";
import { Link, match, useLocation } from "../shared/router";
import { isAdmin, roleText, useConsole } from "./context";
import { Administrators } from "./pages/administrators";
import { Bounces } from "./pages/bounces";
import { Configurations } from "./pages/configurations";
import { Dashboard } from "./pages/dashboard";
import { Notifications } from "./pages/notifications";
import { Subscriptions } from "./pages/subscriptions";
import { settings } from "./settings";

interface NavItem {
  href: string;
  label: string;
  admin: boolean;
}

const nav: NavItem[] = [
  { href: "/dashboard", label: "Dashboard", admin: true },
  { href: "/subscriptions", label: "Subscriptions", admin: false },
  { href: "/notifications", label: "Notifications", admin: false },
  { href: "/configurations", label: "Configurations", admin: true },
  { href: "/bounces", label: "Bounces", admin: true },
  { href: "/administrators", label: "Administrators", admin: true },
];

type Page = (params: Record<string, string>) => ComponentChildren;

const routes: [string, Page, boolean][] = [
  ["/dashboard", () => <Dashboard />, true],
  ["/subscriptions", () => <Subscriptions />, false],
  ["/notifications", () => <Notifications />, false],
  ["/configurations", () => <Configurations />, true],
  ["/bounces", () => <Bounces />, true],
  ["/administrators", () => <Administrators />, true],
];

function NotFound({ forbidden }: { forbidden?: boolean }) {
  return (
    <>
      <PageTitle title={forbidden ? "Not for your role" : "Page not found"} />
      <p>{forbidden ? "This page is for administrators. Your role cannot use it." : "There is no console page at this address."}</p>
      <p>
        <Link href="/">Go to the console's start page</Link>
      </p>
    </>
  );
}

export function ConsoleApp() {
  const { who, method, signOut, switchUser } = useConsole();
  const admin = isAdmin(who);
  const { path } = useLocation();
  const [menuOpen, setMenuOpen] = useNavigationFrame(path);

  const home = admin ? "/dashboard" : "/subscriptions";
  let page: ComponentChildren = null;
  const p = path === "/" || path === "/index.html" ? home : path;
  for (const [pattern, render, adminOnly] of routes) {
    const params = match(pattern, p);
    if (params) {
      page = adminOnly && !admin ? <NotFound forbidden /> : render(params);
      break;
    }
  }
  if (page === null) page = <NotFound />;

  const items = nav.filter((i) => admin || !i.admin);
  const how = { adminIp: "from an admin address", login: "with email and password", token: "with an access token", oidc: "with OIDC" }[method];

  return (
    <>
      <a class="skip-link" href="#main">
        Skip to main content
      </a>
      <header class="topbar">
        <button type="button" class="btn btn-secondary btn-small menu-toggle" aria-expanded={menuOpen ? "true" : "false"} aria-controls="sidenav" onClick={() => setMenuOpen(!menuOpen)}>
          Menu
        </button>
        <Link class="brand" href={home} aria-label="govkit notify console: start page">
          <img src="/favicon.svg" alt="" width={28} height={28} />
          <span class="brand-text">
            govkit <small>notify</small>
          </span>
        </Link>
        <span class="topbar-spacer" />
        <div class="who">
          <span class="who-name" id="signed-in-as">
            <span id="role">{roleText[who.role]}</span>
            <small>
              {who.securityId ? `${who.securityId} · ` : ""}signed in {how}
            </small>
          </span>
          {method !== "adminIp" ? (
            <button type="button" class="btn btn-secondary btn-small" onClick={signOut}>
              Sign out
            </button>
          ) : (
            <button type="button" class="btn btn-secondary btn-small" onClick={switchUser}>
              Sign in as someone else
            </button>
          )}
        </div>
      </header>
      <div class="frame">
        <nav id="sidenav" class={`sidenav ${menuOpen ? "open" : ""}`} aria-label="Main">
          <ul>
            {items.map((i) => (
              <li key={i.href}>
                <Link href={i.href} aria-current={p === i.href ? "page" : undefined}>
                  {i.label}
                </Link>
              </li>
            ))}
          </ul>
          <p class="nav-label">API</p>
          <ul>
            <li>
              <a href={`${settings.api}/explorer`}>API explorer</a>
            </li>
          </ul>
        </nav>
        <main id="main" tabIndex={-1} key={p}>
          {page}
        </main>
      </div>
    </>
  );
}
