// Notifications: the filtered list; composing email, SMS and in-app
// messages, unicast or broadcast (with both broadcast filters); a preview
// of the mail-merged message for a chosen subscriber (POST
// /console/preview); and a running broadcast's progress, read from
// GET /notifications/{id} (dispatch.counts) until it is done.

import { useEffect, useId, useRef, useState } from "preact/hooks";
import { Badge, Button, DataTable, ErrorNote, PageTitle, SelectField, Status, TextAreaField, TextField } from "../../shared/components";
import { useAction, useLoad } from "../../shared/hooks";
import { isAdmin, useConsole } from "../context";
import { buildWhere, ListStatus, Paging, usePage, type ListState } from "../records";
import { JsonEditor, num, parseJSON, pretty, when } from "../ui";
import { stateTone } from "./dashboard";
import type { Subscription } from "./subscriptions";

interface Counts {
  sent?: number;
  failed?: number;
  skipped?: number;
  remaining?: number;
  // the names of servers that predate sent and remaining
  successful?: number;
  pending?: number;
}

/** The four figures of a broadcast's progress. */
function figures(c: Counts | undefined): { sent: number; failed: number; skipped: number; remaining: number } {
  return {
    sent: c?.sent ?? c?.successful ?? 0,
    failed: c?.failed ?? 0,
    skipped: c?.skipped ?? 0,
    remaining: c?.remaining ?? c?.pending ?? 0,
  };
}

export interface Notification {
  id: string;
  serviceName: string;
  channel: string;
  state: string;
  isBroadcast?: boolean;
  userChannelId?: string;
  message?: { subject?: string; textBody?: string; htmlBody?: string; [k: string]: unknown };
  created?: string;
  dispatch?: { counts?: Counts; failed?: { userChannelId?: string; error?: { message?: string } }[]; [k: string]: unknown };
  [k: string]: unknown;
}

const orders = [
  { value: "created DESC", label: "Newest first" },
  { value: "created ASC", label: "Oldest first" },
  { value: "updated DESC", label: "Recently updated" },
  { value: "serviceName ASC", label: "Service A–Z" },
];

