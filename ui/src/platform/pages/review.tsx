import { useMemo, useState } from "preact/hooks";
import { Badge, Button, ConfirmButton, DataTable, ErrorNote, Loading, PageTitle, Pager, Properties, Section, SelectField, Status, TextField } from "../../shared/components";
import { formatClock, formatTime, parseTime } from "../../shared/format";
import { useAction, useLoad } from "../../shared/hooks";
import { Link, navigate } from "../../shared/router";
import { groupName, useApp } from "../context";
import { setFlash, takeFlash } from "../flash";
import { PersonName } from "../people";
import type { Correction, Document, DocumentPage, OCRResult, ReviewSession } from "../types";
import { liveLock } from "./document";

const QUEUE_PAGE = 10;

interface QueueRow {
  doc: Document;
  lock?: ReviewSession;
  lockError?: unknown;
}

/** Documents with an OCR result and no completed review, each with the
 * state of its lock. */
export function ReviewQueue() {
  const { api, me } = useApp();
  const [flash] = useState(takeFlash);
  const [groupId, setGroupId] = useState("");
  const [cursors, setCursors] = useState<string[]>([""]);
  const queue = useLoad(async () => {
    const page = await api.get<DocumentPage>("/api/documents", {
      hasOcr: true,
      reviewed: false,
      groupId,
      limit: QUEUE_PAGE,
      cursor: cursors[cursors.length - 1],
    });
    const rows: QueueRow[] = await Promise.all(
      page.documents.map(async (doc) => {
        try {
          const r = await api.get<{ reviews: ReviewSession[] }>(`/api/documents/${doc.id}/reviews`);
          return { doc, lock: liveLock(r.reviews) };
        } catch (e) {
          return { doc, lockError: e };
        }
      }),
    );
    return { rows, next: page.nextCursor };
  }, [groupId, cursors]);
  const start = useAction();
  const [starting, setStarting] = useState("");

  const begin = (doc: Document) => {
    setStarting(doc.id);
    void start
      .run(async () => {
        const s = await api.post<ReviewSession>(`/api/documents/${doc.id}/reviews`);
        navigate(`/reviews/${s.id}`);
      })
      .then((ok) => {
        setStarting("");
        if (!ok) queue.reload(); // someone else may have taken it: show their lock
      });
  };

  return (
    <>
      <PageTitle title="Review queue" lead="Documents whose OCR result waits for a person to check it. Starting a review locks the document for you; others see it as locked until you complete or abandon the review, or the lock expires." />
      {flash ? <Status>{flash}</Status> : null}
      <Section title="Waiting for review">
        <div class="form-row">
          <SelectField
            label="Group"
            value={groupId}
            options={[{ value: "", label: "All my groups" }, ...me.groups.map((g) => ({ value: g.id, label: g.name }))]}
            onValue={(v) => {
              setGroupId(v);
              setCursors([""]);
            }}
          />
        </div>
        <ErrorNote error={queue.error} action="load the review queue" />
        <ErrorNote error={start.error} action="start the review" />
        {queue.loading && !queue.data ? <Loading what="Loading the queue" /> : null}
        {queue.data ? (
          <>
            <DataTable
              caption="Documents waiting for review"
              captionHidden
              rows={queue.data.rows}
              rowKey={(r) => r.doc.id}
              empty="Nothing waits for review. Documents appear here once their OCR result is in."
              columns={[
                {
                  label: "Document",
                  cell: (r) => (
                    <Link class="file-name" href={`/documents/${r.doc.id}`}>
                      {r.doc.fileName}
                    </Link>
                  ),
                },
                { label: "Group", cell: (r) => groupName(me, r.doc.groupId) },
                { label: "Uploaded", class: "nowrap", cell: (r) => formatTime(r.doc.createdAt) },
                {
                  label: "Lock",
                  cell: (r) =>
                    r.lockError ? (
                      <span role="alert">Unknown: {r.lockError instanceof Error ? r.lockError.message : "the lock could not be read"}</span>
                    ) : !r.lock ? (
                      <Badge tone="good">Available</Badge>
                    ) : r.lock.reviewerId === me.sub ? (
                      <Badge tone="info">You, until {formatClock(r.lock.expiresAt)}</Badge>
                    ) : (
                      <span>
                        <Badge tone="warn">Locked</Badge> by <PersonName userId={r.lock.reviewerId} groupId={r.doc.groupId} /> until {formatClock(r.lock.expiresAt)}
                      </span>
                    ),
                },
                {
                  label: "Action",
                  class: "actions-cell",
                  cell: (r) =>
                    r.lock && r.lock.reviewerId === me.sub ? (
                      <Link class="btn btn-secondary btn-small" href={`/reviews/${r.lock.id}`}>
                        Continue
                      </Link>
                    ) : r.lock ? (
                      <Button class="btn-small" disabled aria-label={`Locked: ${r.doc.fileName} is locked by another reviewer`}>
                        Locked
                      </Button>
                    ) : (
                      <Button class="btn-small" variant="primary" busy={starting === r.doc.id} onClick={() => begin(r.doc)} aria-label={`Start review of ${r.doc.fileName}`}>
                        Start review
                      </Button>
                    ),
                },
              ]}
            />
            <Pager
              label="Queue pages"
              page={cursors.length}
              hasPrev={cursors.length > 1}
              hasNext={!!queue.data.next}
              onPrev={() => setCursors(cursors.slice(0, -1))}
              onNext={() => queue.data?.next && setCursors([...cursors, queue.data.next])}
            />
          </>
        ) : null}
      </Section>
    </>
  );
}

