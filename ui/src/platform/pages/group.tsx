import { useState } from "preact/hooks";
import { Badge, Button, ConfirmButton, CopyOnce, DataTable, ErrorNote, Loading, PageTitle, Properties, Section, SelectField, Status, TextAreaField, TextField } from "../../shared/components";
import { formatTime } from "../../shared/format";
import { useAction, useLoad } from "../../shared/hooks";
import { Link } from "../../shared/router";
import { canAdminGroup, displayName, useApp } from "../context";
import { PersonName } from "../people";
import type { ApiKeyInfo, Group, Member, MembershipRequest, Role } from "../types";
import { requestTone } from "./groups";

/** A group's settings: details, members and roles, membership requests and
 * the API key. Members see the details and the member list; the rest is
 * for the group's admins (and system admins), and is not even asked for
 * otherwise. */
export function GroupPage({ id }: { id: string }) {
  const { api, me } = useApp();
  const group = useLoad(() => api.get<Group>(`/api/groups/${encodeURIComponent(id)}`), [id]);
  const admin = canAdminGroup(me, id);
  const g = group.data;
  return (
    <>
      <p class="crumbs">
        <Link href="/groups">Groups</Link> /
      </p>
      <PageTitle title={g ? g.name : "Group"} lead={g ? g.description || undefined : undefined}>
        {g ? <Badge tone={admin ? "info" : "neutral"}>{admin ? "You administer this group" : "You are a member"}</Badge> : null}
      </PageTitle>
      <ErrorNote error={group.error} action="load the group" />
      {group.loading && !g ? <Loading what="Loading the group" /> : null}
      {g ? (
        <>
          {admin ? <Details group={g} onSaved={group.set} /> : <ReadOnlyDetails group={g} />}
          <Members groupId={g.id} admin={admin} />
          {admin ? <Requests groupId={g.id} /> : null}
          {admin ? <APIKey groupId={g.id} /> : null}
        </>
      ) : null}
    </>
  );
}

function ReadOnlyDetails({ group }: { group: Group }) {
  return (
    <Section title="Details">
      <Properties
        items={[
          ["Name", group.name],
          ["Description", group.description],
          ["Group ID", <code class="mono">{group.id}</code>],
          ["Created", formatTime(group.createdAt)],
        ]}
      />
    </Section>
  );
}

function Details({ group, onSaved }: { group: Group; onSaved: (g: Group) => void }) {
  const { api, reloadMe } = useApp();
  const [name, setName] = useState(group.name);
  const [description, setDescription] = useState(group.description);
  const [saved, setSaved] = useState("");
  const save = useAction();
  return (
    <Section title="Details">
      <form
        class="form"
        onSubmit={(e) => {
          e.preventDefault();
          setSaved("");
          void save.run(async () => {
            const g = await api.put<Group>(`/api/groups/${group.id}`, { name: name.trim(), description });
            onSaved(g);
            setSaved("Saved.");
            await reloadMe(); // the name shows in menus and lists
          });
        }}
      >
        <div class="form-row">
          <TextField label="Name" value={name} onValue={setName} required maxLength={100} />
          <TextField label="Group ID" value={group.id} onValue={() => undefined} readOnly class="mono-input" hint="Give it to people who should ask to join." />
        </div>
        <TextAreaField label="Description" value={description} onValue={setDescription} maxLength={1000} rows={3} />
        <ErrorNote error={save.error} action="save the group" />
        <Status>{saved}</Status>
        <div class="actions">
          <Button type="submit" variant="primary" busy={save.busy}>
            Save details
          </Button>
        </div>
      </form>
    </Section>
  );
}

const roleOptions = [
  { value: "MEMBER", label: "Member" },
  { value: "ADMIN", label: "Admin" },
];

