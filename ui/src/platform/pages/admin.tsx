import { useState } from "preact/hooks";
import { Badge, Button, ConfirmButton, DataTable, ErrorNote, Loading, PageTitle, Section, Status, TextField } from "../../shared/components";
import { formatTime } from "../../shared/format";
import { useAction, useLoad } from "../../shared/hooks";
import { Link, navigate } from "../../shared/router";
import { displayName, useApp } from "../context";
import { NotFound } from "./notfound";
import type { Group, User } from "../types";

/** Every user: promote to or withdraw system admin, delete. Only system
 * admins reach it; for anyone else the page does not exist (and calls
 * nothing). */
export function AdminUsers() {
  const { me } = useApp();
  if (!me.isSystemAdmin) return <NotFound />;
  return <Users />;
}

function Users() {
  const { api, me } = useApp();
  const users = useLoad(() => api.get<{ users: User[] }>("/api/admin/users"), []);
  const act = useAction();
  const [done, setDone] = useState("");
  const [q, setQ] = useState("");
  const change = (u: User, how: "promote" | "demote" | "delete") => {
    setDone("");
    void act.run(async () => {
      const who = displayName(u) || u.id;
      if (how === "delete") {
        await api.delete(`/api/admin/users/${encodeURIComponent(u.id)}`);
        setDone(`${who} was deleted.`);
      } else {
        await api.post(`/api/admin/users/${encodeURIComponent(u.id)}/${how}`);
        setDone(how === "promote" ? `${who} is now a system admin.` : `${who} is no longer a system admin.`);
      }
      users.reload();
    });
  };
  const needle = q.trim().toLowerCase();
  const rows = (users.data?.users ?? []).filter((u) => !needle || [u.name, u.email, u.preferred_username, u.id].some((s) => s.toLowerCase().includes(needle)));
  return (
    <>
      <PageTitle title="Users" lead="Everyone who has signed in. System admins manage every group and user." />
      <Section title="All users">
        <div class="form-row">
          <TextField label="Find" type="search" value={q} onValue={setQ} hint="Name, username, email or ID." />
        </div>
        <ErrorNote error={users.error} action="load the users" />
        <ErrorNote error={act.error} action="change the user" />
        <Status>{done}</Status>
        {users.loading && !users.data ? <Loading what="Loading users" /> : null}
        {users.data ? (
          <DataTable
            caption="Users"
            captionHidden
            rows={rows}
            rowKey={(u) => u.id}
            empty={needle ? "No user matches." : "No users yet."}
            columns={[
              {
                label: "Person",
                cell: (u) => (
                  <>
                    <span class="cell-main">{displayName(u) || u.id}</span>
                    <span class="cell-sub">{[u.preferred_username, u.email].filter(Boolean).join(" · ")}</span>
                  </>
                ),
              },
              { label: "User ID", cell: (u) => <code class="mono">{u.id}</code> },
              { label: "Role", cell: (u) => (u.isSystemAdmin ? <Badge tone="info">System admin</Badge> : <Badge>User</Badge>) },
              { label: "First sign-in", class: "nowrap", cell: (u) => formatTime(u.createdAt) },
              {
                label: "Actions",
                class: "actions-cell",
                cell: (u) =>
                  u.id === me.sub ? (
                    <span class="muted">You</span>
                  ) : (
                    <span class="actions">
                      {u.isSystemAdmin ? (
                        <Button class="btn-small" onClick={() => change(u, "demote")} aria-label={`Withdraw admin: ${displayName(u) || u.id}`}>
                          Withdraw admin
                        </Button>
                      ) : (
                        <Button class="btn-small" onClick={() => change(u, "promote")} aria-label={`Make admin: ${displayName(u) || u.id}`}>
                          Make admin
                        </Button>
                      )}
                      <ConfirmButton label="Delete" question={`Delete ${displayName(u) || u.id}?`} onConfirm={() => change(u, "delete")} />
                    </span>
                  ),
              },
            ]}
          />
        ) : null}
      </Section>
    </>
  );
}

/** Every group, live and deleted: create, open, soft-delete. */
export function AdminGroups() {
  const { me } = useApp();
  if (!me.isSystemAdmin) return <NotFound />;
  return <AllGroups />;
}

function AllGroups() {
  const { api, reloadMe } = useApp();
  const groups = useLoad(() => api.get<{ groups: Group[] }>("/api/admin/groups"), []);
  const act = useAction();
  const [done, setDone] = useState("");
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const create = useAction();
  return (
    <>
      <PageTitle title="All groups" lead="Every group on the platform. A deleted group keeps its records but grants nothing." />
      <Section title="New group">
        <form
          class="form-row"
          onSubmit={(e) => {
            e.preventDefault();
            void create.run(async () => {
              const g = await api.post<Group>("/api/groups", { name: name.trim(), description: description.trim() });
              await reloadMe();
              navigate(`/groups/${g.id}`);
            });
          }}
        >
          <TextField label="Name" value={name} onValue={setName} required maxLength={100} />
          <TextField label="Description" value={description} onValue={setDescription} maxLength={1000} />
          <div class="field-button">
            <Button type="submit" variant="primary" busy={create.busy}>
              Create group
            </Button>
          </div>
        </form>
        <ErrorNote error={create.error} action="create the group" />
      </Section>
      <Section title="Groups">
        <ErrorNote error={groups.error} action="load the groups" />
        <ErrorNote error={act.error} action="delete the group" />
        <Status>{done}</Status>
        {groups.loading && !groups.data ? <Loading what="Loading groups" /> : null}
        {groups.data ? (
          <DataTable
            caption="All groups"
            captionHidden
            rows={groups.data.groups}
            rowKey={(g) => g.id}
            empty="No groups yet."
            columns={[
              {
                label: "Group",
                cell: (g) =>
                  g.deletedAt ? (
                    <span class="cell-main muted">{g.name}</span>
                  ) : (
                    <>
                      <Link class="cell-main" href={`/groups/${g.id}`}>
                        {g.name}
                      </Link>
                      {g.description ? <span class="cell-sub">{g.description}</span> : null}
                    </>
                  ),
              },
              { label: "Group ID", cell: (g) => <code class="mono">{g.id}</code> },
              { label: "Created", class: "nowrap", cell: (g) => formatTime(g.createdAt) },
              { label: "State", cell: (g) => (g.deletedAt ? <Badge tone="bad">Deleted {formatTime(g.deletedAt)}</Badge> : <Badge tone="good">Live</Badge>) },
              {
                label: "Actions",
                class: "actions-cell",
                cell: (g) =>
                  g.deletedAt ? null : (
                    <ConfirmButton
                      label="Delete"
                      question={`Delete ${g.name}?`}
                      onConfirm={() =>
                        void act.run(async () => {
                          setDone("");
                          await api.delete(`/api/groups/${g.id}`);
                          setDone(`${g.name} was deleted.`);
                          groups.reload();
                          await reloadMe();
                        })
                      }
                    />
                  ),
              },
            ]}
          />
        ) : null}
      </Section>
    </>
  );
}
