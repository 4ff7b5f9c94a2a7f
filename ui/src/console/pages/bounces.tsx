// Bounces: the records of mail that came back, per address, with their
// bounce messages.

import { useState } from "preact/hooks";
import { Badge, Button, DataTable, PageTitle, SelectField, TextField } from "../../shared/components";
import { useConsole } from "../context";
import { buildWhere, ListStatus, Paging, usePage, type ListState } from "../records";
import { num, pretty, when } from "../ui";

interface Bounce {
  id: string;
  channel?: string;
  userChannelId?: string;
  state?: string;
  hardBounceCount?: number;
  bounceMessages?: { date?: string; message?: string }[];
  latestNotificationStarted?: string;
  latestNotificationEnded?: string;
  created?: string;
  updated?: string;
  [k: string]: unknown;
}

export function Bounces() {
  const { client } = useConsole();
  const [form, setForm] = useState({ userChannelId: "", state: "" });
  const [s, setS] = useState<ListState>({ where: {}, order: "updated DESC", skip: 0, limit: 25 });
  const [open, setOpen] = useState<Bounce | null>(null);
  const page = usePage<Bounce>(client, "/bounces", s, 0);
  return (
    <>
      <PageTitle title="Bounces" lead="Mail that came back, by address. Addresses that bounce too often are unsubscribed." />
      <form
        class="card filters"
        aria-label="Filter bounces"
        onSubmit={(e) => {
          e.preventDefault();
          setS({ ...s, where: buildWhere(form, "").where!, skip: 0 });
        }}
      >
        <div class="form-row">
          <TextField label="Address" value={form.userChannelId} onValue={(v) => setForm({ ...form, userChannelId: v })} />
          <SelectField
            label="State"
            value={form.state}
            options={["", "active", "deleted"].map((v) => ({ value: v, label: v || "Any" }))}
            onValue={(v) => setForm({ ...form, state: v })}
          />
          <div class="field-button">
            <Button type="submit" variant="primary">
              Apply filter
            </Button>
          </div>
        </div>
      </form>
      {open ? (
        <section class="card" aria-labelledby="bounce-title">
          <div class="card-head">
            <h2 id="bounce-title">Bounce record of {open.userChannelId}</h2>
            <div class="card-actions">
              <Button class="btn-small" variant="quiet" onClick={() => setOpen(null)}>
                Close
              </Button>
            </div>
          </div>
          <pre class="code-block">{pretty(open)}</pre>
        </section>
      ) : null}
      <ListStatus loading={page.loading} error={page.error} done="" what="bounces" />
      {page.data ? (
        <section class="card" aria-labelledby="bounce-list">
          <h2 id="bounce-list" class="visually-hidden">
            Bounce list
          </h2>
          <DataTable
            caption="Bounces"
            captionHidden
            rows={page.data.rows}
            rowKey={(r) => r.id}
            empty="No bounces recorded."
            columns={[
              { label: "Address", cell: (r) => <span class="mono">{r.userChannelId}</span> },
              { label: "State", cell: (r) => <Badge tone={r.state === "active" ? "warn" : "neutral"}>{r.state ?? ""}</Badge> },
              { label: "Hard bounces", cell: (r) => num(r.hardBounceCount), class: "num" },
              { label: "Last message", cell: (r) => <span class="clip">{r.bounceMessages?.at(-1)?.message ?? ""}</span> },
              { label: "Updated", cell: (r) => when(r.updated) },
              {
                label: "Details",
                cell: (r) => (
                  <Button class="btn-small" onClick={() => setOpen(r)} aria-label={`View the bounce record of ${r.userChannelId}`}>
                    View
                  </Button>
                ),
              },
            ]}
          />
          <Paging s={s} total={page.data.total} onChange={setS} label="Bounce pages" />
        </section>
      ) : null}
    </>
  );
}
