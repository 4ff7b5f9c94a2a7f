// The list-and-edit pattern the record pages share: a filter form that
// becomes the API's filter (where, order, skip, limit), a paged table, and
// a JSON editor for one record whose API errors show in place.

import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { Button, ErrorNote, Loading, SelectField, Status } from "../shared/components";
import { useAction, useLoad } from "../shared/hooks";
import type { Client, Filter } from "./client";
import { JsonEditor, parseJSON, pretty } from "./ui";

export const pageSizes = [10, 25, 50, 100];

export interface ListState {
  where: Record<string, unknown>;
  order: string;
  skip: number;
  limit: number;
}

/** "created DESC" (how the sort menus name an order) in the form
 * NotifyBC 6 takes: [["created","desc"]]. */
export function toOrder(o: string): [string, string][] {
  const [field, dir = "ASC"] = o.split(" ");
  return [[field, dir.toLowerCase()]];
}

/** Loads one page of path with the filter, and the total count. */
export function usePage<T>(client: Client, path: string, s: ListState, tick: number) {
  return useLoad(async () => {
    const filter: Filter = { where: s.where, order: toOrder(s.order), skip: s.skip, limit: s.limit };
    if (Object.keys(s.where).length === 0) delete filter.where;
    const [rows, total] = await Promise.all([client.list<T>(path, filter), client.count(path, s.where)]);
    return { rows, total };
  }, [path, JSON.stringify(s), tick]);
}

export function Paging({ s, total, onChange, label }: { s: ListState; total: number; onChange: (s: ListState) => void; label: string }) {
  const first = total === 0 ? 0 : s.skip + 1;
  const last = Math.min(total, s.skip + s.limit);
  return (
    <nav class="pager" aria-label={label}>
      <Button onClick={() => onChange({ ...s, skip: Math.max(0, s.skip - s.limit) })} disabled={s.skip === 0}>
        ← Previous
      </Button>
      <span class="pager-page" role="status">
        {first}–{last} of {total}
      </span>
      <Button onClick={() => onChange({ ...s, skip: s.skip + s.limit })} disabled={s.skip + s.limit >= total}>
        Next →
      </Button>
      <SelectField
        label="Per page"
        class="inline-select"
        value={String(s.limit)}
        options={pageSizes.map((n) => ({ value: String(n), label: String(n) }))}
        onValue={(v) => onChange({ ...s, skip: 0, limit: Number(v) })}
      />
    </nav>
  );
}

/** Turns the filter form's fields into a where: empty values are left
 * out; an extra JSON where is merged in. */
export function buildWhere(fields: Record<string, string>, extra: string): { where?: Record<string, unknown>; error?: string } {
  const where: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) if (v.trim() !== "") where[k] = v.trim();
  if (extra.trim() !== "") {
    const p = parseJSON(extra);
    if (p.error) return { error: p.error };
    if (typeof p.value !== "object" || p.value === null || Array.isArray(p.value)) return { error: "The where must be a JSON object, such as {\"state\": \"confirmed\"}." };
    Object.assign(where, p.value);
  }
  return { where };
}

/** A record's JSON in an editor with Save (and Cancel); the API's answer
 * to a bad record is shown under the editor. */
export function RecordEditor({
  title,
  initial,
  save,
  onDone,
  onCancel,
  saveLabel = "Save",
  hint,
  children,
}: {
  title: string;
  initial: unknown;
  save: (value: unknown) => Promise<unknown>;
  onDone: (result: unknown) => void;
  onCancel: () => void;
  saveLabel?: string;
  hint?: ComponentChildren;
  children?: ComponentChildren;
}) {
  const [text, setText] = useState(() => pretty(initial));
  const [problem, setProblem] = useState<unknown>(undefined);
  const act = useAction();
  const ref = useRef<HTMLElement>(null);
  useEffect(() => {
    ref.current?.querySelector<HTMLElement>("h2")?.focus();
  }, []);
  const submit = async (e: Event) => {
    e.preventDefault();
    const p = parseJSON(text);
    if (p.error) {
      setProblem(p.error);
      return;
    }
    setProblem(undefined);
    let result: unknown;
    const ok = await act.run(async () => {
      result = await save(p.value);
    });
    if (ok) onDone(result);
  };
  useEffect(() => {
    if (act.error) setProblem(act.error);
  }, [act.error]);
  return (
    <section class="card editor" aria-labelledby="editor-title" ref={ref}>
      <div class="card-head">
        <h2 id="editor-title" tabIndex={-1}>
          {title}
        </h2>
      </div>
      {children}
      <form
        class="form"
        onSubmit={submit}
        onKeyDown={(e) => {
          if (e.key === "Escape") onCancel();
        }}
      >
        <JsonEditor label="Record (JSON)" value={text} onValue={setText} problem={problem} hint={hint} />
        <div class="actions">
          <Button type="submit" variant="primary" busy={act.busy}>
            {saveLabel}
          </Button>
          <Button variant="quiet" onClick={onCancel}>
            Cancel
          </Button>
        </div>
      </form>
    </section>
  );
}

/** Loading, error and done messages of a list page. */
export function ListStatus({ loading, error, done, what }: { loading: boolean; error: unknown; done: string; what: string }) {
  return (
    <>
      <ErrorNote error={error} action={`load the ${what}`} />
      {loading ? <Loading what={`Loading the ${what}`} /> : null}
      <Status>{done}</Status>
    </>
  );
}
