// What every page of the console needs: the API client and who is signed in.

import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Method } from "./auth";
import type { Client } from "./client";

export type Role = "SuperAdmin" | "Admin" | "AuthenticatedUser" | "Anonymous";

/** The API's answer to GET /administrators/whoami. */
export interface Who {
  role: Role;
  securityId?: string;
  authnStrategy?: string;
}

export interface Console {
  client: Client;
  who: Who;
  method: Method;
  signOut: () => void | Promise<void>;
  /** Leaves the admin address's super administrator for the sign-in page. */
  switchUser: () => void;
}

export const ConsoleContext = createContext<Console | null>(null);

export function useConsole(): Console {
  const c = useContext(ConsoleContext);
  if (!c) throw new Error("useConsole outside the console");
  return c;
}

export function isAdmin(who: Who): boolean {
  return who.role === "SuperAdmin" || who.role === "Admin";
}

export const roleText: Record<Role, string> = {
  SuperAdmin: "Super administrator",
  Admin: "Administrator",
  AuthenticatedUser: "Signed-in user",
  Anonymous: "Anonymous",
};
