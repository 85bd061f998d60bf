// Building the page's DOM. Text from the API (targets, reasons, session ids) comes from agents
// and is hostile: it only ever becomes text nodes and attribute values, never markup.

type Child = Node | string | number | null | undefined | false;

interface Props {
  readonly class?: string;
  readonly text?: string;
  readonly attrs?: Record<string, string>;
  readonly on?: Partial<Record<keyof HTMLElementEventMap, (event: Event) => void>>;
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props.class) el.className = props.class;
  if (props.text !== undefined) el.textContent = props.text;
  for (const [name, value] of Object.entries(props.attrs ?? {})) el.setAttribute(name, value);
  for (const [type, fn] of Object.entries(props.on ?? {})) el.addEventListener(type, fn);
  append(el, children);
  return el;
}

export function append(el: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces an element's children (no markup parsing). */
export function fill(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

/** Sets text only when it changed, so live updates do not disturb selection or layout. */
export function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`page markup has no #${id}`);
  return el as T;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** Local wall-clock time, `14:03:07`. */
export function clock(at: string | number): string {
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return '—';
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** Local time with milliseconds, `14:03:07.125`. */
export function clockMs(at: string | number): string {
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return '—';
  return `${clock(at)}.${pad(d.getMilliseconds(), 3)}`;
}

/** Local date and time, `2026-03-01 14:03:07`. */
export function stamp(at: string | number): string {
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return '—';
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clock(at)}`;
}

/** `850 ms`, `12 s`, `4 min 05 s`, `2 h 03 min`, `3 d 4 h`. */
export function duration(ms: number): string {
  const v = Math.max(0, ms);
  if (v < 1_000) return `${Math.round(v)} ms`;
  const s = Math.floor(v / 1_000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${pad(s % 60)} s`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h ${pad(m % 60)} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/** `just now`, `12 s ago`, `4 min ago`. */
export function ago(at: string | null, now = Date.now()): string {
  if (at === null) return 'never';
  const ms = now - Date.parse(at);
  if (!Number.isFinite(ms)) return '—';
  if (ms < 1_500) return 'just now';
  const s = Math.floor(ms / 1_000);
  if (s < 60) return `${s} s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ago`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.floor(hours / 24)} d ago`;
}

export const plural = (n: number, one: string, many = `${one}s`) =>
  `${n.toLocaleString('en')} ${n === 1 ? one : many}`;