export function Notifications() {
  const { client, who } = useConsole();
  const admin = isAdmin(who);
  const [form, setForm] = useState({ serviceName: "", channel: "", state: "", where: "" });
  const [formError, setFormError] = useState("");
  const [s, setS] = useState<ListState>({ where: {}, order: "created DESC", skip: 0, limit: 25 });
  const [tick, setTick] = useState(0);
  const [composing, setComposing] = useState(false);
  const [watching, setWatching] = useState<string>("");
  const page = usePage<Notification>(client, "/notifications", s, tick);

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

  return (
    <>
      <PageTitle title="Notifications" lead={admin ? "Messages sent and being sent." : "Your in-app notifications."}>
        {admin ? (
          <Button variant="primary" onClick={() => setComposing(true)} disabled={composing}>
            Compose
          </Button>
        ) : null}
      </PageTitle>
      {admin && composing ? (
        <Compose
          onSent={(n) => {
            setComposing(false);
            setTick((t) => t + 1);
            if (n.isBroadcast) setWatching(n.id);
          }}
          onCancel={() => setComposing(false)}
        />
      ) : null}
      {watching ? <Progress id={watching} onClose={() => setWatching("")} onFinished={() => setTick((t) => t + 1)} /> : null}
      <form class="card filters" onSubmit={apply} aria-label="Filter notifications">
        <div class="form-row">
          <TextField label="Service name" value={form.serviceName} onValue={(v) => setForm({ ...form, serviceName: v })} />
          <SelectField
            label="Channel"
            value={form.channel}
            options={[
              { value: "", label: "Any" },
              { value: "email", label: "email" },
              { value: "sms", label: "sms" },
              { value: "inApp", label: "inApp" },
            ]}
            onValue={(v) => setForm({ ...form, channel: v })}
          />
          <SelectField
            label="State"
            value={form.state}
            options={["", "new", "sending", "sent", "error", "deleted"].map((v) => ({ value: v, label: v || "Any" }))}
            onValue={(v) => setForm({ ...form, state: v })}
          />
          <SelectField label="Sort" value={s.order} options={orders} onValue={(v) => setS({ ...s, order: v, skip: 0 })} />
        </div>
        <TextAreaField label="More conditions (where, JSON)" hint='For example {"isBroadcast": true}' value={form.where} onValue={(v) => setForm({ ...form, where: v })} rows={2} spellcheck={false} />
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
      <ListStatus loading={page.loading} error={page.error} done="" what="notifications" />
      {page.data ? (
        <section class="card" aria-labelledby="notes-list">
          <h2 id="notes-list" class="visually-hidden">
            Notification list
          </h2>
          <DataTable
            caption="Notifications"
            captionHidden
            rows={page.data.rows}
            rowKey={(r) => r.id}
            empty="No notification matches."
            columns={[
              { label: "Service", cell: (r) => <span class="cell-main">{r.serviceName}</span> },
              { label: "Channel", cell: (r) => r.channel },
              { label: "To", cell: (r) => (r.isBroadcast ? <Badge tone="info">broadcast</Badge> : <span class="mono">{r.userChannelId ?? ""}</span>) },
              { label: "Message", cell: (r) => <span class="clip">{r.message?.subject ?? r.message?.textBody ?? ""}</span> },
              { label: "State", cell: (r) => <Badge tone={stateTone(r.state)}>{r.state}</Badge> },
              { label: "Created", cell: (r) => when(r.created) },
              {
                label: "Progress",
                cell: (r) =>
                  r.isBroadcast ? (
                    <Button class="btn-small" onClick={() => setWatching(r.id)} aria-label={`Progress of the broadcast ${r.id}`}>
                      Progress
                    </Button>
                  ) : null,
              },
            ]}
          />
          <Paging s={s} total={page.data.total} onChange={setS} label="Notification pages" />
        </section>
      ) : null}
    </>
  );
}

type Channel = "email" | "sms" | "inApp";

/** The compose form. Its fields make the notification's JSON, which can
 * also be edited whole before sending. */
