// The signed-in app: the page frame (top bar with the person and Sign out,
// side navigation, main region) and the routes.

import type { ComponentChildren } from "preact";
import { useNavigationFrame } from "../shared/hooks";
import { Link, match, useLocation } from "../shared/router";
import { displayName, seesAudit, useApp } from "./context";
import { AdminGroups, AdminUsers } from "./pages/admin";
import { Audit } from "./pages/audit";
import { DocumentPage } from "./pages/document";
import { Documents } from "./pages/documents";
import { GroupPage } from "./pages/group";
import { Groups } from "./pages/groups";
import { NotFound } from "./pages/notfound";
import { Profile } from "./pages/profile";
import { ReviewQueue, ReviewSessionPage } from "./pages/review";
import { WorkflowPage, Workflows } from "./pages/workflows";

const icons: Record<string, string> = {
  documents: "M7 3h7l5 5v13H7z M14 3v5h5 M10 13h6 M10 17h6",
  review: "M4 4h16v16H4z M8 12.5l2.5 2.5L16 9.5",
  workflows: "M4 5h6v5H4z M14 14h6v5h-6z M7 10v3a2 2 0 0 0 2 2h5",
  groups: "M9 11a3 3 0 1 0 0-6 3 3 0 0 0 0 6z M3 20a6 6 0 0 1 12 0 M16 5a3 3 0 0 1 0 6 M21 20a6 6 0 0 0-4-5.7",
  audit: "M12 7v5l3 2 M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18z",
  users: "M12 12a4 4 0 1 0 0-8 4 4 0 0 0 0 8z M4 21a8 8 0 0 1 16 0",
  shield: "M12 3l8 3v6c0 5-3.5 8-8 9-4.5-1-8-4-8-9V6z",
  profile: "M4 5h16v14H4z M8 10h.01 M12 10h4 M8 14h8",
};

function Icon({ name }: { name: string }) {
  return (
    <svg class="nav-icon" viewBox="0 0 24 24" aria-hidden="true" focusable="false">
      <path d={icons[name]} />
    </svg>
  );
}

interface NavItem {
  href: string;
  label: string;
  icon: string;
  /** Other paths under which this item is the current one. */
  also?: string[];
}

function NavLink({ item, path }: { item: NavItem; path: string }) {
  const current = path === item.href || (item.also ?? []).some((p) => path === p || path.startsWith(p + "/")) || path.startsWith(item.href + "/");
  return (
    <li>
      <Link href={item.href} aria-current={current ? "page" : undefined}>
        <Icon name={item.icon} />
        {item.label}
      </Link>
    </li>
  );
}

type Page = (params: Record<string, string>) => ComponentChildren;

const routes: [string, Page][] = [
  ["/", () => <Documents />],
  ["/documents", () => <Documents />],
  ["/documents/:id", (p) => <DocumentPage id={p.id} />],
  ["/review", () => <ReviewQueue />],
  ["/reviews/:id", (p) => <ReviewSessionPage id={p.id} />],
  ["/workflows", () => <Workflows />],
  ["/workflows/:id", (p) => <WorkflowPage id={p.id} />],
  ["/groups", () => <Groups />],
  ["/groups/:id", (p) => <GroupPage id={p.id} />],
  ["/audit", () => <Audit />],
  ["/admin/users", () => <AdminUsers />],
  ["/admin/groups", () => <AdminGroups />],
  ["/profile", () => <Profile />],
];

function route(path: string): ComponentChildren {
  for (const [pattern, page] of routes) {
    const params = match(pattern, path);
    if (params) return page(params);
  }
  return <NotFound />;
}

export function SignedInApp() {
  const { me } = useApp();
  const { path } = useLocation();
  const [menuOpen, setMenuOpen] = useNavigationFrame(path);

  const work: NavItem[] = [
    { href: "/documents", label: "Documents", icon: "documents", also: ["/"] },
    { href: "/review", label: "Review queue", icon: "review", also: ["/reviews"] },
    { href: "/workflows", label: "Workflows", icon: "workflows" },
    { href: "/groups", label: "Groups", icon: "groups" },
  ];
  if (seesAudit(me)) work.push({ href: "/audit", label: "Audit log", icon: "audit" });
  const admin: NavItem[] = me.isSystemAdmin
    ? [
        { href: "/admin/users", label: "Users", icon: "users" },
        { href: "/admin/groups", label: "All groups", icon: "shield" },
      ]
    : [];
  const name = displayName(me) || me.sub;
  const second = me.email && me.email !== name ? me.email : me.preferred_username !== name ? me.preferred_username : "";

  return (
    <>
      <a class="skip-link" href="#main">
        Skip to main content
      </a>
      <header class="topbar">
        <button
          type="button"
          class="btn btn-secondary btn-small menu-toggle"
          aria-expanded={menuOpen ? "true" : "false"}
          aria-controls="sidenav"
          onClick={() => setMenuOpen(!menuOpen)}
        >
          Menu
        </button>
        <Link class="brand" href="/documents" aria-label="govkit documents: your documents">
          <img src="/favicon.svg" alt="" width={28} height={28} />
          <span class="brand-text">
            govkit <small>documents</small>
          </span>
        </Link>
        <span class="topbar-spacer" />
        <div class="who">
          {/* No aria-label: the link is named by what it shows (WCAG
              2.5.3), and says where it goes after that. */}
          <Link class="who-name" href="/profile" id="signed-in-as">
            {name}
            {second ? <small>{second}</small> : null}
            <span class="visually-hidden"> (your profile)</span>
          </Link>
          {/* A plain link: the whole page goes to the logout endpoint,
              which clears the cookies and ends the provider session. */}
          <a class="btn btn-secondary btn-small" href="/api/auth/logout">
            Sign out
          </a>
        </div>
      </header>
      <div class="frame">
        <nav id="sidenav" class={`sidenav ${menuOpen ? "open" : ""}`} aria-label="Main">
          <ul>
            {work.map((i) => (
              <NavLink key={i.href} item={i} path={path} />
            ))}
          </ul>
          {admin.length > 0 ? (
            <>
              <p class="nav-label" id="nav-admin">
                System administration
              </p>
              <ul aria-labelledby="nav-admin">
                {admin.map((i) => (
                  <NavLink key={i.href} item={i} path={path} />
                ))}
              </ul>
            </>
          ) : null}
          <p class="nav-label" id="nav-you">
            You
          </p>
          <ul aria-labelledby="nav-you">
            <NavLink item={{ href: "/profile", label: "Profile", icon: "profile" }} path={path} />
          </ul>
        </nav>
        <main id="main" tabIndex={-1} key={path}>
          {route(path)}
        </main>
      </div>
    </>
  );
}