function Members({ groupId, admin }: { groupId: string; admin: boolean }) {
  const { api, me, people, reloadMe } = useApp();
  const members = useLoad(() => {
    people.forget(groupId);
    return people.members(groupId);
  }, [groupId]);
  const change = useAction();
  const [done, setDone] = useState("");
  const [newUser, setNewUser] = useState("");
  const [newRole, setNewRole] = useState<Role>("MEMBER");

  const act = (fn: () => Promise<unknown>, message: string, touchesMe: boolean) => {
    setDone("");
    void change.run(async () => {
      await fn();
      setDone(message);
      members.reload();
      if (touchesMe) await reloadMe();
    });
  };
  const admins = (members.data ?? []).filter((m) => m.role === "ADMIN").length;

  return (
    <Section title="Members">
      <ErrorNote error={members.error} action="load the members" />
      <ErrorNote error={change.error} action="change the membership" />
      <Status>{done}</Status>
      {members.loading && !members.data ? <Loading what="Loading members" /> : null}
      {members.data ? (
        <DataTable
          caption="Members"
          captionHidden
          rows={members.data}
          rowKey={(m) => m.userId}
          empty="This group has no members."
          columns={[
            {
              label: "Person",
              cell: (m) => (
                <>
                  <span class="cell-main">{displayName(m) || m.userId}</span>
                  <span class="cell-sub">{[m.preferred_username, m.email].filter(Boolean).join(" · ")}</span>
                </>
              ),
            },
            {
              label: "Role",
              cell: (m) =>
                admin ? (
                  <RoleSelect
                    member={m}
                    // The last admin cannot be demoted: the server refuses (409), the UI does not offer it.
                    locked={m.role === "ADMIN" && admins <= 1}
                    onChange={(role) => act(() => api.put(`/api/groups/${groupId}/members/${encodeURIComponent(m.userId)}`, { role }), `${displayName(m) || m.userId} is now ${role === "ADMIN" ? "an admin" : "a member"}.`, m.userId === me.sub)}
                  />
                ) : (
                  <Badge tone={m.role === "ADMIN" ? "info" : "neutral"}>{m.role === "ADMIN" ? "Admin" : "Member"}</Badge>
                ),
            },
            { label: "Since", class: "nowrap", cell: (m) => formatTime(m.since) },
            ...(admin
              ? [
                  {
                    label: "Actions",
                    class: "actions-cell",
                    cell: (m: Member) =>
                      m.role === "ADMIN" && admins <= 1 ? (
                        <span class="muted">Last admin</span>
                      ) : (
                        <ConfirmButton
                          label="Remove"
                          question={`Remove ${displayName(m) || m.userId}?`}
                          onConfirm={() => act(() => api.delete(`/api/groups/${groupId}/members/${encodeURIComponent(m.userId)}`), `${displayName(m) || m.userId} was removed.`, m.userId === me.sub)}
                        />
                      ),
                  },
                ]
              : []),
          ]}
        />
      ) : null}
      {admin ? (
        <form
          class="form-row add-member"
          aria-label="Add a member"
          onSubmit={(e) => {
            e.preventDefault();
            const uid = newUser.trim();
            if (!uid) return;
            act(() => api.put(`/api/groups/${groupId}/members/${encodeURIComponent(uid)}`, { role: newRole }), "Member added.", uid === me.sub);
            setNewUser("");
          }}
        >
          <TextField label="Add a person by user ID" value={newUser} onValue={setNewUser} hint="People find their user ID on their profile page. They must have signed in once." spellcheck={false} autoComplete="off" class="mono-input" />
          <SelectField label="As" value={newRole} options={roleOptions} onValue={(v) => setNewRole(v as Role)} />
          <div class="field-button">
            <Button type="submit" busy={change.busy}>
              Add member
            </Button>
          </div>
        </form>
      ) : null}
    </Section>
  );
}

function RoleSelect({ member, locked, onChange }: { member: Member; locked: boolean; onChange: (r: Role) => void }) {
  const label = `Role of ${displayName(member) || member.userId}`;
  if (locked) {
    return (
      <span>
        <Badge tone="info">Admin</Badge> <span class="cell-sub">the group's last admin</span>
      </span>
    );
  }
  return (
    <select aria-label={label} value={member.role} class="inline-select" onChange={(e) => onChange(e.currentTarget.value as Role)}>
      {roleOptions.map((o) => (
        <option key={o.value} value={o.value}>
          {o.label}
        </option>
      ))}
    </select>
  );
}

