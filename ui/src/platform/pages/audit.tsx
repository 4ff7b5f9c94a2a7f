import { useState } from "preact/hooks";
import { Badge, Button, DataTable, ErrorNote, Loading, PageTitle, Pager, Section, SelectField, TextField } from "../../shared/components";
import { dayStartISO, formatEvent, todayYMD } from "../../shared/format";
import { useAction, useLoad } from "../../shared/hooks";
import { adminGroups, groupName, useApp } from "../context";
import { PersonName } from "../people";
import type { AuditPage, AuditReport } from "../types";

export const auditActions: Record<string, string> = {
  "auth.login": "Signed in",
  "auth.login_failed": "Sign-in failed",
  "auth.logout": "Signed out",
  "auth.refresh_failed": "Session renewal refused",
  "api_key.created": "API key created",
  "api_key.regenerated": "API key regenerated",
  "api_key.deleted": "API key deleted",
  "api_key.failed": "Invalid API key used",
  "access.denied": "Access denied",
  "membership.requested": "Membership requested",
  "membership.approved": "Membership approved",
  "membership.rejected": "Membership rejected",
  "membership.role_changed": "Role changed",
  "membership.removed": "Member removed",
  "group.created": "Group created",
  "group.updated": "Group updated",
  "group.deleted": "Group deleted",
  "user.admin_granted": "System admin granted",
  "user.admin_revoked": "System admin withdrawn",
  "user.deleted": "User deleted",
  "document.uploaded": "Document uploaded",
  "document.downloaded": "Document downloaded",
  "document.deleted": "Document deleted",
  "review.started": "Review started",
  "review.completed": "Review completed",
  "review.abandoned": "Review abandoned",
  "workflow.created": "Workflow created",
  "workflow.version_added": "Workflow version added",
  "workflow.deleted": "Workflow deleted",
};

const outcomeTone = { success: "good", failure: "bad", denied: "warn" } as const;

function actionLabel(a: string): string {
  return auditActions[a] ?? a;
}

/** The audit log (system admins: everything; group admins: their groups)
 * and the date-form report of a date range. */
export function Audit() {
  const { me } = useApp();
  const scopes = me.isSystemAdmin ? [{ value: "", label: "Everything" }, ...me.groups.map((g) => ({ value: g.id, label: g.name }))] : [{ value: "", label: "All groups I administer" }, ...adminGroups(me).map((g) => ({ value: g.id, label: g.name }))];
  return (
    <>
      <PageTitle title="Audit log" lead={me.isSystemAdmin ? "Security-relevant actions on the platform, newest first." : "Security-relevant actions in the groups you administer, newest first."} />
      <Report scopes={scopes} />
      <Log scopes={scopes} />
    </>
  );
}

interface LogFilters {
  groupId: string;
  action: string;
  from: string;
  to: string;
}

function Log({ scopes }: { scopes: { value: string; label: string }[] }) {
  const { api, me } = useApp();
  const empty: LogFilters = { groupId: "", action: "", from: "", to: "" };
  const [draft, setDraft] = useState(empty);
  const [filters, setFilters] = useState(empty);
  const [befores, setBefores] = useState<(number | null)[]>([null]);
  const log = useLoad(
    () =>
      api.get<AuditPage>("/api/audit", {
        groupId: filters.groupId,
        action: filters.action,
        from: filters.from ? dayStartISO(filters.from) : "",
        to: filters.to ? dayStartISO(filters.to, 1) : "",
        limit: 25,
        before: befores[befores.length - 1],
      }),
    [filters, befores],
  );
  const set = (k: keyof LogFilters) => (v: string) => setDraft({ ...draft, [k]: v });
  return (
    <Section title="Entries">
      <form
        class="filters"
        aria-label="Filter the audit log"
        onSubmit={(e) => {
          e.preventDefault();
          setBefores([null]);
          setFilters({ ...draft });
        }}
      >
        <SelectField label="Scope" value={draft.groupId} options={scopes} onValue={set("groupId")} />
        <SelectField label="Action" value={draft.action} options={[{ value: "", label: "Any action" }, ...Object.entries(auditActions).map(([value, label]) => ({ value, label }))]} onValue={set("action")} />
        <TextField label="From" type="date" value={draft.from} onValue={set("from")} />
        <TextField label="Until" type="date" value={draft.to} onValue={set("to")} />
        <div class="actions">
          <Button type="submit" variant="primary">
            Apply filters
          </Button>
        </div>
      </form>
      <ErrorNote error={log.error} action="load the audit log" />
      {log.loading && !log.data ? <Loading what="Loading the audit log" /> : null}
      {log.data ? (
        <>
          <DataTable
            caption="Audit entries"
            captionHidden
            rows={log.data.entries}
            rowKey={(e) => String(e.id)}
            empty="No entries."
            columns={[
              { label: "When", class: "nowrap", cell: (e) => formatEvent(e.event) },
              {
                label: "Action",
                cell: (e) => (
                  <>
                    <span class="cell-main">{actionLabel(e.action)}</span>
                    <span class="cell-sub">{e.detail}</span>
                  </>
                ),
              },
              { label: "Outcome", cell: (e) => <Badge tone={outcomeTone[e.outcome] ?? "neutral"}>{e.outcome}</Badge> },
              { label: "By", cell: (e) => (e.actor ? <PersonName userId={e.actor} groupId={e.groupId || undefined} known={e.actorName} /> : <span class="muted">unknown</span>) },
              { label: "Group", cell: (e) => (e.groupId ? groupName(me, e.groupId) : <span class="muted">—</span>) },
              { label: "IP", cell: (e) => <code class="mono">{e.ip}</code> },
            ]}
          />
          <Pager
            label="Audit pages"
            page={befores.length}
            hasPrev={befores.length > 1}
            hasNext={log.data.nextBefore !== null}
            onPrev={() => setBefores(befores.slice(0, -1))}
            onNext={() => log.data && log.data.nextBefore !== null && setBefores([...befores, log.data.nextBefore])}
          />
        </>
      ) : null}
    </Section>
  );
}

