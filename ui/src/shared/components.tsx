// Building blocks every UI shares: messages, form fields, buttons, tables,
// the pager and the copy-once secret. Markup only; the look is styles.css.

import type { ComponentChildren, JSX } from "preact";
import { useEffect, useId, useRef, useState } from "preact/hooks";
import { ApiError } from "./api";

/** What went wrong, in words, where the person is looking. */
export function ErrorNote({ error, action }: { error: unknown; action?: string }) {
  if (error === undefined || error === null) return null;
  let message = "Something went wrong.";
  let detail = "";
  if (error instanceof ApiError) {
    message = error.message;
    if (error.status) detail = `${error.status} ${error.reason}`.trim();
    if (error.status === 429 && error.retryAfter) detail += ` · try again in ${error.retryAfter} s`;
  } else if (error instanceof Error && error.message) {
    message = error.message;
  }
  return (
    <div class="note note-error" role="alert">
      <p>
        {action ? <strong>Could not {action}: </strong> : null}
        {message}
        {/[.!?]$/.test(message) ? "" : "."}
      </p>
      {detail ? <p class="note-detail">{detail}</p> : null}
    </div>
  );
}

/** A polite live message (success, progress). Always rendered, so screen
 * readers hear the text that appears in it. */
export function Status({ children, kind = "success" }: { children?: ComponentChildren; kind?: "success" | "info" }) {
  return (
    <div class={children ? `note note-${kind}` : "note-empty"} role="status">
      {children}
    </div>
  );
}

export function Loading({ what = "Loading" }: { what?: string }) {
  return (
    <p class="loading" role="status">
      <span class="spinner" aria-hidden="true" />
      {what}…
    </p>
  );
}

/** The app's name: its page's <title> as served, read once at start. */
const appName = document.title;

/** Names the browser tab after the page shown: "Page · app". */
export function setPageTitle(title: string) {
  document.title = `${title} · ${appName}`;
}

/** The page's heading, which also names the browser tab. */
export function PageTitle({ title, lead, children }: { title: string; lead?: ComponentChildren; children?: ComponentChildren }) {
  useEffect(() => setPageTitle(title), [title]);
  return (
    <header class="page-head">
      <div>
        <h1 id="page-title" tabIndex={-1}>
          {title}
        </h1>
        {lead ? <p class="lead">{lead}</p> : null}
      </div>
      {children ? <div class="page-actions">{children}</div> : null}
    </header>
  );
}

export function Section({ title, children, actions, id }: { title: string; children: ComponentChildren; actions?: ComponentChildren; id?: string }) {
  const hid = useId();
  return (
    <section class="card" aria-labelledby={hid} id={id}>
      <div class="card-head">
        <h2 id={hid}>{title}</h2>
        {actions ? <div class="card-actions">{actions}</div> : null}
      </div>
      {children}
    </section>
  );
}

interface FieldProps {
  label: string;
  hint?: ComponentChildren;
  class?: string;
  children: (id: string, describedBy: string | undefined) => ComponentChildren;
}

/** A label, its control and an optional hint the control is described by. */
export function Field({ label, hint, children, class: cls }: FieldProps) {
  const id = useId();
  const hintId = hint ? `${id}-hint` : undefined;
  return (
    <div class={`field ${cls ?? ""}`}>
      <label for={id}>{label}</label>
      {children(id, hintId)}
      {hint ? (
        <p class="hint" id={hintId}>
          {hint}
        </p>
      ) : null}
    </div>
  );
}

/** The attributes the field components pass to their control. */
interface ControlProps {
  label: string;
  hint?: ComponentChildren;
  value: string;
  onValue: (v: string) => void;
  class?: string;
  required?: boolean;
  disabled?: boolean;
  readOnly?: boolean;
  maxLength?: number;
  placeholder?: string;
  spellcheck?: boolean;
  autoComplete?: string;
}

type InputProps = ControlProps & {
  type?: "text" | "search" | "date" | "email" | "url";
  /** Values to offer as the person types (a datalist); any other value
   * is still accepted. */
  suggestions?: string[];
};

export function TextField({ label, hint, value, onValue, class: cls, type = "text", suggestions, ...rest }: InputProps) {
  return (
    <Field label={label} hint={hint} class={cls}>
      {(id, desc) => (
        <>
          {/* (Preact types each input type apart; all of ours take these attributes.) */}
          <input id={id} aria-describedby={desc} value={value} onInput={(e) => onValue(e.currentTarget.value)} type={type as "text"} list={suggestions?.length ? `${id}-list` : undefined} {...rest} />
          {suggestions?.length ? (
            <datalist id={`${id}-list`}>
              {suggestions.map((s) => (
                <option key={s} value={s} />
              ))}
            </datalist>
          ) : null}
        </>
      )}
    </Field>
  );
}

export interface Option {
  value: string;
  label: string;
}

type SelectProps = Omit<ControlProps, "maxLength" | "placeholder" | "spellcheck" | "autoComplete" | "readOnly"> & { options: Option[] };

