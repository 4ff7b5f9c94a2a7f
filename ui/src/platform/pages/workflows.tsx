import { useState } from "preact/hooks";
import { Badge, Button, ConfirmButton, DataTable, ErrorNote, Loading, PageTitle, Properties, Section, SelectField, Status, TextAreaField, TextField } from "../../shared/components";
import { formatTime } from "../../shared/format";
import { useAction, useLoad } from "../../shared/hooks";
import { Link, navigate } from "../../shared/router";
import { adminGroups, canAdminGroup, groupName, useApp } from "../context";
import { setFlash, takeFlash } from "../flash";
import { PersonName } from "../people";
import type { Workflow, WorkflowVersion } from "../types";

/** Parses a configuration the way the API wants it: a JSON object. The
 * problem in words, or the value. */
function parseConfig(text: string): { value?: unknown; problem?: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return { problem: `The configuration is not valid JSON: ${(e as Error).message}` };
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) return { problem: "The configuration must be a JSON object, { … }." };
  return { value: v };
}

const exampleConfig = `{
  "steps": [
    { "type": "ocr", "engine": "tesseract", "languages": ["eng"] },
    { "type": "review", "required": true }
  ]
}`;

export function Workflows() {
  const { api, me } = useApp();
  const [flash] = useState(takeFlash);
  const [groupId, setGroupId] = useState("");
  const list = useLoad(() => api.get<{ workflows: Workflow[] }>("/api/workflows", { groupId }), [groupId]);
  const mayCreate = adminGroups(me).length > 0;
  return (
    <>
      <PageTitle title="Workflows" lead="Named processing configurations of your groups. Every change is saved as a new, numbered version; old versions stay readable." />
      {flash ? <Status>{flash}</Status> : null}
      <Section title="Workflows of my groups">
        <div class="form-row">
          <SelectField label="Group" value={groupId} options={[{ value: "", label: "All my groups" }, ...me.groups.map((g) => ({ value: g.id, label: g.name }))]} onValue={setGroupId} />
        </div>
        <ErrorNote error={list.error} action="list the workflows" />
        {list.loading && !list.data ? <Loading what="Loading workflows" /> : null}
        {list.data ? (
          <DataTable
            caption="Workflows"
            captionHidden
            rows={list.data.workflows}
            rowKey={(w) => w.id}
            empty="No workflows yet."
            columns={[
              {
                label: "Workflow",
                cell: (w) => (
                  <>
                    <Link class="cell-main" href={`/workflows/${w.id}`}>
                      {w.name}
                    </Link>
                    {w.description ? <span class="cell-sub">{w.description}</span> : null}
                  </>
                ),
              },
              { label: "Group", cell: (w) => groupName(me, w.groupId) },
              { label: "Version", cell: (w) => <Badge tone="info">v{w.latestVersion}</Badge> },
              { label: "Updated", class: "nowrap", cell: (w) => formatTime(w.updatedAt) },
            ]}
          />
        ) : null}
      </Section>
      {mayCreate ? <CreateWorkflow onCreated={(w) => navigate(`/workflows/${w.id}`)} /> : null}
    </>
  );
}

function CreateWorkflow({ onCreated }: { onCreated: (w: Workflow) => void }) {
  const { api, me } = useApp();
  const groups = adminGroups(me);
  const [groupId, setGroupId] = useState(groups.length === 1 ? groups[0].id : "");
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [config, setConfig] = useState(exampleConfig);
  const [problem, setProblem] = useState("");
  const create = useAction();
  return (
    <Section title="New workflow">
      <form
        class="form"
        onSubmit={(e) => {
          e.preventDefault();
          setProblem("");
          if (!groupId) return setProblem("Choose the group the workflow belongs to.");
          if (!name.trim()) return setProblem("Give the workflow a name.");
          const c = parseConfig(config);
          if (c.problem) return setProblem(c.problem);
          void create.run(async () => {
            const w = await api.post<Workflow>("/api/workflows", { groupId, name: name.trim(), description, config: c.value });
            setFlash(`Workflow ${w.name} created as version 1.`);
            onCreated(w);
          });
        }}
      >
        <div class="form-row">
          <SelectField label="Group" value={groupId} options={[{ value: "", label: "Choose a group…" }, ...groups.map((g) => ({ value: g.id, label: g.name }))]} onValue={setGroupId} hint="Groups you administer." />
          <TextField label="Name" value={name} onValue={setName} maxLength={100} required />
        </div>
        <TextField label="Description" value={description} onValue={setDescription} maxLength={1000} />
        <TextAreaField label="Configuration (JSON object)" value={config} onValue={setConfig} rows={9} class="code" spellcheck={false} />
        {problem ? (
          <div class="note note-error" role="alert">
            <p>{problem}</p>
          </div>
        ) : null}
        <ErrorNote error={create.error} action="create the workflow" />
        <div class="actions">
          <Button type="submit" variant="primary" busy={create.busy}>
            Create workflow
          </Button>
        </div>
      </form>
    </Section>
  );
}

