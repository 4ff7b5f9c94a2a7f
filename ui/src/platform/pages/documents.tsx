import { useRef, useState } from "preact/hooks";
import { Badge, Button, DataTable, ErrorNote, Field, Loading, PageTitle, Pager, Section, SelectField, Status, TextField } from "../../shared/components";
import { dayStartISO, formatBytes, formatTime } from "../../shared/format";
import { useAction, useLoad } from "../../shared/hooks";
import { Link } from "../../shared/router";
import { groupName, useApp } from "../context";
import { takeFlash } from "../flash";
import type { Document, DocumentPage } from "../types";

const PAGE_SIZE = 20;

interface Filters {
  groupId: string;
  q: string;
  contentType: string;
  hasOcr: string;
  reviewed: string;
  from: string;
  to: string;
}

const noFilters: Filters = { groupId: "", q: "", contentType: "", hasOcr: "", reviewed: "", from: "", to: "" };

const types = [
  { value: "", label: "Any type" },
  { value: "application/pdf", label: "PDF" },
  { value: "image/png", label: "PNG image" },
  { value: "image/jpeg", label: "JPEG image" },
  { value: "image/tiff", label: "TIFF image" },
  { value: "text/plain; charset=utf-8", label: "Plain text" },
];

const yesNo = (any: string) => [
  { value: "", label: any },
  { value: "true", label: "Yes" },
  { value: "false", label: "No" },
];

export function Documents() {
  const { api, me } = useApp();
  const [flash] = useState(takeFlash);
  const [draft, setDraft] = useState<Filters>(noFilters);
  const [filters, setFilters] = useState<Filters>(noFilters);
  // Cursor paging: cursors[i] opens page i+1 (the first page has none).
  const [cursors, setCursors] = useState<string[]>([""]);
  const page = cursors.length;
  const list = useLoad(
    () =>
      api.get<DocumentPage>("/api/documents", {
        groupId: filters.groupId,
        q: filters.q.trim(),
        contentType: filters.contentType,
        hasOcr: filters.hasOcr,
        reviewed: filters.reviewed,
        createdAfter: filters.from ? dayStartISO(filters.from) : "",
        createdBefore: filters.to ? dayStartISO(filters.to, 1) : "",
        limit: PAGE_SIZE,
        cursor: cursors[cursors.length - 1],
      }),
    [filters, cursors],
  );
  const groupOptions = [{ value: "", label: "All my groups" }, ...me.groups.map((g) => ({ value: g.id, label: g.name }))];
  const set = (k: keyof Filters) => (v: string) => setDraft({ ...draft, [k]: v });

  return (
    <>
      <PageTitle title="Documents" lead="Documents of your groups, newest first. Upload new ones, open one to read its OCR result, download or review it." />
      {flash ? <Status>{flash}</Status> : null}
      <Upload
        onUploaded={() => {
          setCursors([""]);
          list.reload();
        }}
      />
      <Section title="Browse">
        <details class="filter-box">
          <summary>Filters{activeFilters(filters) ? ` (${activeFilters(filters)} in use)` : ""}</summary>
        <form
          class="filters"
          aria-label="Filter documents"
          onSubmit={(e) => {
            e.preventDefault();
            setCursors([""]);
            setFilters({ ...draft });
          }}
        >
          <SelectField label="Group" value={draft.groupId} options={groupOptions} onValue={set("groupId")} />
          <TextField label="File name contains" value={draft.q} onValue={set("q")} type="search" maxLength={200} />
          <SelectField label="Type" value={draft.contentType} options={types} onValue={set("contentType")} />
          <SelectField label="Has OCR result" value={draft.hasOcr} options={yesNo("Either")} onValue={set("hasOcr")} />
          <SelectField label="Reviewed" value={draft.reviewed} options={yesNo("Either")} onValue={set("reviewed")} />
          <TextField label="Uploaded from" type="date" value={draft.from} onValue={set("from")} />
          <TextField label="Uploaded until" type="date" value={draft.to} onValue={set("to")} />
          <div class="actions">
            <Button type="submit" variant="primary">
              Apply filters
            </Button>
            <Button
              variant="quiet"
              onClick={() => {
                setDraft(noFilters);
                setFilters(noFilters);
                setCursors([""]);
              }}
            >
              Clear
            </Button>
          </div>
        </form>
        </details>
        <ErrorNote error={list.error} action="list the documents" />
        {list.loading && !list.data ? <Loading what="Loading documents" /> : null}
        {list.data ? (
          <div aria-busy={list.loading ? "true" : "false"}>
            <DocumentTable docs={list.data.documents} caption={`Documents, page ${page}`} empty={emptyText(filters, me.groups.length)} />
            <Pager
              label="Document pages"
              page={page}
              hasPrev={page > 1}
              hasNext={!!list.data.nextCursor}
              onPrev={() => setCursors(cursors.slice(0, -1))}
              onNext={() => list.data?.nextCursor && setCursors([...cursors, list.data.nextCursor])}
            />
          </div>
        ) : null}
      </Section>
    </>
  );
}

function activeFilters(f: Filters): number {
  return Object.values(f).filter((v) => v !== "").length;
}

function emptyText(f: Filters, groups: number): string {
  if (groups === 0) return "You are not a member of any group yet, so there are no documents to show. Ask to join a group on the Groups page.";
  if (JSON.stringify(f) !== JSON.stringify(noFilters)) return "No document matches these filters.";
  return "No documents yet. Upload the first one above.";
}

