import { Badge, Button, ConfirmButton, DataTable, ErrorNote, Loading, PageTitle, Properties, Section } from "../../shared/components";
import { formatBytes, formatClock, formatTime, parseTime } from "../../shared/format";
import { useAction, useLoad } from "../../shared/hooks";
import { Link, navigate } from "../../shared/router";
import { groupName, useApp } from "../context";
import { setFlash } from "../flash";
import { PersonName } from "../people";
import type { Document, OCRResult, ReviewSession } from "../types";

export function DocumentPage({ id }: { id: string }) {
  const { api, me } = useApp();
  const doc = useLoad(() => api.get<Document>(`/api/documents/${encodeURIComponent(id)}`), [id]);
  const del = useAction();
  const d = doc.data;

  return (
    <>
      <p class="crumbs">
        <Link href="/documents">Documents</Link> /
      </p>
      <PageTitle title={d ? d.fileName : "Document"}>
        {d ? (
          <>
            <a class="btn btn-primary" href={`/api/documents/${d.id}/content`} download={d.fileName}>
              Download
            </a>
            <ConfirmButton
              label="Delete"
              question={`Delete ${d.fileName}?`}
              busy={del.busy}
              onConfirm={() =>
                void del.run(async () => {
                  await api.delete(`/api/documents/${d.id}`);
                  setFlash(`Deleted ${d.fileName}.`);
                  navigate("/documents");
                })
              }
            />
          </>
        ) : null}
      </PageTitle>
      <ErrorNote error={doc.error} action="load the document" />
      <ErrorNote error={del.error} action="delete the document" />
      {doc.loading && !d ? <Loading what="Loading the document" /> : null}
      {d ? (
        <>
          <Section title="Details">
            <Properties
              items={[
                ["Group", groupName(me, d.groupId)],
                ["Type", d.contentType],
                ["Size", formatBytes(d.size)],
                ["Uploaded", formatTime(d.createdAt)],
                ["Uploaded by", <PersonName userId={d.uploadedBy} groupId={d.groupId} />],
                ["OCR result", d.hasOcr ? <Badge tone="good">Ready</Badge> : <Badge>Not yet</Badge>],
                ["SHA-256", <code class="mono">{d.sha256}</code>],
              ]}
            />
          </Section>
          <OCRSection doc={d} />
          <ReviewsSection doc={d} />
        </>
      ) : null}
    </>
  );
}

function OCRSection({ doc }: { doc: Document }) {
  const { api } = useApp();
  // A document without a result would answer 404: it is not asked for.
  const ocr = useLoad(() => (doc.hasOcr ? api.get<OCRResult>(`/api/documents/${doc.id}/ocr`) : Promise.resolve(null)), [doc.id, doc.hasOcr]);
  return (
    <Section title="OCR result">
      {!doc.hasOcr ? (
        <p class="empty">
          No OCR result yet. An OCR engine writes it with the group's API key (<code>PUT /api/documents/{"{id}"}/ocr</code>).
        </p>
      ) : null}
      <ErrorNote error={ocr.error} action="load the OCR result" />
      {doc.hasOcr && ocr.loading && !ocr.data ? <Loading what="Loading the OCR result" /> : null}
      {ocr.data ? (
        <>
          <Properties
            items={[
              ["Engine", ocr.data.engine],
              ["Written", formatTime(ocr.data.updatedAt)],
              ["Written by", <PersonName userId={ocr.data.writtenBy} groupId={doc.groupId} />],
            ]}
          />
          <h3 class="sub-head" id="ocr-json">
            Result
          </h3>
          <pre class="code-block" tabIndex={0} aria-labelledby="ocr-json">
            {JSON.stringify(ocr.data.result, null, 2)}
          </pre>
        </>
      ) : null}
    </Section>
  );
}

/** The live lock on a document, if any: an ACTIVE session not past its
 * expiry (an expired one is taken over by the next reviewer). */
export function liveLock(sessions: ReviewSession[]): ReviewSession | undefined {
  const now = Date.now();
  return sessions.find((s) => s.status === "ACTIVE" && (parseTime(s.expiresAt)?.getTime() ?? 0) > now);
}

const statusTone: Record<string, "good" | "warn" | "bad" | "neutral" | "info"> = {
  ACTIVE: "info",
  COMPLETED: "good",
  ABANDONED: "neutral",
  EXPIRED: "warn",
};

function ReviewsSection({ doc }: { doc: Document }) {
  const { api, me } = useApp();
  const reviews = useLoad(() => api.get<{ reviews: ReviewSession[] }>(`/api/documents/${doc.id}/reviews`), [doc.id]);
  const start = useAction();
  const lock = reviews.data ? liveLock(reviews.data.reviews) : undefined;
  const mine = lock && lock.reviewerId === me.sub;

  return (
    <Section title="Review">
      <ErrorNote error={reviews.error} action="load the review sessions" />
      <ErrorNote error={start.error} action="start a review" />
      {reviews.loading && !reviews.data ? <Loading what="Loading review sessions" /> : null}
      {reviews.data ? (
        <>
          <div class="lock">
            {lock && !mine ? (
              <p>
                <Badge tone="warn">Locked</Badge> Being reviewed by <PersonName userId={lock.reviewerId} groupId={doc.groupId} /> until {formatClock(lock.expiresAt)}.
              </p>
            ) : null}
            {mine ? (
              <>
                <p>
                  <Badge tone="info">In review</Badge> You are reviewing this document (lock held until {formatClock(lock!.expiresAt)}).
                </p>
                <Link class="btn btn-primary" href={`/reviews/${lock!.id}`}>
                  Continue the review
                </Link>
              </>
            ) : null}
            {!lock ? (
              <Button
                variant="primary"
                busy={start.busy}
                onClick={() =>
                  void start
                    .run(async () => {
                      const s = await api.post<ReviewSession>(`/api/documents/${doc.id}/reviews`);
                      navigate(`/reviews/${s.id}`);
                    })
                    .then((ok) => {
                      if (!ok) reviews.reload();
                    })
                }
              >
                Start a review
              </Button>
            ) : null}
          </div>
          <DataTable
            caption="Review sessions"
            rows={reviews.data.reviews}
            rowKey={(s) => s.id}
            empty="This document has not been reviewed yet."
            columns={[
              { label: "Reviewer", cell: (s) => <PersonName userId={s.reviewerId} groupId={doc.groupId} /> },
              { label: "Status", cell: (s) => <Badge tone={statusTone[s.status] ?? "neutral"}>{s.status.toLowerCase()}</Badge> },
              { label: "Started", class: "nowrap", cell: (s) => formatTime(s.createdAt) },
              { label: "Ended", class: "nowrap", cell: (s) => (s.endedAt ? formatTime(s.endedAt) : s.status === "ACTIVE" ? `lock until ${formatClock(s.expiresAt)}` : "") },
              {
                label: "Session",
                class: "actions-cell",
                cell: (s) => (
                  <Link class="btn btn-quiet btn-small" href={`/reviews/${s.id}`}>
                    Open
                  </Link>
                ),
              },
            ]}
          />
        </>
      ) : null}
    </Section>
  );
}
