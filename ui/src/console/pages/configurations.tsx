// Configurations: per-service settings as JSON, with templates for the
// shapes the service reads — `subscription` (confirmation and
// unsubscription messages), `notification` (defaults of a service's
// notifications) and an RSS feed (a `notification` configuration with
// value.rss, which the cron polls).

import { useState } from "preact/hooks";
import { Badge, Button, ConfirmButton, DataTable, PageTitle, SelectField, TextField } from "../../shared/components";
import { useAction } from "../../shared/hooks";
import { useConsole } from "../context";
import { buildWhere, ListStatus, Paging, RecordEditor, usePage, type ListState } from "../records";
import { editable, when } from "../ui";

interface Configuration {
  id: string;
  name: string;
  serviceName?: string;
  value?: unknown;
  created?: string;
  updated?: string;
  [k: string]: unknown;
}

export const templates: Record<string, { label: string; value: Record<string, unknown> }> = {
  subscription: {
    label: "subscription: confirmation and unsubscription messages",
    value: {
      name: "subscription",
      serviceName: "myService",
      value: {
        confirmationRequest: {
          email: {
            from: "no-reply@example.com",
            subject: "Please confirm your subscription",
            textBody: "Enter {subscription_confirmation_code} to confirm.",
          },
          sms: { textBody: "Enter {subscription_confirmation_code} to confirm." },
        },
        anonymousUnsubscription: {
          acknowledgements: { onScreen: { successMessage: "You have been unsubscribed." } },
        },
      },
    },
  },
  notification: {
    label: "notification: defaults of the service's notifications",
    value: {
      name: "notification",
      serviceName: "myService",
      value: { httpHost: "https://example.com" },
    },
  },
  rss: {
    label: "RSS feed: a notification polled from a feed",
    value: {
      name: "notification",
      serviceName: "myFeedService",
      value: {
        rss: {
          url: "https://example.com/feed.xml",
          timeSpec: "*/5 * * * *",
          itemKeyField: "guid",
          outdatedItemRetentionGenerations: 1,
          includeUpdatedItems: false,
          fieldsToCheckForUpdate: ["title", "pubDate", "description"],
        },
        messageTemplates: {
          email: { from: "no-reply@example.com", subject: "{title}", textBody: "{description}", htmlBody: "{description}" },
          sms: { textBody: "{title}" },
        },
        httpHost: "https://example.com",
      },
    },
  },
};

const kept = ["id", "created", "updated", "createdBy", "updatedBy"];

type Editing = { kind: "new"; template: string } | { kind: "edit"; rec: Configuration } | null;

/** The server's own key pair (name "rsa"), which signs and checks what it
 * sends: the API refuses to delete or break it, so the console offers
 * neither, and shows its private key only when asked. */
function isKeyPair(r: { name: string }): boolean {
  return r.name === "rsa";
}

/** Records the server keeps itself, offered neither edit nor delete, as
 * the original console does: the key pair, and dbSchemaVersion, which the
 * server writes at start to say which data layout the store holds. */
function keptByServer(r: { name: string }): boolean {
  return isKeyPair(r) || r.name === "dbSchemaVersion";
}

function KeyPairValue({ value }: { value: unknown }) {
  const [shown, setShown] = useState(false);
  const v = (value ?? {}) as { public?: string; private?: string };
  const pub = typeof v.public === "string" ? v.public : "";
  return (
    <span class="key-pair">
      <Badge tone="info">Protected</Badge> <span class="muted">The server's key pair. Public key: </span>
      <code class="clip">{pub.replace(/-----[A-Z ]+-----/g, "").trim() || "—"}</code>
      <Button class="btn-small" variant="quiet" aria-expanded={shown ? "true" : "false"} onClick={() => setShown(!shown)}>
        {shown ? "Hide private key" : "Show private key"}
      </Button>
      {shown ? (
        <pre class="code-block private-key" tabIndex={0} aria-label="Private key">
          {typeof v.private === "string" ? v.private : JSON.stringify(v.private ?? null)}
        </pre>
      ) : null}
    </span>
  );
}

