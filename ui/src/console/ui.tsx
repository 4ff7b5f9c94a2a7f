// Pieces the console's pages share beyond ../shared: a JSON editor whose
// parse and API errors show in place, and formatting.

import type { ComponentChildren } from "preact";
import { useId } from "preact/hooks";
import { ApiError } from "../shared/api";
import { formatDateTime, formatNumber, parseTime } from "../shared/format";

/** Parses JSON text; the error says where it broke. */
export function parseJSON(text: string): { value?: unknown; error?: string } {
  if (text.trim() === "") return { error: "Enter a JSON object." };
  try {
    return { value: JSON.parse(text) };
  } catch (e) {
    return { error: `This is not valid JSON: ${e instanceof Error ? e.message : String(e)}` };
  }
}

/** A textarea for a JSON document, with its problem (a parse error, or
 * what the API said about it) under it and linked to it. */
export function JsonEditor({
  label,
  value,
  onValue,
  problem,
  rows = 14,
  hint,
}: {
  label: string;
  value: string;
  onValue: (v: string) => void;
  problem?: unknown;
  rows?: number;
  hint?: ComponentChildren;
}) {
  const id = useId();
  let text = "";
  if (problem instanceof ApiError) text = problem.message + (problem.status ? ` (${problem.status} ${problem.reason})` : "");
  else if (problem instanceof Error) text = problem.message;
  else if (typeof problem === "string") text = problem;
  const described = [hint ? `${id}-hint` : "", text ? `${id}-err` : ""].filter(Boolean).join(" ") || undefined;
  return (
    <div class="field json-field">
      <label for={id}>{label}</label>
      <textarea
        id={id}
        class="mono json"
        rows={rows}
        spellcheck={false}
        value={value}
        aria-invalid={text ? "true" : undefined}
        aria-describedby={described}
        onInput={(e) => onValue(e.currentTarget.value)}
      />
      {hint ? (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      ) : null}
      {text ? (
        <p class="field-error" id={`${id}-err`} role="alert">
          {text}
        </p>
      ) : null}
    </div>
  );
}

export function pretty(v: unknown): string {
  return JSON.stringify(v, null, 2);
}

export function when(s: unknown): string {
  if (typeof s !== "string" || !s) return "";
  const d = parseTime(s) ?? new Date(s);
  if (Number.isNaN(d.getTime())) return s;
  return formatDateTime(d);
}

export function num(n: unknown): string {
  return typeof n === "number" ? formatNumber(n) : "0";
}

/** Strips server-kept and read-only keys before a record is sent back. */
export function editable(rec: Record<string, unknown>, drop: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(rec)) if (!drop.includes(k)) out[k] = v;
  return out;
}
