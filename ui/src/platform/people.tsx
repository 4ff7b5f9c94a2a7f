import { useEffect, useState } from "preact/hooks";
import { displayName, useApp } from "./context";

/** A user id (or "apikey:<id>") as a name: the one the record came with
 * (known), else learnt from the members of the group the record belongs
 * to; the id itself while unknown. */
export function PersonName({ userId, groupId, known }: { userId: string; groupId?: string; known?: string }) {
  const { me, people } = useApp();
  const [name, setName] = useState(() => known || people.known(userId));
  useEffect(() => {
    // Only live groups of the person's are asked for: another group's list
    // would be refused, a deleted group's is gone.
    if (!userId || userId === me.sub || userId.startsWith("apikey:") || name || !groupId || !me.groups.some((g) => g.id === groupId)) return;
    let live = true;
    people.name(groupId, userId).then(
      (n) => live && setName(n),
      () => undefined, // the id stays; the page shows its own errors
    );
    return () => {
      live = false;
    };
  }, [userId, groupId]);
  if (!userId) return <span class="muted">—</span>;
  if (userId === me.sub) return <span>You ({displayName(me) || me.sub})</span>;
  if (userId.startsWith("apikey:")) return <span>The group's API key</span>;
  return name ? <span>{name}</span> : <span class="mono" title={userId}>{shortId(userId)}</span>;
}

export function shortId(id: string): string {
  return id.length > 13 ? `${id.slice(0, 8)}…` : id;
}