function Compose({ onSent, onCancel }: { onSent: (n: Notification) => void; onCancel: () => void }) {
  const { client } = useConsole();
  const [channel, setChannel] = useState<Channel>("email");
  const [broadcast, setBroadcast] = useState(true);
  const [serviceName, setServiceName] = useState("");
  // The services that have subscribers, offered as the name is typed (a
  // new name is still accepted); none when the counts cannot be read.
  const services = useLoad(
    () =>
      client.get<{ subscriptions: { serviceName: string }[] }>("/console/stats").then(
        (s) => [...new Set(s.subscriptions.map((x) => x.serviceName))].sort(),
        () => [] as string[],
      ),
    [],
  );
  const [from, setFrom] = useState("");
  const [to, setTo] = useState("");
  const [subject, setSubject] = useState("");
  const [textBody, setTextBody] = useState("");
  const [htmlBody, setHtmlBody] = useState("");
  const [filter, setFilter] = useState("");
  const [subFilter, setSubFilter] = useState("");
  const [background, setBackground] = useState(true);
  const [skipCheck, setSkipCheck] = useState(false);
  const [raw, setRaw] = useState<string | null>(null);
  const [problem, setProblem] = useState<unknown>(undefined);
  const send = useAction();
  const head = useRef<HTMLHeadingElement>(null);
  const bid = useId();
  useEffect(() => head.current?.focus(), []);

  const build = (): Record<string, unknown> => {
    const message: Record<string, unknown> = {};
    if (channel === "email") {
      message.from = from;
      message.subject = subject;
      if (textBody) message.textBody = textBody;
      if (htmlBody) message.htmlBody = htmlBody;
    } else {
      message.textBody = textBody;
    }
    const n: Record<string, unknown> = { serviceName, channel, isBroadcast: broadcast, message };
    if (!broadcast) n.userChannelId = to;
    if (!broadcast && skipCheck) n.skipSubscriptionConfirmationCheck = true;
    if (broadcast && filter.trim()) n.broadcastPushNotificationFilter = filter.trim();
    if (broadcast && subFilter.trim()) n.broadcastPushNotificationSubscriptionFilter = subFilter.trim();
    if (broadcast && background && channel !== "inApp") n.asyncBroadcastPushNotification = true;
    return n;
  };
  const notification = (): { value?: Record<string, unknown>; error?: string } => {
    if (raw === null) return { value: build() };
    const p = parseJSON(raw);
    if (p.error) return { error: p.error };
    if (typeof p.value !== "object" || p.value === null || Array.isArray(p.value)) return { error: "The notification must be a JSON object." };
    return { value: p.value as Record<string, unknown> };
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    const n = notification();
    if (n.error) {
      setProblem(n.error);
      return;
    }
    setProblem(undefined);
    let sent: Notification | undefined;
    const ok = await send.run(async () => {
      sent = await client.post<Notification>("/notifications", n.value);
    });
    if (ok && sent) onSent(sent);
  };

  return (
    <section class="card editor" aria-labelledby="compose-title">
      <div class="card-head">
        <h2 id="compose-title" ref={head} tabIndex={-1}>
          Compose a notification
        </h2>
      </div>
      <form
        class="form"
        onSubmit={submit}
        onKeyDown={(e) => {
          if (e.key === "Escape") onCancel();
        }}
      >
        {raw === null ? (
          <>
            <div class="form-row">
              <SelectField
                label="Channel"
                value={channel}
                options={[
                  { value: "email", label: "Email" },
                  { value: "sms", label: "SMS" },
                  { value: "inApp", label: "In-app" },
                ]}
                onValue={(v) => setChannel(v as Channel)}
              />
              <TextField label="Service name" value={serviceName} onValue={setServiceName} required suggestions={services.data ?? []} />
            </div>
            <fieldset class="choice">
              <legend>Recipients</legend>
              <label>
                <input type="radio" name={bid} checked={broadcast} onChange={() => setBroadcast(true)} /> Broadcast to the service's confirmed subscribers
              </label>
              <label>
                <input type="radio" name={bid} checked={!broadcast} onChange={() => setBroadcast(false)} /> One recipient (unicast)
              </label>
            </fieldset>
            {!broadcast ? <TextField label={channel === "sms" ? "Phone number" : channel === "email" ? "Email address" : "User id or address"} value={to} onValue={setTo} required={channel !== "inApp"} /> : null}
            {!broadcast && channel !== "inApp" ? (
              <label class="check">
                <input type="checkbox" checked={skipCheck} onChange={(e) => setSkipCheck(e.currentTarget.checked)} /> Send even if this address has no confirmed subscription to the service (skipSubscriptionConfirmationCheck)
              </label>
            ) : null}
            {channel === "email" ? <TextField label="From" type="email" value={from} onValue={setFrom} required hint="The sender's address, e.g. no-reply@example.com." /> : null}
            {channel === "email" ? <TextField label="Subject" value={subject} onValue={setSubject} hint="Mail merge fields such as {subscription_confirmation_code} or {http_host} are filled per subscriber." /> : null}
            <TextAreaField label={channel === "email" ? "Text body" : "Message"} value={textBody} onValue={setTextBody} rows={4} />
            {channel === "email" ? <TextAreaField label="HTML body" value={htmlBody} onValue={setHtmlBody} rows={4} spellcheck={false} /> : null}
            {broadcast ? (
              <>
                <TextField
                  label="Broadcast filter (broadcastPushNotificationFilter)"
                  value={filter}
                  onValue={setFilter}
                  spellcheck={false}
                  hint="A JMESPath expression each subscriber's data must match (the notification's broadcastPushNotificationFilter); optional."
                />
                <TextField
                  label="Subscription filter (broadcastPushNotificationSubscriptionFilter)"
                  value={subFilter}
                  onValue={setSubFilter}
                  spellcheck={false}
                  hint="A JMESPath expression on each subscription, matched against the notification's data; optional."
                />
                {channel !== "inApp" ? (
                  <label class="check">
                    <input type="checkbox" checked={background} onChange={(e) => setBackground(e.currentTarget.checked)} /> Send in the background and show the progress
                  </label>
                ) : null}
              </>
            ) : null}
          </>
        ) : (
          <JsonEditor label="Notification (JSON)" value={raw} onValue={setRaw} problem={problem} rows={16} hint="Sent as is to POST /notifications." />
        )}
        {raw === null && problem ? <ErrorNote error={problem} action="send" /> : null}
        {raw !== null ? null : <ErrorNote error={send.error} action="send" />}
        {raw !== null && send.error ? <ErrorNote error={send.error} action="send" /> : null}
        <div class="actions">
          <Button type="submit" variant="primary" busy={send.busy}>
            Send
          </Button>
          <Button onClick={() => (raw === null ? setRaw(pretty(build())) : setRaw(null))}>{raw === null ? "Edit as JSON" : "Back to the form"}</Button>
          <Button variant="quiet" onClick={onCancel}>
            Cancel
          </Button>
        </div>
      </form>
      <Preview notification={notification} serviceName={serviceName || String((notification().value ?? {}).serviceName ?? "")} channel={channel} />
    </section>
  );
}