export function WorkflowPage({ id }: { id: string }) {
  const { api, me } = useApp();
  const [flash] = useState(takeFlash);
  const wf = useLoad(() => api.get<Workflow>(`/api/workflows/${encodeURIComponent(id)}`), [id]);
  const versions = useLoad(() => api.get<{ versions: WorkflowVersion[] }>(`/api/workflows/${encodeURIComponent(id)}/versions`), [id]);
  const [shown, setShown] = useState<number | null>(null);
  const del = useAction();
  const w = wf.data;
  const admin = w ? canAdminGroup(me, w.groupId) : false;
  const shownVersion = versions.data?.versions.find((v) => v.version === shown);

  return (
    <>
      <p class="crumbs">
        <Link href="/workflows">Workflows</Link> /
      </p>
      <PageTitle title={w ? w.name : "Workflow"} lead={w?.description || undefined}>
        {w && admin ? (
          <ConfirmButton
            label="Delete workflow"
            question={`Delete ${w.name} and all its versions?`}
            yes="Yes, delete"
            busy={del.busy}
            onConfirm={() =>
              void del.run(async () => {
                await api.delete(`/api/workflows/${w.id}`);
                setFlash(`Workflow ${w.name} deleted.`);
                navigate("/workflows");
              })
            }
          />
        ) : null}
      </PageTitle>
      {flash ? <Status>{flash}</Status> : null}
      <ErrorNote error={wf.error} action="load the workflow" />
      <ErrorNote error={del.error} action="delete the workflow" />
      {wf.loading && !w ? <Loading what="Loading the workflow" /> : null}
      {w ? (
        <>
          <Section title={`Current configuration (version ${w.latestVersion})`}>
            <Properties
              items={[
                ["Group", groupName(me, w.groupId)],
                ["Created", formatTime(w.createdAt)],
                ["Created by", <PersonName userId={w.createdBy} groupId={w.groupId} />],
                ["Last version", formatTime(w.updatedAt)],
              ]}
            />
            <h3 class="sub-head" id="wf-config">
              Configuration
            </h3>
            <pre class="code-block" tabIndex={0} aria-labelledby="wf-config">
              {JSON.stringify(w.config, null, 2)}
            </pre>
          </Section>
          {admin ? (
            <NewVersion
              workflow={w}
              onSaved={() => {
                wf.reload();
                versions.reload();
              }}
            />
          ) : null}
          <Section title="Versions">
            <ErrorNote error={versions.error} action="load the versions" />
            {versions.loading && !versions.data ? <Loading what="Loading versions" /> : null}
            {versions.data ? (
              <DataTable
                caption="Versions, newest first"
                captionHidden
                rows={versions.data.versions}
                rowKey={(v) => String(v.version)}
                empty="No versions."
                columns={[
                  { label: "Version", cell: (v) => <Badge tone={v.version === w.latestVersion ? "info" : "neutral"}>v{v.version}</Badge> },
                  { label: "Saved", class: "nowrap", cell: (v) => formatTime(v.createdAt) },
                  { label: "By", cell: (v) => <PersonName userId={v.createdBy} groupId={w.groupId} /> },
                  {
                    label: "Configuration",
                    class: "actions-cell",
                    cell: (v) => (
                      <Button class="btn-small" variant="quiet" aria-expanded={shown === v.version ? "true" : "false"} aria-controls="version-config" onClick={() => setShown(shown === v.version ? null : v.version)}>
                        {shown === v.version ? "Hide" : "Show"} v{v.version}
                      </Button>
                    ),
                  },
                ]}
              />
            ) : null}
            <div id="version-config">
              {shownVersion ? (
                <>
                  <h3 class="sub-head" id="version-config-title">
                    Version {shownVersion.version}
                  </h3>
                  <pre class="code-block" tabIndex={0} aria-labelledby="version-config-title">
                    {JSON.stringify(shownVersion.config, null, 2)}
                  </pre>
                </>
              ) : null}
            </div>
          </Section>
        </>
      ) : null}
    </>
  );
}

function NewVersion({ workflow, onSaved }: { workflow: Workflow; onSaved: () => void }) {
  const { api } = useApp();
  const [config, setConfig] = useState(() => JSON.stringify(workflow.config ?? {}, null, 2));
  const [problem, setProblem] = useState("");
  const [saved, setSaved] = useState("");
  const save = useAction();
  return (
    <Section title="Save a new version">
      <form
        class="form"
        onSubmit={(e) => {
          e.preventDefault();
          setProblem("");
          setSaved("");
          const c = parseConfig(config);
          if (c.problem) return setProblem(c.problem);
          void save.run(async () => {
            const v = await api.post<WorkflowVersion>(`/api/workflows/${workflow.id}/versions`, { config: c.value });
            setSaved(`Saved as version ${v.version}.`);
            onSaved();
          });
        }}
      >
        <TextAreaField label="Configuration (JSON object)" value={config} onValue={setConfig} rows={10} class="code" spellcheck={false} hint="Versions are immutable: saving adds one." />
        {problem ? (
          <div class="note note-error" role="alert">
            <p>{problem}</p>
          </div>
        ) : null}
        <ErrorNote error={save.error} action="save the version" />
        <Status>{saved}</Status>
        <div class="actions">
          <Button type="submit" variant="primary" busy={save.busy}>
            Save version
          </Button>
        </div>
      </form>
    </Section>
  );
}