/** One field of an OCR result a reviewer sees: its path in the result
 * (what a correction names), a label for people, its text, and the
 * engine's confidence in it when the result gives one. */
export interface OcrField {
  path: string;
  label: string;
  value: string;
  confidence?: number;
}

/** fieldLabel turns a path such as "lineItems[0].unitPrice" into words:
 * "Line items 1 › Unit price". */
export function fieldLabel(path: string): string {
  const words = (k: string) => {
    const w = k
      .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
      .replace(/[_-]+/g, " ")
      .trim()
      .toLowerCase();
    return w ? w[0].toUpperCase() + w.slice(1) : w;
  };
  const parts = path
    .replace(/\[(\d+)\]/g, (_, n: string) => ` ${Number(n) + 1}`)
    .split(".")
    .filter((p) => p !== "" && p !== "value")
    .map(words);
  return parts.length ? parts.join(" › ") : path;
}

const isConfidence = (k: string) => /^(confidence|score)$/i.test(k);

/** The leaves of an OCR result as fields a reviewer corrects (at most
 * 300). A leaf named confidence (or score) is not a field: it is the
 * confidence of its siblings, shown beside them and never edited; an
 * object {value, confidence} is one field. */
export function ocrFields(result: unknown): OcrField[] {
  const out: OcrField[] = [];
  const text = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));
  const walk = (v: unknown, path: string, confidence?: number) => {
    if (out.length >= 300) return;
    if (v !== null && typeof v === "object") {
      if (Array.isArray(v)) {
        if (v.length === 0) out.push({ path, label: fieldLabel(path), value: "[]", confidence });
        v.forEach((x, i) => walk(x, `${path}[${i}]`, confidence));
        return;
      }
      const entries = Object.entries(v);
      if (entries.length === 0) out.push({ path, label: fieldLabel(path), value: "{}", confidence });
      const conf = entries.find(([k, x]) => isConfidence(k) && typeof x === "number");
      const own = conf ? (conf[1] as number) : confidence;
      for (const [k, x] of entries) {
        if (conf && k === conf[0]) continue;
        walk(x, path ? `${path}.${k}` : k, own);
      }
      return;
    }
    out.push({ path, label: fieldLabel(path), value: text(v), confidence });
  };
  walk(result, "");
  return out.filter((f) => f.path !== "");
}

function confidenceText(c: number): string {
  return c <= 1 ? `${Math.round(c * 100)}%` : String(c);
}

