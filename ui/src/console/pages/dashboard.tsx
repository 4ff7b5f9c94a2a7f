// The dashboard: what the service is doing, from GET /console/stats —
// subscriptions by service and state, recent broadcasts with their
// throughput and failures, the queue and its throttles, bounces.

import { useEffect } from "preact/hooks";
import { Badge, Button, DataTable, ErrorNote, Loading, PageTitle, Section } from "../../shared/components";
import { useLoad } from "../../shared/hooks";
import { useConsole } from "../context";
import { num, when } from "../ui";

interface Stats {
  subscriptions: { serviceName: string; channel: string; state: string; count: number }[];
  subscriptionsTruncated?: boolean;
  countsGenerated?: string | null;
  /** The server has not finished its first count yet: the subscription
   * and bounce lists are empty for now. */
  countsPending?: boolean;
  broadcasts: {
    id: string;
    serviceName: string;
    channel: string;
    state: string;
    created?: string;
    updated?: string;
    counts?: { sent?: number; failed?: number; skipped?: number; remaining?: number };
    perSecond?: number;
  }[];
  queue?: Record<string, unknown>;
  throttle?: Record<string, { enabled?: boolean; max?: number; duration?: number }>;
  bounces: { state: string; count: number }[];
  generated?: string;
}

export function stateTone(state: string): "good" | "warn" | "bad" | "info" | "neutral" {
  switch (state) {
    case "confirmed":
    case "sent":
    case "read":
      return "good";
    case "unconfirmed":
    case "new":
      return "warn";
    case "sending":
    case "active":
      return "info";
    case "error":
    case "deleted":
      return "bad";
  }
  return "neutral";
}

export function Dashboard() {
  const { client } = useConsole();
  const stats = useLoad(() => client.get<Stats>("/console/stats"), []);
  const s = stats.data;
  const pending = s?.countsPending === true;
  // The server counts in the background; ask again until it has.
  useEffect(() => {
    if (!pending || stats.loading) return;
    const id = window.setTimeout(stats.reload, 2000);
    return () => window.clearTimeout(id);
  }, [pending, stats.loading, stats.reload]);
  const total = (s?.subscriptions ?? []).reduce((n, r) => n + r.count, 0);
  const confirmed = (s?.subscriptions ?? []).filter((r) => r.state === "confirmed").reduce((n, r) => n + r.count, 0);
  const bounced = (s?.bounces ?? []).reduce((n, r) => n + r.count, 0);
  const waiting = typeof s?.queue?.pending === "number" ? (s.queue.pending as number) : undefined;

  return (
    <>
      <PageTitle title="Dashboard" lead={s?.generated ? `Figures as of ${when(s.generated)}` : "What the service is doing."}>
        <Button onClick={stats.reload} busy={stats.loading}>
          Refresh
        </Button>
      </PageTitle>
      <ErrorNote error={stats.error} action="load the figures" />
      {!s && stats.loading ? <Loading what="Loading the figures" /> : null}
      {s ? (
        <>
          <div class="stat-grid">
            <div class="stat">
              <div class="stat-value">{pending ? "—" : num(total)}</div>
              <div class="stat-label">subscriptions</div>
            </div>
            <div class="stat">
              <div class="stat-value">{pending ? "—" : num(confirmed)}</div>
              <div class="stat-label">confirmed</div>
            </div>
            <div class="stat">
              <div class="stat-value">{waiting === undefined ? "—" : num(waiting)}</div>
              <div class="stat-label">jobs waiting in the queue</div>
            </div>
            <div class="stat">
              <div class="stat-value">{pending ? "—" : num(bounced)}</div>
              <div class="stat-label">bounce records</div>
            </div>
          </div>
          <Section title="Subscriptions by service and state">
            {pending ? <Loading what="The server is counting the subscriptions" /> : null}
            {s.countsGenerated ? <p class="hint">Counted {when(s.countsGenerated)}; the server counts again at most every few seconds.</p> : null}
            {s.subscriptionsTruncated ? <p class="note note-info">Only the largest groups are listed: there are more services, channels and states than the dashboard shows.</p> : null}
            <DataTable
              caption="Subscriptions by service, channel and state"
              captionHidden
              rows={s.subscriptions ?? []}
              rowKey={(r) => `${r.serviceName}|${r.channel}|${r.state}`}
              empty={pending ? "Not counted yet." : "No subscriptions yet."}
              columns={[
                { label: "Service", cell: (r) => r.serviceName },
                { label: "Channel", cell: (r) => r.channel },
                { label: "State", cell: (r) => <Badge tone={stateTone(r.state)}>{r.state}</Badge> },
                { label: "Count", cell: (r) => num(r.count), class: "num" },
              ]}
            />
          </Section>
          <Section title="Recent broadcasts">
            <DataTable
              caption="Recent broadcasts with their progress"
              captionHidden
              rows={s.broadcasts ?? []}
              rowKey={(r) => r.id}
              empty="No broadcasts yet."
              columns={[
                { label: "Service", cell: (r) => <span class="cell-main">{r.serviceName}</span> },
                { label: "Channel", cell: (r) => r.channel },
                { label: "State", cell: (r) => <Badge tone={stateTone(r.state)}>{r.state}</Badge> },
                { label: "Sent", cell: (r) => num(r.counts?.sent), class: "num" },
                { label: "Failed", cell: (r) => (r.counts?.failed ? <Badge tone="bad">{num(r.counts.failed)}</Badge> : "0"), class: "num" },
                { label: "Skipped", cell: (r) => num(r.counts?.skipped), class: "num" },
                { label: "Remaining", cell: (r) => num(r.counts?.remaining), class: "num" },
                { label: "Per second", cell: (r) => (typeof r.perSecond === "number" ? r.perSecond.toFixed(1) : "—"), class: "num" },
                { label: "Started", cell: (r) => when(r.created) },
              ]}
            />
          </Section>
          <div class="grid-2">
            <Section title="Queue">
              <dl class="props">
                {Object.entries(s.queue ?? {}).map(([k, v]) => (
                  <div key={k}>
                    <dt>{k}</dt>
                    <dd>{typeof v === "number" ? num(v) : typeof v === "boolean" ? (v ? "yes" : "no") : String(v)}</dd>
                  </div>
                ))}
              </dl>
              <h3 class="sub-head">Throttles</h3>
              <dl class="props">
                {Object.entries(s.throttle ?? {}).map(([ch, t]) => (
                  <div key={ch}>
                    <dt>{ch}</dt>
                    <dd>{t?.enabled ? `at most ${num(t.max)} per ${num(t.duration)} ms` : "off"}</dd>
                  </div>
                ))}
              </dl>
            </Section>
            <Section title="Bounces">
              <DataTable
                caption="Bounce records by state"
                captionHidden
                rows={s.bounces ?? []}
                rowKey={(r) => r.state}
                empty={pending ? "Not counted yet." : "No bounces recorded."}
                columns={[
                  { label: "State", cell: (r) => <Badge tone={r.state === "active" ? "warn" : "neutral"}>{r.state}</Badge> },
                  { label: "Count", cell: (r) => num(r.count), class: "num" },
                ]}
              />
            </Section>
          </div>
        </>
      ) : null}
    </>
  );
}