export function SelectField({ label, hint, value, options, onValue, class: cls, ...rest }: SelectProps) {
  return (
    <Field label={label} hint={hint} class={cls}>
      {(id, desc) => (
        <select id={id} aria-describedby={desc} value={value} onChange={(e) => onValue(e.currentTarget.value)} {...rest}>
          {options.map((o) => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

type AreaProps = Omit<ControlProps, "autoComplete"> & { rows?: number };

export function TextAreaField({ label, hint, value, onValue, class: cls, ...rest }: AreaProps) {
  return (
    <Field label={label} hint={hint} class={cls}>
      {(id, desc) => (
        <textarea id={id} aria-describedby={desc} value={value} onInput={(e) => onValue(e.currentTarget.value)} {...rest} />
      )}
    </Field>
  );
}

type ButtonProps = JSX.IntrinsicElements["button"] & {
  variant?: "primary" | "secondary" | "danger" | "quiet";
  busy?: boolean;
};

/** A button; while busy it stays focusable but does nothing and says so. */
export function Button({ variant = "secondary", busy, children, class: cls, disabled, type = "button", ...rest }: ButtonProps) {
  return (
    <button
      type={type}
      class={`btn btn-${variant} ${cls ?? ""}`}
      disabled={disabled}
      aria-busy={busy ? "true" : undefined}
      aria-disabled={busy ? "true" : undefined}
      {...rest}
      onClick={busy ? (e) => e.preventDefault() : rest.onClick}
    >
      {busy ? <span class="spinner" aria-hidden="true" /> : null}
      {children}
    </button>
  );
}

/** A destructive action asked twice, in the page (no modal dialog): the
 * first press shows the question with "Yes" focused, Escape or Cancel
 * goes back. */
export function ConfirmButton({
  label,
  question,
  yes,
  onConfirm,
  busy,
  variant = "danger",
  disabled,
}: {
  label: string;
  question: string;
  yes?: string;
  onConfirm: () => void;
  busy?: boolean;
  variant?: "danger" | "secondary" | "primary";
  disabled?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  const yesRef = useRef<HTMLButtonElement>(null);
  const askRef = useRef<HTMLButtonElement>(null);
  const wasAsking = useRef(false);
  useEffect(() => {
    if (asking) yesRef.current?.focus();
    else if (wasAsking.current) askRef.current?.focus();
    wasAsking.current = asking;
  }, [asking]);
  if (!asking) {
    return (
      <Button variant={variant} busy={busy} disabled={disabled} onClick={() => setAsking(true)} ref={askRef}>
        {label}
      </Button>
    );
  }
  return (
    <span
      class="confirm"
      role="group"
      aria-label={question}
      onKeyDown={(e) => {
        if (e.key === "Escape") setAsking(false);
      }}
    >
      <span class="confirm-q">{question}</span>
      <Button
        variant={variant}
        ref={yesRef}
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        {yes ?? `Yes, ${label.toLowerCase()}`}
      </Button>
      <Button variant="quiet" onClick={() => setAsking(false)}>
        Cancel
      </Button>
    </span>
  );
}

export interface Column<T> {
  label: string;
  cell: (row: T) => ComponentChildren;
  class?: string;
}

/** A table that becomes a list of cards on narrow screens (each cell
 * names its column there). */
export function DataTable<T>({
  caption,
  columns,
  rows,
  rowKey,
  empty,
  captionHidden,
}: {
  caption: string;
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  empty: ComponentChildren;
  captionHidden?: boolean;
}) {
  if (rows.length === 0) return <p class="empty">{empty}</p>;
  return (
    <table class="table">
      <caption class={captionHidden ? "visually-hidden" : undefined}>{caption}</caption>
      <thead>
        <tr>
          {columns.map((c) => (
            <th scope="col" key={c.label} class={c.class}>
              {c.label}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={rowKey(r)}>
            {columns.map((c) => (
              <td key={c.label} data-label={c.label} class={c.class}>
                {c.cell(r)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Previous / next for cursor paging; the caller keeps the cursors. */
export function Pager({ page, hasPrev, hasNext, onPrev, onNext, label }: { page: number; hasPrev: boolean; hasNext: boolean; onPrev: () => void; onNext: () => void; label: string }) {
  if (!hasPrev && !hasNext) return null;
  return (
    <nav class="pager" aria-label={label}>
      <Button onClick={onPrev} disabled={!hasPrev}>
        ← Previous
      </Button>
      <span class="pager-page">Page {page}</span>
      <Button onClick={onNext} disabled={!hasNext}>
        Next →
      </Button>
    </nav>
  );
}

/** A secret shown once (a new API key): selectable text and a copy
 * button, with the warning that it will not be shown again. */
export function CopyOnce({ label, value, warning }: { label: string; value: string; warning: ComponentChildren }) {
  const id = useId();
  const [copied, setCopied] = useState<"" | "yes" | "no">("");
  const inputRef = useRef<HTMLInputElement>(null);
  useEffect(() => {
    inputRef.current?.focus();
    inputRef.current?.select();
  }, [value]);
  const copy = () => {
    const done = (ok: boolean) => setCopied(ok ? "yes" : "no");
    if (!navigator.clipboard) {
      done(false);
      return;
    }
    navigator.clipboard.writeText(value).then(
      () => done(true),
      () => done(false),
    );
  };
  return (
    <div class="secret">
      <label for={id}>{label}</label>
      <div class="secret-row">
        <input id={id} ref={inputRef} class="mono" readOnly value={value} aria-describedby={`${id}-warn`} onFocus={(e) => e.currentTarget.select()} />
        <Button variant="primary" onClick={copy}>
          Copy
        </Button>
      </div>
      <p class="hint" id={`${id}-warn`}>
        {warning}
      </p>
      <p role="status" class="hint">
        {copied === "yes" ? "Copied to the clipboard." : copied === "no" ? "The browser did not allow copying: select the key and copy it." : ""}
      </p>
    </div>
  );
}

/** A definition list of a resource's properties. */
export function Properties({ items }: { items: [string, ComponentChildren][] }) {
  return (
    <dl class="props">
      {items.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v === "" || v === null || v === undefined ? <span class="muted">—</span> : v}</dd>
        </div>
      ))}
    </dl>
  );
}

export function Badge({ children, tone = "neutral" }: { children: ComponentChildren; tone?: "neutral" | "good" | "warn" | "bad" | "info" }) {
  return <span class={`badge badge-${tone}`}>{children}</span>;
}
