import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Api } from "../shared/api";
import type { Me, MeGroup, Member } from "./types";

export interface App {
  api: Api;
  me: Me;
  /** Loads the profile again (after a change to the person's groups). */
  reloadMe: () => Promise<void>;
  /** Names of user ids, learnt from the member lists of groups. */
  people: People;
}

export const AppContext = createContext<App | null>(null);

export function useApp(): App {
  const app = useContext(AppContext);
  if (!app) throw new Error("useApp outside the signed-in app");
  return app;
}

/** What the person may do, from the profile (so the UI never makes a call
 * it knows they may not make). */
export function canAdminGroup(me: Me, groupId: string): boolean {
  return me.isSystemAdmin || me.roles[groupId] === "ADMIN";
}

export function adminGroups(me: Me): MeGroup[] {
  return me.groups.filter((g) => canAdminGroup(me, g.id));
}

export function seesAudit(me: Me): boolean {
  return me.isSystemAdmin || Object.values(me.roles).includes("ADMIN");
}

export function groupName(me: Me, id: string): string {
  return me.groups.find((g) => g.id === id)?.name ?? id;
}

export function displayName(p: { name?: string; preferred_username?: string; email?: string }): string {
  return p.name || p.preferred_username || p.email || "";
}

/** A cache of the members of groups, to put names on user ids (uploaders,
 * reviewers). Member lists are readable by every member of a group. */
export class People {
  private byGroup = new Map<string, Promise<Member[]>>();
  private names = new Map<string, string>();

  constructor(private readonly api: Api) {}

  members(groupId: string): Promise<Member[]> {
    let p = this.byGroup.get(groupId);
    if (!p) {
      p = this.api.get<{ members: Member[] }>(`/api/groups/${encodeURIComponent(groupId)}/members`).then((r) => {
        for (const m of r.members) this.names.set(m.userId, displayName(m) || m.userId);
        return r.members;
      });
      p.catch(() => this.byGroup.delete(groupId));
      this.byGroup.set(groupId, p);
    }
    return p;
  }

  /** Forget a group's list (after its members changed). */
  forget(groupId: string): void {
    this.byGroup.delete(groupId);
  }

  /** The name of a user id once known, else "". */
  known(userId: string): string {
    return this.names.get(userId) ?? "";
  }

  /** Resolves the name of userId among groupId's members ("" if absent). */
  async name(groupId: string, userId: string): Promise<string> {
    if (this.names.has(userId)) return this.names.get(userId)!;
    await this.members(groupId);
    return this.names.get(userId) ?? "";
  }
}