function Report({ scopes }: { scopes: { value: string; label: string }[] }) {
  const { api, me } = useApp();
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  const [from, setFrom] = useState(todayYMD(-6));
  const [to, setTo] = useState(todayYMD());
  const [timeZone, setTimeZone] = useState(zone);
  const [groupId, setGroupId] = useState("");
  const [report, setReport] = useState<AuditReport | null>(null);
  const [problem, setProblem] = useState("");
  const run = useAction();
  const actions = report ? [...new Set(report.days.flatMap((d) => Object.keys(d.counts)))].sort() : [];

  return (
    <Section title="Report by day">
      <form
        class="filters"
        aria-label="Audit report"
        onSubmit={(e) => {
          e.preventDefault();
          setProblem("");
          if (!from || !to) return setProblem("Give both the first and the last day.");
          if (to < from) return setProblem("The last day must not be before the first.");
          void run.run(async () => setReport(await api.get<AuditReport>("/api/audit/report", { from, to, timeZone, groupId })));
        }}
      >
        <TextField label="First day" type="date" value={from} onValue={setFrom} required />
        <TextField label="Last day" type="date" value={to} onValue={setTo} required />
        <TextField label="Time zone" value={timeZone} onValue={setTimeZone} hint="IANA name, e.g. America/Vancouver" />
        <SelectField label="Scope" value={groupId} options={scopes} onValue={setGroupId} />
        <div class="actions">
          <Button type="submit" variant="primary" busy={run.busy}>
            Show report
          </Button>
        </div>
      </form>
      {problem ? (
        <div class="note note-error" role="alert">
          <p>{problem}</p>
        </div>
      ) : null}
      <ErrorNote error={run.error} action="make the report" />
      {report ? (
        <>
          <p class="muted">
            {report.entries.length} {report.entries.length === 1 ? "entry" : "entries"} from {report.from} to {report.to}, days counted in {report.timeZone}
            {report.truncated ? " (the range holds more; only the first 10 000 are counted)" : ""}.
          </p>
          <DataTable
            caption="Entries per day and action"
            captionHidden
            rows={report.days}
            rowKey={(d) => JSON.stringify(d.event)}
            empty="No entries in this range."
            columns={[
              { label: "Day", class: "nowrap", cell: (d) => formatEvent(d.event) },
              ...actions.map((a) => ({
                label: actionLabel(a),
                class: "num",
                cell: (d: AuditReport["days"][number]) => {
                  const c = d.counts[a];
                  if (!c) return <span class="muted">0</span>;
                  return Object.entries(c)
                    .map(([outcome, n]) => (outcome === "success" ? String(n) : `${n} ${outcome}`))
                    .join(", ");
                },
              })),
            ]}
          />
        </>
      ) : null}
      {!report && !run.busy && me ? <p class="hint">Counts each day's entries by action, in the time zone you choose.</p> : null}
    </Section>
  );
}