interface PreviewAnswer {
  channel: string;
  to: string;
  subject?: string;
  textBody?: string;
  htmlBody?: string;
}

/** The message as one subscriber would get it. */
function Preview({ notification, serviceName, channel }: { notification: () => { value?: Record<string, unknown>; error?: string }; serviceName: string; channel: string }) {
  const { client } = useConsole();
  const [subId, setSubId] = useState("");
  const [answer, setAnswer] = useState<PreviewAnswer | null>(null);
  const act = useAction();
  const subs = useLoad(
    () =>
      serviceName
        ? client.list<Subscription>("/subscriptions", { where: { serviceName, state: "confirmed", ...(channel === "inApp" ? {} : { channel }) }, order: [["created", "desc"]], limit: 50 })
        : Promise.resolve([] as Subscription[]),
    [serviceName, channel],
  );
  const run = async () => {
    const n = notification();
    if (n.error) return;
    setAnswer(null);
    await act.run(async () => setAnswer(await client.post<PreviewAnswer>("/console/preview", { notification: n.value, subscriptionId: subId })));
  };
  const options = [{ value: "", label: subs.data && subs.data.length ? "Choose a subscriber" : "No confirmed subscriber of this service" }].concat(
    (subs.data ?? []).map((s) => ({ value: s.id, label: `${s.userChannelId} (${s.channel})` })),
  );
  return (
    <section class="preview" aria-labelledby="preview-title">
      <h3 id="preview-title">Preview for a subscriber</h3>
      <div class="form-row">
        <SelectField label="Subscriber" value={subId} options={options} onValue={setSubId} />
        <TextField label="Or a subscription id" value={subId} onValue={setSubId} spellcheck={false} />
        <div class="field-button">
          <Button onClick={run} busy={act.busy} disabled={!subId}>
            Preview
          </Button>
        </div>
      </div>
      <ErrorNote error={act.error} action="preview" />
      {answer ? (
        <div class="preview-out" role="region" aria-label="Preview of the message">
          <dl class="props">
            <div>
              <dt>To</dt>
              <dd class="mono">{answer.to}</dd>
            </div>
            {answer.subject !== undefined ? (
              <div>
                <dt>Subject</dt>
                <dd>{answer.subject}</dd>
              </div>
            ) : null}
          </dl>
          {answer.textBody ? <pre class="code-block preview-text">{answer.textBody}</pre> : null}
          {answer.htmlBody ? (
            <>
              <p class="hint">HTML body (source; the console does not render mail HTML):</p>
              <pre class="code-block preview-html">{answer.htmlBody}</pre>
            </>
          ) : null}
        </div>
      ) : null}
    </section>
  );
}