export function Configurations() {
  const { client } = useConsole();
  const [form, setForm] = useState({ name: "", serviceName: "" });
  const [s, setS] = useState<ListState>({ where: {}, order: "updated DESC", skip: 0, limit: 25 });
  const [tick, setTick] = useState(0);
  const [editing, setEditing] = useState<Editing>(null);
  const [template, setTemplate] = useState("subscription");
  const [done, setDone] = useState("");
  const del = useAction();
  const page = usePage<Configuration>(client, "/configurations", s, tick);
  const reload = (msg: string) => {
    setDone(msg);
    setEditing(null);
    setTick((t) => t + 1);
  };

  return (
    <>
      <PageTitle title="Configurations" lead="Per-service settings the service reads when it sends.">
        <SelectField label="Template" class="inline-select" value={template} options={Object.entries(templates).map(([k, t]) => ({ value: k, label: t.label }))} onValue={setTemplate} />
        <Button variant="primary" onClick={() => setEditing({ kind: "new", template })}>
          New configuration
        </Button>
      </PageTitle>
      {editing ? (
        <RecordEditor
          key={editing.kind === "new" ? "new-" + editing.template : editing.rec.id}
          title={editing.kind === "new" ? `New configuration (${editing.template})` : `Edit configuration ${editing.rec.name} of ${editing.rec.serviceName ?? "every service"}`}
          initial={editing.kind === "new" ? templates[editing.template].value : editable(editing.rec, kept)}
          saveLabel={editing.kind === "new" ? "Create configuration" : "Save configuration"}
          hint="The API checks the value's shape for the configuration's name and says what is wrong here."
          save={(v) => (editing.kind === "new" ? client.post("/configurations", v) : client.put(`/configurations/${encodeURIComponent(editing.rec.id)}`, v))}
          onDone={() => reload(editing.kind === "new" ? "Configuration created." : "Configuration saved.")}
          onCancel={() => setEditing(null)}
        />
      ) : null}
      <form
        class="card filters"
        aria-label="Filter configurations"
        onSubmit={(e) => {
          e.preventDefault();
          setS({ ...s, where: buildWhere(form, "").where!, skip: 0 });
        }}
      >
        <div class="form-row">
          <TextField label="Name" value={form.name} onValue={(v) => setForm({ ...form, name: v })} />
          <TextField label="Service name" value={form.serviceName} onValue={(v) => setForm({ ...form, serviceName: v })} />
          <div class="field-button">
            <Button type="submit" variant="primary">
              Apply filter
            </Button>
          </div>
        </div>
      </form>
      <ListStatus loading={page.loading} error={page.error ?? del.error} done={done} what="configurations" />
      {page.data ? (
        <section class="card" aria-labelledby="conf-list">
          <h2 id="conf-list" class="visually-hidden">
            Configuration list
          </h2>
          <DataTable
            caption="Configurations"
            captionHidden
            rows={page.data.rows}
            rowKey={(r) => r.id}
            empty="No configuration matches."
            columns={[
              { label: "Name", cell: (r) => <span class="cell-main">{r.name}</span> },
              { label: "Service", cell: (r) => r.serviceName ?? <span class="muted">every service</span> },
              { label: "Value", cell: (r) => (isKeyPair(r) ? <KeyPairValue value={r.value} /> : <code class="clip">{JSON.stringify(r.value ?? null)}</code>) },
              { label: "Updated", cell: (r) => when(r.updated) },
              {
                label: "Actions",
                cell: (r) =>
                  keptByServer(r) ? (
                    <span class="muted">Kept by the server</span>
                  ) : (
                  <span class="actions">
                    <Button class="btn-small" onClick={() => setEditing({ kind: "edit", rec: r })} aria-label={`Edit ${r.name} of ${r.serviceName ?? "every service"}`}>
                      Edit
                    </Button>
                    <ConfirmButton
                      label="Delete"
                      question={`Delete the ${r.name} configuration of ${r.serviceName ?? "every service"}?`}
                      busy={del.busy}
                      onConfirm={() => void del.run(() => client.delete(`/configurations/${encodeURIComponent(r.id)}`)).then((ok) => ok && reload("Configuration deleted."))}
                    />
                  </span>
                  ),
              },
            ]}
          />
          <Paging s={s} total={page.data.total} onChange={setS} label="Configuration pages" />
        </section>
      ) : null}
    </>
  );
}
