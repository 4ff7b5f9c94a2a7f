// Administrators: the list, signing up a new one (super administrators
// only, as the API rules), setting a password, and access tokens, whose
// value is shown once, when it is made. An administrator signed in with a
// token sees only their own record, as the API decides.

import { useEffect, useRef, useState } from "preact/hooks";
import { Button, ConfirmButton, CopyOnce, DataTable, ErrorNote, PageTitle, Section, Status, TextField } from "../../shared/components";
import { useAction, useLoad } from "../../shared/hooks";
import { useConsole } from "../context";
import { ListStatus, Paging, usePage, type ListState } from "../records";
import { when } from "../ui";

interface Administrator {
  id: string;
  username?: string;
  email: string;
  created?: string;
  updated?: string;
}

interface AccessToken {
  id: string;
  name?: string;
  ttl?: number;
  created?: string;
}

export function Administrators() {
  const { client, who } = useConsole();
  const [s, setS] = useState<ListState>({ where: {}, order: "email ASC", skip: 0, limit: 25 });
  const [tick, setTick] = useState(0);
  const [adding, setAdding] = useState(false);
  const [selected, setSelected] = useState<Administrator | null>(null);
  const [done, setDone] = useState("");
  const del = useAction();
  const page = usePage<Administrator>(client, "/administrators", s, tick);
  return (
    <>
      <PageTitle title="Administrators" lead="Who may sign in to the console and the API with a password or an access token.">
        {who.role === "SuperAdmin" ? (
          <Button variant="primary" onClick={() => setAdding(true)} disabled={adding}>
            New administrator
          </Button>
        ) : null}
      </PageTitle>
      {adding ? (
        <NewAdministrator
          onDone={(a) => {
            setAdding(false);
            setDone(`Administrator ${a.email} created.`);
            setTick((t) => t + 1);
          }}
          onCancel={() => setAdding(false)}
        />
      ) : null}
      <ListStatus loading={page.loading} error={page.error ?? del.error} done={done} what="administrators" />
      {page.data ? (
        <section class="card" aria-labelledby="admin-list">
          <h2 id="admin-list" class="visually-hidden">
            Administrator list
          </h2>
          <DataTable
            caption="Administrators"
            captionHidden
            rows={page.data.rows}
            rowKey={(r) => r.id}
            empty="No administrators yet."
            columns={[
              { label: "Email", cell: (r) => <span class="cell-main">{r.email}</span> },
              { label: "User name", cell: (r) => r.username ?? "" },
              { label: "Created", cell: (r) => when(r.created) },
              {
                label: "Actions",
                cell: (r) => (
                  <span class="actions">
                    <Button class="btn-small" onClick={() => setSelected(r)} aria-label={`Password and tokens of ${r.email}`}>
                      Password and tokens
                    </Button>
                    <ConfirmButton
                      label="Delete"
                      question={`Delete the administrator ${r.email}, with their password and tokens?`}
                      busy={del.busy}
                      onConfirm={() =>
                        void del.run(() => client.delete(`/administrators/${encodeURIComponent(r.id)}`)).then((ok) => {
                          if (!ok) return;
                          setDone(`Administrator ${r.email} deleted.`);
                          if (selected?.id === r.id) setSelected(null);
                          setTick((t) => t + 1);
                        })
                      }
                    />
                  </span>
                ),
              },
            ]}
          />
          <Paging s={s} total={page.data.total} onChange={setS} label="Administrator pages" />
        </section>
      ) : null}
      {selected ? <AdminDetail key={selected.id} admin={selected} onClose={() => setSelected(null)} /> : null}
    </>
  );
}