const progressFields = { id: true, serviceName: true, channel: true, state: true, isBroadcast: true, "dispatch.counts": true };

/** Above this many failures the reasons are not read (the list can be
 * long); the count says enough. */
const maxFailuresRead = 1000;

/** A broadcast's progress, read every second until it is no longer
 * sending. */
function Progress({ id, onClose, onFinished }: { id: string; onClose: () => void; onFinished: () => void }) {
  const { client } = useConsole();
  const [n, setN] = useState<Notification | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const finished = useRef(false);
  const head = useRef<HTMLHeadingElement>(null);
  useEffect(() => head.current?.focus(), [id]);
  useEffect(() => {
    let stop = false;
    let timer = 0;
    finished.current = false;
    const poll = async () => {
      try {
        // Asked for the counts alone, the server reads them without the
        // lists of outcomes: cheap to poll every second.
        const got = await client.get<Notification>(`/notifications/${encodeURIComponent(id)}`, { filter: JSON.stringify({ fields: progressFields }) });
        if (stop) return;
        setN(got);
        setError(undefined);
        if (got.state === "new" || got.state === "sending") {
          timer = window.setTimeout(poll, 1000);
        } else if (!finished.current) {
          finished.current = true;
          onFinished();
          const failed = figures(got.dispatch?.counts).failed;
          if (failed > 0 && failed <= maxFailuresRead) {
            // Once, at the end: why it failed.
            const f = await client.get<Notification>(`/notifications/${encodeURIComponent(id)}`, { filter: JSON.stringify({ fields: { id: true, "dispatch.failed": true } }) });
            if (!stop) setN({ ...got, dispatch: { ...got.dispatch, failed: f.dispatch?.failed } });
          }
        }
      } catch (e) {
        if (stop) return;
        setError(e);
        timer = window.setTimeout(poll, 3000);
      }
    };
    void poll();
    return () => {
      stop = true;
      window.clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [id]);
  const c = figures(n?.dispatch?.counts);
  const running = n ? n.state === "new" || n.state === "sending" : true;
  const total = c.sent + c.failed + c.skipped + c.remaining;
  const doneCount = c.sent + c.failed + c.skipped;
  const firstFailure = n?.dispatch?.failed?.[0];
  return (
    <section class="card progress-card" aria-labelledby="progress-title" id="broadcast-progress">
      <div class="card-head">
        <h2 id="progress-title" ref={head} tabIndex={-1}>
          Broadcast {id}
        </h2>
        <div class="card-actions">
          <Button class="btn-small" variant="quiet" onClick={onClose}>
            Close
          </Button>
        </div>
      </div>
      <ErrorNote error={error} action="read the broadcast's progress" />
      {n ? (
        <>
          <p>
            {n.serviceName} · {n.channel} · state <Badge tone={stateTone(n.state)}>{n.state}</Badge>
          </p>
          {total > 0 ? <progress max={total} value={doneCount} aria-label="Dispatched so far" /> : null}
          <dl class="props counts" aria-live="polite">
            <div>
              <dt>Sent</dt>
              <dd id="count-sent">{num(c.sent)}</dd>
            </div>
            <div>
              <dt>Failed</dt>
              <dd id="count-failed">{num(c.failed)}</dd>
            </div>
            <div>
              <dt>Skipped</dt>
              <dd id="count-skipped">{num(c.skipped)}</dd>
            </div>
            <div>
              <dt>Remaining</dt>
              <dd id="count-remaining">{num(c.remaining)}</dd>
            </div>
          </dl>
          {firstFailure ? (
            <div class="note note-warn" role="alert">
              <p>
                <strong>Why sending failed</strong>, for {firstFailure.userChannelId ?? "a subscriber"} (the first of {num(c.failed)}): {firstFailure.error?.message ?? "no reason given"}
              </p>
            </div>
          ) : null}
          <Status kind={running ? "info" : "success"}>{running ? "Sending…" : `Finished: the broadcast is ${n.state}.`}</Status>
        </>
      ) : null}
    </section>
  );
}
