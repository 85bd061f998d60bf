// A line diff of two texts (a tool's old and new description, its schemas pretty-printed), with
// the part of a changed line that differs marked. Pure, no DOM (tool-change.ts draws it).

export interface DiffLine {
  readonly op: 'same' | 'del' | 'add';
  readonly text: string;
  /** For a line paired with one on the other side: the part that differs, [start, end). */
  readonly mark?: readonly [number, number];
}

/** Past this many cells (lines × lines after the common ends) no LCS: all removed, all added. */
const MAX_CELLS = 1_000_000;

/** The lines of `a` and `b` as kept, removed and added, oldest side first within a change. */
export function lineDiff(a: string, b: string): DiffLine[] {
  const x = a === '' ? [] : a.split('\n');
  const y = b === '' ? [] : b.split('\n');
  let head = 0;
  while (head < x.length && head < y.length && x[head] === y[head]) head++;
  let tail = 0;
  while (
    tail < x.length - head &&
    tail < y.length - head &&
    x[x.length - 1 - tail] === y[y.length - 1 - tail]
  )
    tail++;
  const same = (lines: string[]) => lines.map((text): DiffLine => ({ op: 'same', text }));
  return [
    ...same(x.slice(0, head)),
    ...middle(x.slice(head, x.length - tail), y.slice(head, y.length - tail)),
    ...same(x.slice(x.length - tail)),
  ];
}

/** The differing middle: an LCS table when small enough, then runs of removed and added paired. */
function middle(x: string[], y: string[]): DiffLine[] {
  const n = x.length;
  const m = y.length;
  if (n * m > MAX_CELLS || n === 0 || m === 0) return paired(x, y);
  // lcs[i * (m + 1) + j]: the longest common subsequence of x[i..] and y[j..].
  const w = m + 1;
  const lcs = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i * w + j] =
        x[i] === y[j]
          ? (lcs[(i + 1) * w + j + 1] as number) + 1
          : Math.max(lcs[(i + 1) * w + j] as number, lcs[i * w + j + 1] as number);
  const out: DiffLine[] = [];
  let dels: string[] = [];
  let adds: string[] = [];
  const flush = () => {
    out.push(...paired(dels, adds));
    dels = [];
    adds = [];
  };
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] === y[j]) {
      flush();
      out.push({ op: 'same', text: x[i] as string });
      i++;
      j++;
    } else if (
      j >= m ||
      (i < n && (lcs[(i + 1) * w + j] as number) >= (lcs[i * w + j + 1] as number))
    )
      dels.push(x[i++] as string);
    else adds.push(y[j++] as string);
  }
  flush();
  return out;
}

/** A run of removed lines then added ones; the k-th of each marked where they differ. */
function paired(dels: readonly string[], adds: readonly string[]): DiffLine[] {
  const marks = dels.map((d, k) => (k < adds.length ? differing(d, adds[k] as string) : null));
  return [
    ...dels.map((text, k): DiffLine => withMark('del', text, marks[k]?.[0])),
    ...adds.map((text, k): DiffLine => withMark('add', text, marks[k]?.[1])),
  ];
}

const withMark = (op: 'del' | 'add', text: string, mark?: [number, number]): DiffLine =>
  mark ? { op, text, mark } : { op, text };

/**
 * Where two lines differ: after their common prefix and before their common suffix (never
 * splitting a surrogate pair), as a span in each.
 */
export function differing(a: string, b: string): [[number, number], [number, number]] {
  let p = 0;
  while (p < a.length && p < b.length && a[p] === b[p]) p++;
  if (p > 0 && isHigh(a.charCodeAt(p - 1))) p--;
  let s = 0;
  while (s < a.length - p && s < b.length - p && a[a.length - 1 - s] === b[b.length - 1 - s]) s++;
  if (s > 0 && isLow(a.charCodeAt(a.length - s))) s--;
  return [
    [p, a.length - s],
    [p, b.length - s],
  ];
}

const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;