function NewAdministrator({ onDone, onCancel }: { onDone: (a: Administrator) => void; onCancel: () => void }) {
  const { client } = useConsole();
  const [email, setEmail] = useState("");
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const act = useAction();
  const head = useRef<HTMLHeadingElement>(null);
  useEffect(() => head.current?.focus(), []);
  return (
    <section class="card editor" aria-labelledby="new-admin">
      <div class="card-head">
        <h2 id="new-admin" ref={head} tabIndex={-1}>
          New administrator
        </h2>
      </div>
      <form
        class="form"
        onKeyDown={(e) => e.key === "Escape" && onCancel()}
        onSubmit={async (e) => {
          e.preventDefault();
          let a: Administrator | undefined;
          const body: Record<string, string> = { email, password };
          if (username) body.username = username;
          if (await act.run(async () => (a = await client.post<Administrator>("/administrators", body)))) onDone(a!);
        }}
      >
        <div class="form-row">
          <TextField label="Email" type="email" value={email} onValue={setEmail} required autoComplete="off" />
          <TextField label="User name (optional)" value={username} onValue={setUsername} autoComplete="off" />
          <div class="field">
            <label for="new-admin-password">Password</label>
            <input id="new-admin-password" type="password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} required autoComplete="new-password" aria-describedby="new-admin-password-hint" />
            <p class="hint" id="new-admin-password-hint">
              At least 10 characters with upper and lower case letters, a digit and a symbol (the API's rule).
            </p>
          </div>
        </div>
        <ErrorNote error={act.error} action="create the administrator" />
        <div class="actions">
          <Button type="submit" variant="primary" busy={act.busy}>
            Create administrator
          </Button>
          <Button variant="quiet" onClick={onCancel}>
            Cancel
          </Button>
        </div>
      </form>
    </section>
  );
}

function AdminDetail({ admin, onClose }: { admin: Administrator; onClose: () => void }) {
  const { client } = useConsole();
  const base = `/administrators/${encodeURIComponent(admin.id)}`;
  const [password, setPassword] = useState("");
  const [pwDone, setPwDone] = useState("");
  const pw = useAction();
  const [name, setName] = useState("");
  const [ttl, setTtl] = useState("");
  const [fresh, setFresh] = useState<AccessToken | null>(null);
  const make = useAction();
  const revoke = useAction();
  const tokens = useLoad(() => client.list<AccessToken>(`${base}/access-tokens`, { fields: { id: false } as Record<string, boolean>, order: [["created", "desc"]], limit: 100 }), [admin.id, fresh]);
  const head = useRef<HTMLHeadingElement>(null);
  useEffect(() => head.current?.focus(), []);
  return (
    <Section
      title={`Password and access tokens of ${admin.email}`}
      id="admin-detail"
      actions={
        <Button class="btn-small" variant="quiet" onClick={onClose}>
          Close
        </Button>
      }
    >
      <form
        class="form"
        aria-label="Set the password"
        onSubmit={async (e) => {
          e.preventDefault();
          setPwDone("");
          if (await pw.run(() => client.post(`${base}/user-credential`, { password }))) {
            setPassword("");
            setPwDone("Password set.");
          }
        }}
      >
        <h3 class="sub-head">Set the password</h3>
        <div class="form-row">
          <div class="field">
            <label for="set-password">New password</label>
            <input id="set-password" type="password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} required autoComplete="new-password" />
          </div>
          <div class="field-button">
            <Button type="submit" variant="primary" busy={pw.busy}>
              Set password
            </Button>
          </div>
        </div>
        <ErrorNote error={pw.error} action="set the password" />
        <Status>{pwDone}</Status>
      </form>
      <form
        class="form"
        aria-label="Create an access token"
        onSubmit={async (e) => {
          e.preventDefault();
          const body: Record<string, unknown> = {};
          if (name) body.name = name;
          if (ttl) body.ttl = Number(ttl);
          let t: AccessToken | undefined;
          if (await make.run(async () => (t = await client.post<AccessToken>(`${base}/access-tokens`, body)))) {
            setFresh(t!);
            setName("");
            setTtl("");
          }
        }}
      >
        <h3 class="sub-head">Access tokens</h3>
        <div class="form-row">
          <TextField label="Token name" value={name} onValue={setName} />
          <TextField label="Lifetime in seconds (empty: no expiry)" value={ttl} onValue={setTtl} />
          <div class="field-button">
            <Button type="submit" busy={make.busy}>
              Create access token
            </Button>
          </div>
        </div>
        <ErrorNote error={make.error} action="create the token" />
      </form>
      {fresh ? (
        <CopyOnce
          label={`New access token${fresh.name ? ` “${fresh.name}”` : ""}`}
          value={fresh.id}
          warning="Copy it now: the console will not show it again. Send it in the Authorization header."
        />
      ) : null}
      <ErrorNote error={tokens.error ?? revoke.error} action="list the tokens" />
      {tokens.data ? (
        <DataTable
          caption={`Access tokens of ${admin.email}`}
          rows={tokens.data.map((t, i) => ({ ...t, key: String(i) }))}
          rowKey={(t) => t.key}
          empty="No access tokens."
          columns={[
            { label: "Name", cell: (t) => t.name ?? <span class="muted">unnamed</span> },
            { label: "Lifetime", cell: (t) => (t.ttl ? `${t.ttl} s` : "no expiry") },
            { label: "Created", cell: (t) => when(t.created) },
          ]}
        />
      ) : null}
      {tokens.data && tokens.data.length ? (
        <ConfirmButton
          label="Revoke all tokens"
          question={`Revoke every access token of ${admin.email}?`}
          busy={revoke.busy}
          onConfirm={() => void revoke.run(() => client.delete(`${base}/access-tokens`)).then((ok) => ok && setFresh(null))}
        />
      ) : null}
    </Section>
  );
}