export function ReviewSessionPage({ id }: { id: string }) {
  const { api, me } = useApp();
  const session = useLoad(async () => {
    const s = await api.get<ReviewSession>(`/api/reviews/${encodeURIComponent(id)}`);
    const doc = await api.get<Document>(`/api/documents/${s.documentId}`);
    const ocr = doc.hasOcr ? await api.get<OCRResult>(`/api/documents/${doc.id}/ocr`) : null;
    return { s, doc, ocr };
  }, [id]);
  const end = useAction();
  const data = session.data;
  const expired = data ? (parseTime(data.s.expiresAt)?.getTime() ?? 0) <= Date.now() : false;
  const editable = !!data && data.s.status === "ACTIVE" && data.s.reviewerId === me.sub && !expired;

  const finish = (how: "complete" | "abandon") =>
    void end.run(async () => {
      if (!data) return;
      await api.post<ReviewSession>(`/api/reviews/${data.s.id}/${how}`);
      setFlash(how === "complete" ? `Review of ${data.doc.fileName} completed.` : `Review of ${data.doc.fileName} abandoned; the document is free for others.`);
      navigate("/review");
    });

  return (
    <>
      <p class="crumbs">
        <Link href="/review">Review queue</Link> /
      </p>
      <PageTitle title={data ? `Review of ${data.doc.fileName}` : "Review"}>
        {editable ? (
          <>
            <Button variant="primary" busy={end.busy} onClick={() => finish("complete")}>
              Complete review
            </Button>
            <ConfirmButton label="Abandon" question="Abandon this review? Your corrections stay recorded." onConfirm={() => finish("abandon")} busy={end.busy} />
          </>
        ) : null}
      </PageTitle>
      <ErrorNote error={session.error} action="load the review" />
      <ErrorNote error={end.error} action="end the review" />
      {session.loading && !data ? <Loading what="Loading the review" /> : null}
      {data ? (
        <>
          <Section title="Session">
            {data.s.status === "ACTIVE" && data.s.reviewerId !== me.sub && !expired ? (
              <div class="note note-warn">
                <p>
                  This document is locked: <PersonName userId={data.s.reviewerId} groupId={data.s.groupId} /> is reviewing it until {formatClock(data.s.expiresAt)}.
                </p>
              </div>
            ) : null}
            {data.s.status === "ACTIVE" && expired ? (
              <div class="note note-warn">
                <p>The lock of this session expired at {formatClock(data.s.expiresAt)}. Start a new review from the document to go on.</p>
              </div>
            ) : null}
            <Properties
              items={[
                ["Document", <Link href={`/documents/${data.doc.id}`}>{data.doc.fileName}</Link>],
                ["Group", groupName(me, data.s.groupId)],
                ["Reviewer", <PersonName userId={data.s.reviewerId} groupId={data.s.groupId} />],
                ["Status", data.s.status.toLowerCase()],
                ["Started", formatTime(data.s.createdAt)],
                [data.s.status === "ACTIVE" ? "Lock held until" : "Ended", data.s.status === "ACTIVE" ? formatTime(data.s.expiresAt) : formatTime(data.s.endedAt)],
              ]}
            />
          </Section>
          {editable ? (
            <CorrectionForm
              session={data.s}
              ocr={data.ocr}
              onSaved={(s) => {
                session.set({ ...data, s: { ...data.s, expiresAt: s.expiresAt ?? data.s.expiresAt, corrections: s.corrections } });
              }}
            />
          ) : null}
          <Section title="Corrections">
            <DataTable
              caption="Corrections made in this session"
              captionHidden
              rows={data.s.corrections ?? []}
              rowKey={(c) => c.id}
              empty="No corrections in this session."
              columns={[
                { label: "Field", cell: (c) => fieldLabel(c.field) },
                { label: "OCR value", cell: (c) => c.originalValue },
                { label: "Corrected value", cell: (c) => <strong>{c.value}</strong> },
                { label: "When", class: "nowrap", cell: (c) => formatTime(c.createdAt) },
              ]}
            />
          </Section>
        </>
      ) : null}
    </>
  );
}

