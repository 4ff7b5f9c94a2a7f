// Formatting for people: sizes, times, event values.

const units = ["bytes", "KB", "MB", "GB"];

export function formatBytes(n: number): string {
  if (!Number.isFinite(n) || n < 0) return "";
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  if (i === 0) return n === 1 ? "1 byte" : `${n} bytes`;
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

// Both UIs format with these: the browser's own locale (undefined), one set
// of options, so a time reads the same in either.
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const numbers = new Intl.NumberFormat(undefined);
const dateOnly = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" });
const timeOnly = new Intl.DateTimeFormat(undefined, { timeStyle: "short" });

/** An RFC 3339 time in the reader's zone; "" for none. */
export function formatTime(iso: string | null | undefined): string {
  const d = parseTime(iso);
  return d ? dateTime.format(d) : "";
}

/** A Date as formatTime writes it. */
export function formatDateTime(d: Date): string {
  return dateTime.format(d);
}

/** A count in the reader's locale. */
export function formatNumber(n: number): string {
  return numbers.format(n);
}

export function formatClock(iso: string | null | undefined): string {
  const d = parseTime(iso);
  return d ? timeOnly.format(d) : "";
}

/** A calendar date YYYY-MM-DD, as a date (no zone shift). */
export function formatDate(ymd: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(ymd);
  if (!m) return ymd;
  return dateOnly.format(new Date(Date.UTC(+m[1], +m[2] - 1, +m[3])));
}

/** Parses RFC 3339 and the event type's UTC datetimes, whose hour may
 * have one digit and whose fraction up to seven. */
export function parseTime(iso: string | null | undefined): Date | null {
  if (!iso) return null;
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/.exec(iso);
  if (!m) return null;
  const frac = (m[5] ?? "").slice(0, 3).padEnd(3, "0");
  const d = new Date(`${m[1]}T${m[2].padStart(2, "0")}:${m[3]}:${m[4]}.${frac}${m[6]}`);
  return Number.isNaN(d.getTime()) ? null : d;
}

/** The event type's JSON: a datetime or a date form. */
export interface EventValue {
  start_date?: string;
  end_date?: string;
  start_datetime?: string;
  end_datetime?: string;
}

export function formatEvent(e: EventValue | null | undefined): string {
  if (!e) return "";
  if (e.start_datetime) {
    const s = formatTime(e.start_datetime);
    return e.end_datetime ? `${s} – ${formatTime(e.end_datetime)}` : s;
  }
  if (e.start_date) {
    const s = formatDate(e.start_date);
    return e.end_date && e.end_date !== e.start_date ? `${s} – ${formatDate(e.end_date)}` : s;
  }
  return "";
}

/** Today as YYYY-MM-DD in the reader's zone. */
export function todayYMD(offsetDays = 0): string {
  const d = new Date();
  d.setDate(d.getDate() + offsetDays);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

/** The start of a local calendar day (from a date input) as RFC 3339. */
export function dayStartISO(ymd: string, plusDays = 0): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(ymd);
  if (!m) return "";
  return new Date(+m[1], +m[2] - 1, +m[3] + plusDays).toISOString();
}

export function plural(n: number, one: string, many = one + "s"): string {
  return `${n} ${n === 1 ? one : many}`;
}
