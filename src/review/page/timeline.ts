// The trajectory on a <canvas>: one mark per event along time, a lane per kind, coloured by
// verdict, the pause point marked. A canvas keeps 10,000 events to a few milliseconds: marks
// are batched per colour, and hit testing is a binary search in each lane's sorted positions.

import { ran } from './command.js';
import { clock, clockMs, h, plural } from './dom.js';
import { paintPair, pairsOf } from './rule-pair.js';
import type { Pair } from './rule-pair.js';
import type { EventView, Verdict } from '../../wire.js';

export const LANES = ['network', 'write', 'command', 'read', 'other'] as const;
const laneOf = (kind: string): number => {
  const i = (LANES as readonly string[]).indexOf(kind);
  return i === -1 ? LANES.length - 1 : i;
};
const SEVERITY: Record<Verdict, number> = { ALLOW: 0, REVIEW: 1, PAUSE: 2 };

/** Room for the lane names (and their counts, on a wide canvas). */
const GUTTER_WIDE = 132;
const GUTTER_NARROW = 76;
const PAD_RIGHT = 18;
const PAD_TOP = 24;
const LANE_H = 34;
const AXIS_H = 26;
const HEIGHT = PAD_TOP + LANE_H * LANES.length + AXIS_H;
const PAUSE_FONT = '600 12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';

const TIME_STEPS = [
  10, 20, 50, 100, 250, 500, 1e3, 2e3, 5e3, 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3, 900e3,
  1800e3, 3600e3, 7200e3, 10800e3, 21600e3, 43200e3, 86400e3,
];

interface Colors {
  allow: string;
  review: string;
  pause: string;
  ink: string;
  muted: string;
  grid: string;
  band: string;
  select: string;
  pair: string;
}

export interface TimelineOptions {
  /** The operator selected an event (click, keyboard), or cleared the selection (null). */
  onSelect(event: EventView | null): void;
}

export class Timeline {
  readonly element: HTMLElement;
  readonly #canvas: HTMLCanvasElement;
  readonly #ctx: CanvasRenderingContext2D;
  readonly #tip: HTMLElement;
  readonly #options: TimelineOptions;
  #colors: Colors;
  #events: EventView[] = [];
  #t = new Float64Array(0);
  #lane = new Uint8Array(0);
  #x = new Float32Array(0);
  /** Per lane, event indices in order of position. */
  #byLane: Int32Array[] = [];
  #laneCounts: number[] = LANES.map(() => 0);
  #verdicts: Record<Verdict, number> = { ALLOW: 0, REVIEW: 0, PAUSE: 0 };
  #pause: { seq: number; ts: string } | null = null;
  /** Sequence rules' pairs: the earlier event and the one the rule named (rule-pair.ts). */
  #pairs: Pair[] = [];
  #selected = -1;
  #hover = -1;
  #mode: 'time' | 'order' = 'time';
  /** The visible part of the domain (ms since the epoch in time mode, event index in order). */
  #view: [number, number] = [0, 1];
  #domain: [number, number] = [0, 1];
  #width = 0;
  #gutter = GUTTER_WIDE;
  #drag: { x: number; view: [number, number]; moved: boolean } | null = null;