function CorrectionForm({ session, ocr, onSaved }: { session: ReviewSession; ocr: OCRResult | null; onSaved: (s: Partial<ReviewSession>) => void }) {
  const { api } = useApp();
  const fields = useMemo(() => (ocr ? ocrFields(ocr.result) : []), [ocr]);
  // The latest correction of each field is its current value.
  const corrected = useMemo(() => {
    const m = new Map<string, string>();
    for (const c of session.corrections ?? []) m.set(c.field, c.value);
    return m;
  }, [session.corrections]);
  const [values, setValues] = useState<Record<string, string>>({});
  const [extraField, setExtraField] = useState("");
  const [extraValue, setExtraValue] = useState("");
  const [saved, setSaved] = useState("");
  const [formError, setFormError] = useState("");
  const save = useAction();

  const submit = (e: Event) => {
    e.preventDefault();
    setSaved("");
    setFormError("");
    const changes: { field: string; originalValue: string; value: string }[] = [];
    for (const { path: field, value: original } of fields) {
      const v = values[field];
      const current = corrected.get(field) ?? original;
      if (v !== undefined && v !== current) changes.push({ field, originalValue: original, value: v });
    }
    if (extraField.trim()) changes.push({ field: extraField.trim(), originalValue: "", value: extraValue });
    if (changes.length === 0) {
      setFormError("Change at least one value, or name a field to add, before saving.");
      return;
    }
    void save.run(async () => {
      const r = await api.post<{ corrections: Correction[] }>(`/api/reviews/${session.id}/corrections`, { corrections: changes });
      const full = await api.get<ReviewSession>(`/api/reviews/${session.id}`);
      onSaved({ expiresAt: full.expiresAt, corrections: full.corrections });
      setValues({});
      setExtraField("");
      setExtraValue("");
      setSaved(`Saved ${r.corrections.length === 1 ? "1 correction" : `${r.corrections.length} corrections`}. The lock now holds until ${formatClock(full.expiresAt)}.`);
    });
  };

  return (
    <Section title="Correct the OCR result">
      <form onSubmit={submit} class="form" aria-label="Corrections">
        {fields.length === 0 ? <p class="empty">The OCR result has no fields to correct. Add a correction for a field by name below.</p> : null}
        {fields.length > 0 ? (
          <div class="corrections-grid" role="group" aria-label="OCR fields">
            {fields.map(({ path: field, label, value: original, confidence }, i) => {
              const current = corrected.get(field) ?? original;
              const inputId = `corr-${i}`;
              return (
                <div class="correction-row" key={field}>
                  <label class="field-name" for={inputId}>
                    {label}
                    <span class="field-path">{field}</span>
                  </label>
                  <span class="original">
                    OCR: {original === "" ? <em>empty</em> : original}
                    {confidence !== undefined ? <span class="cell-sub confidence">Confidence {confidenceText(confidence)}</span> : null}
                    {corrected.has(field) ? <span class="cell-sub">corrected to “{corrected.get(field)}”</span> : null}
                  </span>
                  <input id={inputId} value={values[field] ?? current} onInput={(e) => setValues({ ...values, [field]: e.currentTarget.value })} />
                </div>
              );
            })}
          </div>
        ) : null}
        <div class="form-row">
          <TextField label="Another field (name)" value={extraField} onValue={setExtraField} maxLength={200} hint="For a value the OCR missed." />
          <TextField label="Its value" value={extraValue} onValue={setExtraValue} />
        </div>
        {formError ? (
          <div class="note note-error" role="alert">
            <p>{formError}</p>
          </div>
        ) : null}
        <ErrorNote error={save.error} action="save the corrections" />
        <Status>{saved}</Status>
        <div class="actions">
          <Button type="submit" variant="primary" busy={save.busy}>
            Save corrections
          </Button>
        </div>
      </form>
    </Section>
  );
}
