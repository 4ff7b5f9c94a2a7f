import { useState } from "preact/hooks";
import { Badge, Button, DataTable, ErrorNote, Loading, PageTitle, Section, Status, TextAreaField, TextField } from "../../shared/components";
import { formatTime } from "../../shared/format";
import { useAction, useLoad } from "../../shared/hooks";
import { Link } from "../../shared/router";
import { canAdminGroup, useApp } from "../context";
import type { Group, MembershipRequest } from "../types";

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const requestTone = { PENDING: "warn", APPROVED: "good", REJECTED: "bad" } as const;

/** The person's groups with their role, and their membership requests. */
export function Groups() {
  const { api, me } = useApp();
  const groups = useLoad(() => api.get<{ groups: Group[] }>("/api/groups"), []);
  const requests = useLoad(() => api.get<{ requests: MembershipRequest[] }>("/api/membership-requests"), []);
  const names = new Map((groups.data?.groups ?? []).map((g) => [g.id, g.name]));

  return (
    <>
      <PageTitle title="Groups" lead="Everything on the platform belongs to a group. These are yours; ask a group's admin for its ID to request membership." />
      <Section title="My groups">
        <ErrorNote error={groups.error} action="load your groups" />
        {groups.loading && !groups.data ? <Loading what="Loading your groups" /> : null}
        {groups.data ? (
          <DataTable
            caption="My groups"
            captionHidden
            rows={groups.data.groups}
            rowKey={(g) => g.id}
            empty="You are not a member of any group yet."
            columns={[
              {
                label: "Group",
                cell: (g) => (
                  <>
                    <Link class="cell-main" href={`/groups/${g.id}`}>
                      {g.name}
                    </Link>
                    {g.description ? <span class="cell-sub">{g.description}</span> : null}
                  </>
                ),
              },
              { label: "My role", cell: (g) => <Badge tone={g.role === "ADMIN" ? "info" : "neutral"}>{g.role === "ADMIN" ? "Admin" : "Member"}</Badge> },
              { label: "Group ID", cell: (g) => <code class="mono">{g.id}</code> },
              {
                label: "Actions",
                class: "actions-cell",
                cell: (g) => (
                  <Link class="btn btn-secondary btn-small" href={`/groups/${g.id}`}>
                    {canAdminGroup(me, g.id) ? "Settings" : "Members"}
                  </Link>
                ),
              },
            ]}
          />
        ) : null}
      </Section>
      <div class="grid-2">
        <RequestForm onSent={requests.reload} />
        <Section title="My membership requests">
          <ErrorNote error={requests.error} action="load your membership requests" />
          {requests.loading && !requests.data ? <Loading what="Loading your requests" /> : null}
          {requests.data ? (
            <DataTable
              caption="My membership requests"
              captionHidden
              rows={requests.data.requests}
              rowKey={(r) => r.id}
              empty="You have not asked to join a group."
              columns={[
                { label: "Group", cell: (r) => names.get(r.groupId) ?? <code class="mono">{r.groupId}</code> },
                { label: "Status", cell: (r) => <Badge tone={requestTone[r.status]}>{r.status.toLowerCase()}</Badge> },
                { label: "Asked", class: "nowrap", cell: (r) => formatTime(r.createdAt) },
              ]}
            />
          ) : null}
        </Section>
      </div>
    </>
  );
}

function RequestForm({ onSent }: { onSent: () => void }) {
  const { api, me } = useApp();
  const [groupId, setGroupId] = useState("");
  const [message, setMessage] = useState("");
  const [sent, setSent] = useState("");
  const [formError, setFormError] = useState("");
  const send = useAction();
  return (
    <Section title="Ask to join a group">
      <form
        class="form"
        onSubmit={(e) => {
          e.preventDefault();
          setSent("");
          setFormError("");
          const id = groupId.trim();
          if (!uuid.test(id)) {
            setFormError("The group ID is the UUID the group's admin gives you, like 3f2b6c1e-8d4a-4f0e-9b7c-1a2b3c4d5e6f.");
            return;
          }
          if (me.roles[id]) {
            setFormError("You are already a member of this group.");
            return;
          }
          void send.run(async () => {
            await api.post(`/api/groups/${id}/requests`, message.trim() ? { message: message.trim() } : undefined);
            setSent("Request sent. A group admin will decide on it.");
            setGroupId("");
            setMessage("");
            onSent();
          });
        }}
      >
        <TextField label="Group ID" value={groupId} onValue={setGroupId} required spellcheck={false} autoComplete="off" class="mono-input" />
        <TextAreaField label="Message to the group's admins (optional)" value={message} onValue={setMessage} maxLength={500} rows={3} />
        {formError ? (
          <div class="note note-error" role="alert">
            <p>{formError}</p>
          </div>
        ) : null}
        <ErrorNote error={send.error} action="send the request" />
        <Status>{sent}</Status>
        <div class="actions">
          <Button type="submit" variant="primary" busy={send.busy}>
            Send request
          </Button>
        </div>
      </form>
    </Section>
  );
}