function Requests({ groupId }: { groupId: string }) {
  const { api, people } = useApp();
  const requests = useLoad(() => api.get<{ requests: MembershipRequest[] }>(`/api/groups/${groupId}/requests`, { status: "PENDING" }), [groupId]);
  const decide = useAction();
  const [done, setDone] = useState("");
  const act = (r: MembershipRequest, how: "approve" | "reject") => {
    setDone("");
    void decide.run(async () => {
      await api.post(`/api/groups/${groupId}/requests/${r.id}/${how}`);
      setDone(how === "approve" ? "Request approved: the person is now a member." : "Request rejected.");
      requests.reload();
      if (how === "approve") people.forget(groupId);
    });
  };
  return (
    <Section title="Membership requests">
      <ErrorNote error={requests.error} action="load the membership requests" />
      <ErrorNote error={decide.error} action="decide on the request" />
      <Status>{done}</Status>
      {requests.loading && !requests.data ? <Loading what="Loading requests" /> : null}
      {requests.data ? (
        <DataTable
          caption="Pending membership requests"
          captionHidden
          rows={requests.data.requests}
          rowKey={(r) => r.id}
          empty="No one is waiting to join."
          columns={[
            { label: "Person", cell: (r) => <PersonName userId={r.userId} /> },
            { label: "Message", cell: (r) => r.message || <span class="muted">—</span> },
            { label: "Asked", class: "nowrap", cell: (r) => formatTime(r.createdAt) },
            { label: "Status", cell: (r) => <Badge tone={requestTone[r.status]}>{r.status.toLowerCase()}</Badge> },
            {
              label: "Decision",
              class: "actions-cell",
              cell: (r) => (
                <span class="actions">
                  <Button class="btn-small" variant="primary" onClick={() => act(r, "approve")}>
                    Approve
                  </Button>
                  <Button class="btn-small" variant="danger" onClick={() => act(r, "reject")}>
                    Reject
                  </Button>
                </span>
              ),
            },
          ]}
        />
      ) : null}
    </Section>
  );
}

/** The group's API key: its prefix and use, generate / regenerate /
 * delete. A new key is shown once, here, and never again. */
function APIKey({ groupId }: { groupId: string }) {
  const { api } = useApp();
  const key = useLoad(() => api.get<{ apiKey: ApiKeyInfo | null }>("/api/api-key", { groupId }), [groupId]);
  const act = useAction();
  const [fresh, setFresh] = useState("");
  const [done, setDone] = useState("");
  const k = key.data?.apiKey;

  const generate = (how: "create" | "regenerate") =>
    void act.run(async () => {
      setFresh("");
      setDone("");
      const r = await api.post<{ apiKey: ApiKeyInfo; key: string }>(how === "create" ? "/api/api-key" : "/api/api-key/regenerate", { groupId });
      key.set({ apiKey: r.apiKey });
      setFresh(r.key);
      setDone(how === "create" ? "API key generated." : "API key regenerated: the old key no longer works.");
    });

  return (
    <Section title="API key">
      <p class="muted">Machines (an OCR engine, an import job) use the group's key in the X-API-Key header. A group has at most one key; it acts as a member of the group.</p>
      <ErrorNote error={key.error} action="load the API key" />
      <ErrorNote error={act.error} action="change the API key" />
      <Status>{done}</Status>
      {fresh ? <CopyOnce label="New API key" value={fresh} warning="Copy it now and keep it somewhere safe: it is shown only this once. Anyone holding it can act as a member of this group." /> : null}
      {key.loading && !key.data ? <Loading what="Loading the API key" /> : null}
      {key.data ? (
        k ? (
          <>
            <Properties
              items={[
                ["Key", <code class="mono">{k.keyPrefix}…</code>],
                ["Created", formatTime(k.createdAt)],
                ["Created by", <PersonName userId={k.createdBy} groupId={groupId} />],
                ["Last used", k.lastUsed ? formatTime(k.lastUsed) : "Never"],
              ]}
            />
            <div class="actions key-actions">
              <ConfirmButton label="Regenerate" variant="primary" question="Replace the key? The current one stops working at once." yes="Yes, regenerate" busy={act.busy} onConfirm={() => generate("regenerate")} />
              <ConfirmButton
                label="Delete key"
                question="Delete the key? Machines using it lose access at once."
                yes="Yes, delete"
                busy={act.busy}
                onConfirm={() =>
                  void act.run(async () => {
                    setFresh("");
                    setDone("");
                    await api.delete("/api/api-key", { groupId });
                    key.set({ apiKey: null });
                    setDone("API key deleted.");
                  })
                }
              />
            </div>
          </>
        ) : (
          <>
            <p class="empty">This group has no API key.</p>
            <div class="actions key-actions">
              <Button variant="primary" busy={act.busy} onClick={() => generate("create")}>
                Generate an API key
              </Button>
            </div>
          </>
        )
      ) : null}
    </Section>
  );
}