function DocumentTable({ docs, caption, empty }: { docs: Document[]; caption: string; empty: string }) {
  const { me } = useApp();
  return (
    <DataTable
      caption={caption}
      captionHidden
      rows={docs}
      rowKey={(d) => d.id}
      empty={empty}
      columns={[
        {
          label: "File",
          cell: (d) => (
            <>
              <Link class="file-name" href={`/documents/${d.id}`}>
                {d.fileName}
              </Link>
              <span class="cell-sub">{d.contentType}</span>
            </>
          ),
        },
        { label: "Group", cell: (d) => groupName(me, d.groupId) },
        { label: "Size", class: "num", cell: (d) => formatBytes(d.size) },
        { label: "Uploaded", class: "nowrap", cell: (d) => formatTime(d.createdAt) },
        { label: "OCR", cell: (d) => (d.hasOcr ? <Badge tone="good">OCR ready</Badge> : <Badge>No OCR yet</Badge>) },
        {
          label: "Actions",
          class: "actions-cell",
          cell: (d) => (
            <a class="btn btn-quiet btn-small" href={`/api/documents/${d.id}/content`} download={d.fileName} aria-label={`Download ${d.fileName}`}>
              Download
            </a>
          ),
        },
      ]}
    />
  );
}

/** Upload with a progress bar: XMLHttpRequest reports the bytes sent. */
function Upload({ onUploaded }: { onUploaded: (d: Document) => void }) {
  const { api, me } = useApp();
  const [groupId, setGroupId] = useState(me.groups.length === 1 ? me.groups[0].id : "");
  const [file, setFile] = useState<File | null>(null);
  const [progress, setProgress] = useState<{ loaded: number; total: number } | null>(null);
  const [done, setDone] = useState("");
  const [formError, setFormError] = useState("");
  const action = useAction();
  const fileRef = useRef<HTMLInputElement>(null);
  const abort = useRef<AbortController | null>(null);

  if (me.groups.length === 0) {
    return (
      <Section title="Upload a document">
        <p class="empty">
          Documents belong to a group. You are not a member of any group yet: <Link href="/groups">ask to join one</Link>.
        </p>
      </Section>
    );
  }

  const submit = async (e: Event) => {
    e.preventDefault();
    setDone("");
    setFormError("");
    action.clear();
    if (!groupId) {
      setFormError("Choose the group the document belongs to.");
      return;
    }
    if (!file) {
      setFormError("Choose a file to upload.");
      fileRef.current?.focus();
      return;
    }
    const form = new FormData();
    form.append("file", file, file.name);
    abort.current = new AbortController();
    setProgress({ loaded: 0, total: file.size });
    const ok = await action.run(async () => {
      const doc = await api.upload<Document>(`/api/documents?groupId=${encodeURIComponent(groupId)}`, form, {
        onProgress: (loaded, total) => setProgress({ loaded, total }),
        signal: abort.current?.signal,
      });
      setDone(`Uploaded ${doc.fileName} (${formatBytes(doc.size)}) to ${groupName(me, doc.groupId)}.`);
      setFile(null);
      if (fileRef.current) fileRef.current.value = "";
      onUploaded(doc);
    });
    setProgress(null);
    abort.current = null;
    if (!ok) fileRef.current?.focus();
  };

  const pct = progress && progress.total > 0 ? Math.min(100, Math.round((progress.loaded / progress.total) * 100)) : 0;
  return (
    <Section title="Upload a document">
      <form class="upload-drop" onSubmit={submit} aria-label="Upload a document">
        <div class="form-row">
          <SelectField
            label="Group"
            value={groupId}
            required
            options={[{ value: "", label: "Choose a group…" }, ...me.groups.map((g) => ({ value: g.id, label: g.name }))]}
            onValue={setGroupId}
          />
          <Field label="File" hint="PDF, images or text, as your groups use them.">
            {(id, desc) => (
              <input
                id={id}
                ref={fileRef}
                type="file"
                aria-describedby={desc}
                onChange={(e) => {
                  setFile(e.currentTarget.files?.[0] ?? null);
                  setDone("");
                  setFormError("");
                }}
              />
            )}
          </Field>
        </div>
        {formError ? (
          <div class="note note-error" role="alert">
            <p>{formError}</p>
          </div>
        ) : null}
        <ErrorNote error={action.error} action={`upload ${file?.name ?? "the file"}`} />
        {progress ? (
          <div class="progress">
            <div class="progress-label" id="upload-progress-label">
              <span>Uploading {file?.name}…</span>
              <span>
                {formatBytes(progress.loaded)} of {formatBytes(progress.total)} · {pct} %
              </span>
            </div>
            <progress max={100} value={pct} aria-labelledby="upload-progress-label">
              {pct} %
            </progress>
          </div>
        ) : null}
        <Status>{done}</Status>
        <div class="actions">
          <Button type="submit" variant="primary" busy={action.busy}>
            {action.busy ? "Uploading…" : "Upload"}
          </Button>
          {action.busy ? (
            <Button variant="quiet" onClick={() => abort.current?.abort()}>
              Cancel upload
            </Button>
          ) : null}
        </div>
      </form>
    </Section>
  );
}

