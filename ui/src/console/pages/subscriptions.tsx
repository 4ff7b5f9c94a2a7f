// Subscriptions: a filtered, sorted, paged list (the API's filter), and
// create, edit (the record's JSON) and delete. Non-administrators see and
// change only their own, as the API decides.

import { useState } from "preact/hooks";
import { Badge, Button, ConfirmButton, DataTable, PageTitle, SelectField, TextAreaField, TextField } from "../../shared/components";
import { useAction } from "../../shared/hooks";
import { isAdmin, useConsole } from "../context";
import { buildWhere, ListStatus, Paging, RecordEditor, usePage, type ListState } from "../records";
import { editable, when } from "../ui";
import { stateTone } from "./dashboard";

export interface Subscription {
  id: string;
  serviceName: string;
  channel: string;
  userChannelId: string;
  state: string;
  created?: string;
  updated?: string;
  [k: string]: unknown;
}

const orders = [
  { value: "created DESC", label: "Newest first" },
  { value: "created ASC", label: "Oldest first" },
  { value: "updated DESC", label: "Recently updated" },
  { value: "serviceName ASC", label: "Service A–Z" },
  { value: "userChannelId ASC", label: "Address A–Z" },
  { value: "state ASC", label: "State" },
];

const kept = ["id", "created", "updated", "createdBy", "updatedBy"];

type Editing = { kind: "new" } | { kind: "edit"; rec: Subscription } | null;

export function Subscriptions() {
  const { client, who } = useConsole();
  const admin = isAdmin(who);
  const [form, setForm] = useState({ serviceName: "", channel: "", state: "", userChannelId: "", where: "" });
  const [formError, setFormError] = useState("");
  const [s, setS] = useState<ListState>({ where: {}, order: "created DESC", skip: 0, limit: 25 });
  const [tick, setTick] = useState(0);
  const [editing, setEditing] = useState<Editing>(null);
  const [done, setDone] = useState("");
  const del = useAction();
  const page = usePage<Subscription>(client, "/subscriptions", s, tick);

  const apply = (e: Event) => {
    e.preventDefault();
    const { where: extra, ...fields } = form;
    const w = buildWhere(fields, extra);
    if (w.error) {
      setFormError(w.error);
      return;
    }
    setFormError("");
    setS({ ...s, where: w.where!, skip: 0 });
  };
  const reload = (msg: string) => {
    setDone(msg);
    setEditing(null);
    setTick((t) => t + 1);
  };

  return (
    <>
      <PageTitle title="Subscriptions" lead={admin ? "Every subscriber of every service." : "Your subscriptions."}>
        <Button variant="primary" onClick={() => setEditing({ kind: "new" })}>
          New subscription
        </Button>
      </PageTitle>
      {editing ? (
        <RecordEditor
          title={editing.kind === "new" ? "New subscription" : `Edit subscription ${editing.rec.id}`}
          initial={
            editing.kind === "new"
              ? admin
                ? { serviceName: "myService", channel: "email", userChannelId: "someone@example.com", state: "confirmed", data: {} }
                : { serviceName: "myService", channel: "email", userChannelId: "you@example.com" }
              : editable(editing.rec, kept)
          }
          saveLabel={editing.kind === "new" ? "Create subscription" : "Save subscription"}
          hint="channel is email or sms; state is unconfirmed, confirmed or deleted. The API checks the record and says what is wrong here."
          save={(v) =>
            editing.kind === "new"
              ? client.post("/subscriptions", v)
              : admin
                ? client.put(`/subscriptions/${encodeURIComponent(editing.rec.id)}`, v)
                : client.patch(`/subscriptions/${encodeURIComponent(editing.rec.id)}`, v)
          }
          onDone={() => reload(editing.kind === "new" ? "Subscription created." : "Subscription saved.")}
          onCancel={() => setEditing(null)}
        />
      ) : null}
      <form class="card filters" onSubmit={apply} aria-label="Filter subscriptions">
        <div class="form-row">
          <TextField label="Service name" value={form.serviceName} onValue={(v) => setForm({ ...form, serviceName: v })} />
          <SelectField
            label="Channel"
            value={form.channel}
            options={[
              { value: "", label: "Any" },
              { value: "email", label: "email" },
              { value: "sms", label: "sms" },
            ]}
            onValue={(v) => setForm({ ...form, channel: v })}
          />
          <SelectField
            label="State"
            value={form.state}
            options={[
              { value: "", label: "Any" },
              { value: "confirmed", label: "confirmed" },
              { value: "unconfirmed", label: "unconfirmed" },
              { value: "deleted", label: "deleted" },
            ]}
            onValue={(v) => setForm({ ...form, state: v })}
          />
          <TextField label="Address (userChannelId)" value={form.userChannelId} onValue={(v) => setForm({ ...form, userChannelId: v })} />
          <SelectField label="Sort" value={s.order} options={orders} onValue={(v) => setS({ ...s, order: v, skip: 0 })} />
        </div>
        <TextAreaField
          label="More conditions (where, JSON)"
          hint='MongoDB-style, as the API takes it: {"data.city": "Victoria"}'
          value={form.where}
          onValue={(v) => setForm({ ...form, where: v })}
          rows={2}
          spellcheck={false}
        />
        {formError ? (
          <p class="field-error" role="alert">
            {formError}
          </p>
        ) : null}
        <div class="actions">
          <Button type="submit" variant="primary">
            Apply filter
          </Button>
        </div>
      </form>
      <ListStatus loading={page.loading} error={page.error ?? del.error} done={done} what="subscriptions" />
      {page.data ? (
        <section class="card" aria-labelledby="subs-list">
          <h2 id="subs-list" class="visually-hidden">
            Subscription list
          </h2>
          <DataTable
            caption="Subscriptions"
            captionHidden
            rows={page.data.rows}
            rowKey={(r) => r.id}
            empty="No subscription matches."
            columns={[
              { label: "Service", cell: (r) => <span class="cell-main">{r.serviceName}</span> },
              { label: "Channel", cell: (r) => r.channel },
              { label: "Address", cell: (r) => <span class="mono">{r.userChannelId}</span> },
              { label: "State", cell: (r) => <Badge tone={stateTone(r.state)}>{r.state}</Badge> },
              { label: "Created", cell: (r) => when(r.created) },
              {
                label: "Actions",
                cell: (r) => (
                  <span class="actions">
                    <Button class="btn-small" onClick={() => setEditing({ kind: "edit", rec: r })} aria-label={`Edit ${r.userChannelId} (${r.serviceName})`}>
                      Edit
                    </Button>
                    <ConfirmButton
                      label="Delete"
                      question={`Delete ${r.userChannelId}'s subscription to ${r.serviceName}?`}
                      busy={del.busy}
                      onConfirm={() => void del.run(() => client.delete(`/subscriptions/${encodeURIComponent(r.id)}`)).then((ok) => ok && reload("Subscription deleted."))}
                    />
                  </span>
                ),
              },
            ]}
          />
          <Paging s={s} total={page.data.total} onChange={setS} label="Subscription pages" />
        </section>
      ) : null}
    </>
  );
}