  constructor(options: TimelineOptions) {
    this.#options = options;
    this.#canvas = h('canvas', {
      class: 'timeline-canvas',
      attrs: {
        tabindex: '0',
        role: 'img',
        'aria-label': 'Trajectory timeline',
        'aria-describedby': 'timeline-help',
      },
    });
    const ctx = this.#canvas.getContext('2d', { alpha: false });
    if (!ctx) throw new Error('no 2D canvas');
    this.#ctx = ctx;
    this.#tip = h('div', { class: 'timeline-tip', attrs: { role: 'tooltip', hidden: '' } });
    this.element = h('div', { class: 'timeline-frame' }, this.#canvas, this.#tip);
    this.#colors = readColors();
    this.#canvas.addEventListener('mousemove', (e) => this.#onMove(e));
    this.#canvas.addEventListener('mouseleave', () => this.#setHover(-1, null));
    this.#canvas.addEventListener('mousedown', (e) => this.#onDown(e));
    window.addEventListener('mouseup', (e) => this.#onUp(e));
    this.#canvas.addEventListener('keydown', (e) => this.#onKey(e));
    new ResizeObserver(() => {
      const w = Math.floor(this.element.clientWidth);
      if (w > 0 && w !== this.#width) this.draw();
    }).observe(this.element);
  }

  get count(): number {
    return this.#events.length;
  }

  get selected(): EventView | null {
    return this.#events[this.#selected] ?? null;
  }

  /** New data (oldest first). Keeps the selection (by seq) and, if zoomed, the view. */
  setEvents(events: EventView[], pause: { seq: number; ts: string } | null): void {
    const start = performance.now();
    const keep = this.selected?.seq;
    const zoomed = this.#zoomed();
    this.#events = events;
    const n = events.length;
    this.#t = new Float64Array(n);
    this.#lane = new Uint8Array(n);
    this.#laneCounts = LANES.map(() => 0);
    this.#verdicts = { ALLOW: 0, REVIEW: 0, PAUSE: 0 };
    for (let i = 0; i < n; i++) {
      const e = events[i] as EventView;
      this.#verdicts[e.verdict]++;
      this.#t[i] = Date.parse(e.ts);
      const lane = laneOf(e.kind);
      this.#lane[i] = lane;
      this.#laneCounts[lane] = (this.#laneCounts[lane] ?? 0) + 1;
    }
    this.#pause = pause;
    this.#pairs = pairsOf(events, (seq) => this.#indexOfSeq(seq));
    this.#selected = keep === undefined ? -1 : this.#indexOfSeq(keep);
    this.#hover = -1;
    this.#domain = this.#fullDomain();
    if (!zoomed) this.#view = [...this.#domain];
    this.draw(start);
  }

  setMode(mode: 'time' | 'order'): void {
    if (mode === this.#mode) return;
    this.#mode = mode;
    this.#domain = this.#fullDomain();
    this.#view = [...this.#domain];
    this.draw();
  }

  /** Zooms by `factor` (< 1 in) around the selection, or the middle of the view. */
  zoom(factor: number): void {
    const [a, b] = this.#view;
    const sel = this.#selected;
    const centre = sel >= 0 ? this.#value(sel) : (a + b) / 2;
    const span = Math.max((b - a) * factor, this.#mode === 'time' ? 20 : 4);
    const full = this.#domain[1] - this.#domain[0];
    if (span >= full) this.#view = [...this.#domain];
    else {
      const left = centre - ((centre - a) / (b - a)) * span;
      this.#view = this.#clampView([left, left + span]);
    }
    this.draw();
  }

  fit(): void {
    this.#view = [...this.#domain];
    this.draw();
  }

  select(index: number, focus = false): void {
    this.#selected = index >= 0 && index < this.#events.length ? index : -1;
    if (this.#selected >= 0) this.#reveal(this.#selected);
    this.draw();
    this.#options.onSelect(this.selected);
    if (focus) this.#canvas.focus();
  }

  selectSeq(seq: number): void {
    this.select(this.#indexOfSeq(seq));
  }

  /** Lays out and draws everything; `start` times a redraw that followed new data. */
  draw(start = performance.now()): void {
    const width = Math.max(320, Math.floor(this.element.clientWidth));
    this.#width = width;
    this.#gutter = width < 560 ? GUTTER_NARROW : GUTTER_WIDE;
    const dpr = window.devicePixelRatio || 1;
    const c = this.#canvas;
    if (c.width !== Math.round(width * dpr) || c.height !== Math.round(HEIGHT * dpr)) {
      c.width = Math.round(width * dpr);
      c.height = Math.round(HEIGHT * dpr);
      c.style.width = `${width}px`;
      c.style.height = `${HEIGHT}px`;
    }
    const ctx = this.#ctx;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    this.#layout();
    this.#paintFrame();
    this.#paintMarks();
    this.#paintPairs();
    this.#paintPause();
    // Reading a pixel back makes the rasterizer finish, so the time below is the real draw.
    ctx.getImageData(0, 0, 1, 1);
    const ms = performance.now() - start;
    c.dataset.drawMs = ms.toFixed(1);
    c.dataset.events = String(this.#events.length);
    c.setAttribute('aria-label', this.#summary());
  }

  #summary(): string {
    const n = this.#events.length;
    const v = this.#verdicts;
    if (n === 0) return 'Trajectory timeline: no events';
    const pairs = this.#pairs.length ? `, ${plural(this.#pairs.length, 'rule pair')}` : '';
    return `Trajectory timeline: ${plural(n, 'event')}, ${v.REVIEW} REVIEW, ${v.PAUSE} PAUSE${pairs}. Arrow keys select events.`;
  }

  #fullDomain(): [number, number] {
    const n = this.#events.length;
    if (this.#mode === 'order') return [-0.5, Math.max(n, 1) - 0.5];
    if (n === 0) {
      const now = Date.now();
      return [now - 60_000, now];
    }
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = 0; i < n; i++) {
      const t = this.#t[i] as number;
      if (t < lo) lo = t;
      if (t > hi) hi = t;
    }
    // A few events close together still spread over the width; a lone one sits in the middle.
    const span = Math.max(hi - lo, 20);
    const pad = span * 0.04;
    const mid = (lo + hi) / 2;
    return [mid - span / 2 - pad, mid + span / 2 + pad];
  }

  #zoomed(): boolean {
    return this.#view[0] > this.#domain[0] || this.#view[1] < this.#domain[1];
  }

  #clampView([a, b]: [number, number]): [number, number] {
    const [lo, hi] = this.#domain;
    const span = b - a;
    if (span >= hi - lo) return [lo, hi];
    if (a < lo) return [lo, lo + span];
    if (b > hi) return [hi - span, hi];
    return [a, b];
  }

  #value(i: number): number {
    return this.#mode === 'time' ? (this.#t[i] as number) : i;
  }

  #plotWidth(): number {
    return this.#width - this.#gutter - PAD_RIGHT;
  }

  #toX(v: number): number {
    const [a, b] = this.#view;
    return this.#gutter + ((v - a) / (b - a)) * this.#plotWidth();
  }

  #layout(): void {
    const n = this.#events.length;
    this.#x = new Float32Array(n);
    const lanes: number[][] = LANES.map(() => []);
    for (let i = 0; i < n; i++) {
      this.#x[i] = this.#toX(this.#value(i));
      (lanes[this.#lane[i] as number] as number[]).push(i);
    }
    const x = this.#x;
    this.#byLane = lanes.map((l) => {
      const arr = Int32Array.from(l);
      // Journal order is nearly time order, so this sort is close to linear.
      if (this.#mode === 'time') arr.sort((p, q) => (x[p] as number) - (x[q] as number));
      return arr;
    });
  }

  #paintFrame(): void {
    const ctx = this.#ctx;
    const col = this.#colors;
    const w = this.#width;
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, w, HEIGHT);
    ctx.font = '12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
    ctx.textBaseline = 'middle';
    for (let l = 0; l < LANES.length; l++) {
      const y = PAD_TOP + l * LANE_H;
      if (l % 2 === 0) {
        ctx.fillStyle = col.band;
        ctx.fillRect(0, y, w, LANE_H);
      }
      ctx.fillStyle = col.ink;
      ctx.textAlign = 'left';
      ctx.fillText(LANES[l] as string, 12, y + LANE_H / 2 - 1);
      if (this.#gutter === GUTTER_NARROW) continue;
      ctx.fillStyle = col.muted;
      ctx.textAlign = 'right';
      ctx.fillText(
        (this.#laneCounts[l] ?? 0).toLocaleString('en'),
        this.#gutter - 12,
        y + LANE_H / 2 - 1,
      );
    }
    // axis
    const axisY = PAD_TOP + LANE_H * LANES.length;
    ctx.fillStyle = col.grid;
    ctx.fillRect(this.#gutter, axisY, this.#plotWidth(), 1);
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    for (const { v, label } of this.#ticks()) {
      const x = Math.round(this.#toX(v)) + 0.5;
      ctx.fillStyle = col.grid;
      ctx.fillRect(x - 0.5, PAD_TOP, 1, LANE_H * LANES.length + 4);
      ctx.fillStyle = col.muted;
      ctx.fillText(label, x, axisY + 8);
    }
    if (this.#events.length === 0) {
      ctx.fillStyle = col.muted;
      ctx.textBaseline = 'middle';
      ctx.fillText(
        'No events yet',
        this.#gutter + this.#plotWidth() / 2,
        PAD_TOP + (LANE_H * LANES.length) / 2,
      );
    }
  }

  #ticks(): { v: number; label: string }[] {
    const [a, b] = this.#view;
    const want = Math.max(2, Math.floor(this.#plotWidth() / 120));
    const out: { v: number; label: string }[] = [];
    if (this.#mode === 'time') {
      const step = TIME_STEPS.find((s) => (b - a) / s <= want) ?? 86400e3;
      const offset = new Date(a).getTimezoneOffset() * 60_000;
      let v = Math.ceil((a - offset) / step) * step + offset;
      for (; v <= b && out.length < 50; v += step)
        out.push({
          v,
          label: step < 1_000 ? clockMs(v).slice(3) : step < 60e3 ? clock(v) : clock(v).slice(0, 5),
        });
    } else {
      const raw = (b - a) / want;
      const mag = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
      const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
      for (let v = Math.ceil(Math.max(a, 0) / step) * step; v <= b && out.length < 50; v += step)
        out.push({ v, label: `#${(v + 1).toLocaleString('en')}` });
    }
    return out;
  }

  #markWidth(): number {
    const [a, b] = this.#view;
    const visible = this.#mode === 'order' ? b - a : this.#events.length;
    return Math.max(2, Math.min(6, Math.floor(this.#plotWidth() / Math.max(visible, 1)) - 1));
  }

  #paintMarks(): void {
    const ctx = this.#ctx;
    const n = this.#events.length;
    const mw = this.#markWidth();
    const left = this.#gutter - mw;
    const right = this.#width - PAD_RIGHT + mw;
    ctx.save();
    ctx.beginPath();
    ctx.rect(this.#gutter - 4, 0, this.#plotWidth() + 8, HEIGHT);
    ctx.clip();
    const fills: [Verdict, string][] = [
      ['ALLOW', this.#colors.allow],
      ['REVIEW', this.#colors.review],
      ['PAUSE', this.#colors.pause],
    ];
    // One pass per colour, least severe first, so REVIEW and PAUSE stay on top.
    for (const [verdict, colour] of fills) {
      // ALLOW marks are shorter, so REVIEW and PAUSE stand out even where marks are dense.
      const tall = verdict === 'ALLOW' ? 16 : 6;
      ctx.fillStyle = colour;
      ctx.strokeStyle = colour;
      ctx.lineWidth = 1.5;
      for (let i = 0; i < n; i++) {
        const e = this.#events[i] as EventView;
        if (e.verdict !== verdict) continue;
        const x = this.#x[i] as number;
        if (x < left || x > right) continue;
        const y = PAD_TOP + (this.#lane[i] as number) * LANE_H + tall / 2;
        if (e.held) ctx.strokeRect(x - mw / 2 + 0.75, y + 0.75, mw - 1.5, LANE_H - tall - 1.5);
        else ctx.fillRect(x - mw / 2, y, mw, LANE_H - tall);
      }
    }
    for (const [i, style] of [
      [this.#hover, 'hover'],
      [this.#selected, 'select'],
    ] as const) {
      if (i < 0) continue;
      const x = this.#x[i] as number;
      const y = PAD_TOP + (this.#lane[i] as number) * LANE_H;
      ctx.strokeStyle = style === 'select' ? this.#colors.select : this.#colors.muted;
      ctx.lineWidth = 2;
      ctx.strokeRect(x - mw / 2 - 3, y + 1, mw + 6, LANE_H - 2);
      if (style === 'select') {
        ctx.fillStyle = this.#colors.select;
        ctx.fillRect(Math.round(x) - 0.5, PAD_TOP, 1, LANE_H * LANES.length);
      }
    }
    ctx.restore();
  }

  /**
   * Each pair as an arc between its marks; the selected event's pair (either end), else the
   * pause trigger's, strong: both marks ringed and the rule named. The canvas's data-pairs
   * (`41>57 …`), data-pair and data-pair-point (a point on its arc) say what was drawn.
   */
  #paintPairs(): void {
    const c = this.#canvas;
    const pairs = this.#pairs;
    const seqs = (p: Pair) => `${this.#seqAt(p.from)}>${this.#seqAt(p.to)}`;
    c.dataset.pairs = pairs.map(seqs).join(' ');
    delete c.dataset.pair;
    delete c.dataset.pairPoint;
    if (pairs.length === 0) return;
    const sel = this.#selected;
    const trigger = this.#pause ? this.#indexOfSeq(this.#pause.seq) : -1;
    const focus =
      (sel >= 0 ? pairs.find((p) => p.from === sel || p.to === sel) : undefined) ??
      pairs.find((p) => p.to === trigger);
    const ctx = this.#ctx;
    const mw = this.#markWidth();
    const top = (i: number) => PAD_TOP + (this.#lane[i] as number) * LANE_H;
    const x = (i: number) => this.#x[i] as number;
    const geometry = (p: Pair) => ({
      x1: x(p.from),
      y1: top(p.from) + 2,
      x2: x(p.to),
      y2: top(p.to) + 2,
      apexY: PAD_TOP / 2,
    });
    // The rule's name shares the top line with the pause marker's label: kept out of its way.
    const pause = this.#pauseMark();
    const avoid: [number, number] | null = pause && [pause.from, pause.to];
    const ring = (i: number): [number, number, number, number] => [
      x(i) - mw / 2 - 5,
      top(i) + 0.5,
      mw + 10,
      LANE_H - 1,
    ];
    ctx.save();
    ctx.beginPath();
    ctx.rect(this.#gutter - 4, 0, this.#plotWidth() + 8, HEIGHT);
    ctx.clip();
    for (const p of pairs) if (p !== focus) paintPair(ctx, geometry(p), this.#colors.pair, null);
    if (focus) {
      const rings = [ring(focus.from), ring(focus.to)];
      const strong = { label: focus.name, rings, avoid, left: this.#gutter };
      const at = paintPair(ctx, geometry(focus), this.#colors.pair, strong);
      c.dataset.pair = seqs(focus);
      c.dataset.pairPoint = at.map((v) => v.toFixed(1)).join(',');
    }
    ctx.restore();
  }

  #seqAt(i: number): number {
    return (this.#events[i] as EventView).seq;
  }

  /** The pause marker's x and its label's, or null when it is out of view. */
  #pauseMark(): { x: number; label: string; rightSide: boolean; from: number; to: number } | null {
    if (!this.#pause) return null;
    const i = this.#indexOfSeq(this.#pause.seq);
    const v = i >= 0 ? this.#value(i) : this.#mode === 'time' ? Date.parse(this.#pause.ts) : NaN;
    if (!Number.isFinite(v) || v < this.#view[0] || v > this.#view[1]) return null;
    const x = Math.round(this.#toX(v)) + 0.5;
    const label = `paused ${clock(this.#pause.ts)}`;
    this.#ctx.font = PAUSE_FONT;
    const width = this.#ctx.measureText(label).width;
    const rightSide = x + 9 + width < this.#width - PAD_RIGHT;
    return rightSide
      ? { x, label, rightSide, from: x - 6, to: x + 9 + width }
      : { x, label, rightSide, from: x - 9 - width, to: x + 6 };
  }

  #paintPause(): void {
    const mark = this.#pauseMark();
    if (!mark) return;
    const { x, label, rightSide } = mark;
    const ctx = this.#ctx;
    ctx.save();
    ctx.strokeStyle = this.#colors.pause;
    ctx.lineWidth = 1.5;
    ctx.setLineDash([4, 3]);
    ctx.beginPath();
    ctx.moveTo(x, PAD_TOP - 6);
    ctx.lineTo(x, PAD_TOP + LANE_H * LANES.length);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = this.#colors.pause;
    ctx.beginPath();
    ctx.moveTo(x - 5, 4);
    ctx.lineTo(x + 5, 4);
    ctx.lineTo(x, 12);
    ctx.closePath();
    ctx.fill();
    ctx.font = PAUSE_FONT;
    ctx.textBaseline = 'middle';
    ctx.textAlign = rightSide ? 'left' : 'right';
    ctx.fillText(label, rightSide ? x + 9 : x - 9, 9);
    ctx.restore();
  }

  #indexOfSeq(seq: number): number {
    // events are in seq order: binary search
    let lo = 0;
    let hi = this.#events.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const s = (this.#events[mid] as EventView).seq;
      if (s === seq) return mid;
      if (s < seq) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** The event under (x, y): in that lane, the most severe mark within a few pixels. */
  #hit(x: number, y: number): number {
    const lane = Math.floor((y - PAD_TOP) / LANE_H);
    if (lane < 0 || lane >= LANES.length || x < this.#gutter - 4 || x > this.#width - PAD_RIGHT + 4)
      return -1;
    const order = this.#byLane[lane];
    if (!order || order.length === 0) return -1;
    const xs = this.#x;
    let lo = 0;
    let hi = order.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((xs[order[mid] as number] as number) < x) lo = mid + 1;
      else hi = mid;
    }
    const tolerance = Math.max(4, this.#markWidth() / 2 + 2);
    let best = -1;
    let bestKey = -Infinity;
    const consider = (k: number) => {
      const i = order[k] as number;
      const d = Math.abs((xs[i] as number) - x);
      if (d > tolerance) return false;
      const key = SEVERITY[(this.#events[i] as EventView).verdict] * 100 - d;
      if (key > bestKey) {
        bestKey = key;
        best = i;
      }
      return true;
    };
    for (let k = lo; k < order.length && k < lo + 400 && consider(k); k++);
    for (let k = lo - 1; k >= 0 && k > lo - 400 && consider(k); k--);
    return best;
  }

  #point(e: MouseEvent): [number, number] {
    const r = this.#canvas.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  }

  #onMove(e: MouseEvent): void {
    const [x, y] = this.#point(e);
    if (this.#drag) {
      const dx = x - this.#drag.x;
      if (Math.abs(dx) > 3) this.#drag.moved = true;
      if (this.#drag.moved) {
        const [a, b] = this.#drag.view;
        const dv = (dx / this.#plotWidth()) * (b - a);
        this.#view = this.#clampView([a - dv, b - dv]);
        this.draw();
      }
      return;
    }
    const i = this.#hit(x, y);
    this.#setHover(i, i >= 0 ? [x, y] : null);
    this.#canvas.style.cursor = i >= 0 ? 'pointer' : this.#zoomed() ? 'grab' : 'default';
  }

  #onDown(e: MouseEvent): void {
    if (e.button !== 0) return;
    const [x] = this.#point(e);
    this.#drag = { x, view: [...this.#view], moved: false };
  }

  #onUp(e: MouseEvent): void {
    const drag = this.#drag;
    this.#drag = null;
    if (!drag || drag.moved || e.target !== this.#canvas) return;
    const [x, y] = this.#point(e);
    const i = this.#hit(x, y);
    if (i >= 0) this.select(i, true);
  }

  #onKey(e: KeyboardEvent): void {
    const n = this.#events.length;
    if (n === 0) return;
    const sel = this.#selected;
    const step = e.shiftKey ? 10 : 1;
    const keys: Record<string, () => void> = {
      ArrowRight: () => this.select(sel < 0 ? n - 1 : Math.min(n - 1, sel + step)),
      ArrowLeft: () => this.select(sel < 0 ? n - 1 : Math.max(0, sel - step)),
      Home: () => this.select(0),
      End: () => this.select(n - 1),
      Escape: () => this.select(-1),
      '+': () => this.zoom(0.5),
      '=': () => this.zoom(0.5),
      '-': () => this.zoom(2),
      '0': () => this.fit(),
    };
    const fn = keys[e.key];
    if (!fn) return;
    e.preventDefault();
    fn();
  }

  /** Pans a zoomed view so that event `i` is visible. */
  #reveal(i: number): void {
    const v = this.#value(i);
    const [a, b] = this.#view;
    if (v >= a && v <= b) return;
    const span = b - a;
    this.#view = this.#clampView([v - span / 2, v + span / 2]);
  }

  #setHover(i: number, at: [number, number] | null): void {
    const changed = i !== this.#hover;
    this.#hover = i;
    if (changed) this.draw();
    const tip = this.#tip;
    const e = this.#events[i];
    if (!e || !at) {
      tip.hidden = true;
      return;
    }
    if (changed) tip.replaceChildren(...tipLines(e));
    tip.hidden = false;
    const w = tip.offsetWidth;
    const left = Math.min(Math.max(8, at[0] + 14), this.#width - w - 8);
    const top = at[1] > HEIGHT / 2 ? at[1] - tip.offsetHeight - 12 : at[1] + 16;
    tip.style.left = `${left}px`;
    tip.style.top = `${top}px`;
  }
}

/** An event's lines for the tooltip: verdict, what, when, why. Text nodes only. */
function tipLines(e: EventView): HTMLElement[] {
  const verdict = h('span', {
    class: `verdict verdict-${e.verdict.toLowerCase()}`,
    text: e.verdict,
  });
  const where = e.rule
    ? ` ${e.rule.name}${e.rule.after === undefined ? '' : ` · after #${e.rule.after}`}`
    : e.boundary
      ? ` ${e.boundary} · count ${e.count}`
      : '';
  return [
    h('div', { class: 'tip-head' }, verdict, where, e.held ? ' · held' : ''),
    h('div', { class: 'tip-target' }, e.method ? `${e.method} ` : '', e.target),
    ...(e.command === undefined ? [] : [h('div', { class: 'tip-target', text: ran(e) })]),
    h(
      'div',
      { class: 'tip-meta' },
      `${e.kind} · ${e.source} · ${clockMs(e.ts)} · #${e.seq}`,
      e.status != null ? ` · status ${e.status}` : '',
    ),
    h('div', { class: 'tip-reason', text: e.reason }),
  ];
}

function readColors(): Colors {
  const css = getComputedStyle(document.documentElement);
  const v = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
  return {
    allow: v('--allow', '#2f9e6b'),
    review: v('--review', '#d4901a'),
    pause: v('--pause', '#d23c3c'),
    ink: v('--ink', '#1d2430'),
    muted: v('--muted', '#667085'),
    grid: v('--grid', '#e4e7ec'),
    band: v('--band', '#f7f8fa'),
    select: v('--select', '#1d4ed8'),
    pair: v('--pair', '#7c3aed'),
  };
}
