// Sequence rules on the page. A decision a rule named carries `rule: {name, after}`: `after`
// is the earlier event that set the rule's mark. The two are one finding, so the page shows
// them together: the timeline joins them with an arc labelled with the rule, and each event's
// detail links to the other.

import { h } from './dom.js';
import type { EventRecord, EventView } from '../../wire.js';

/** The page's route to one event (app.ts); the webhook links to the same URL. */
export const eventHref = (session: string, seq: number) =>
  `#/session/${encodeURIComponent(session)}/event/${seq}`;

/** `read /home/u/.ssh/id_ed25519`: an event's kind and what it asked. */
export const asked = (e: Pick<EventRecord, 'kind' | 'method' | 'target'>) =>
  `${e.kind} ${e.method ? `${e.method} ` : ''}${e.target}`;

/** A pair on the timeline: indices of the earlier event and of the one the rule named. */
export interface Pair {
  readonly from: number;
  readonly to: number;
  readonly name: string;
}

/** The most pairs drawn: a session a rule keeps firing on stays cheap to draw. */
const MAX_PAIRS = 500;

/** The pairs among `events` (oldest first) whose both events are drawn, newest kept. */
export function pairsOf(events: readonly EventView[], indexOf: (seq: number) => number): Pair[] {
  const pairs: Pair[] = [];
  for (let to = events.length - 1; to >= 0 && pairs.length < MAX_PAIRS; to--) {
    const rule = (events[to] as EventView).rule;
    if (rule?.after === undefined) continue;
    const from = indexOf(rule.after);
    if (from >= 0) pairs.push({ from, to, name: rule.name });
  }
  return pairs.reverse();
}

/** Where a pair is drawn, in CSS pixels: the tops of its two marks, the label's line. */
export interface PairGeometry {
  readonly x1: number;
  readonly y1: number;
  readonly x2: number;
  readonly y2: number;
  readonly apexY: number;
}

/** A strong pair's extras: rings around its marks, and the rule's name on its top line. */
export interface Strong {
  readonly label: string;
  readonly rings: [number, number, number, number][];
  /** An x span on the top line the name must not cover (the pause marker's label). */
  readonly avoid: [number, number] | null;
  /** The plot's left edge. */
  readonly left: number;
}

/**
 * An arc from the earlier mark up to `apexY` and down onto the later one, an arrowhead on the
 * later; a strong pair (selected, or the pause's) is thicker, rings both marks and carries the
 * rule's name at its apex. Returns a point on the arc (a quarter along) for tests to sample.
 */
export function paintPair(
  ctx: CanvasRenderingContext2D,
  g: PairGeometry,
  colour: string,
  strong: Strong | null,
): [number, number] {
  const { x1, y1, x2, y2, apexY } = g;
  // A cubic with both control points at one height peaks at (y1 + y2) / 8 + 3/4 of it.
  const cy = (apexY - (y1 + y2) / 8) / 0.75;
  ctx.save();
  ctx.strokeStyle = colour;
  ctx.fillStyle = colour;
  ctx.globalAlpha = strong ? 1 : 0.45;
  ctx.lineWidth = strong ? 2.5 : 1.5;
  ctx.beginPath();
  ctx.moveTo(x1, y1);
  ctx.bezierCurveTo(x1, cy, x2, cy, x2, y2);
  ctx.stroke();
  ctx.beginPath();
  ctx.moveTo(x2, y2 + 1);
  ctx.lineTo(x2 - 4.5, y2 - 7);
  ctx.lineTo(x2 + 4.5, y2 - 7);
  ctx.closePath();
  ctx.fill();
  if (strong) {
    for (const [x, y, w, hgt] of strong.rings) ctx.strokeRect(x, y, w, hgt);
    ctx.font = '600 11.5px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'center';
    const w = ctx.measureText(strong.label).width + 12;
    const mid = labelAt((x1 + x2) / 2, w, strong);
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(mid - w / 2, apexY - 8, w, 16);
    ctx.lineWidth = 1;
    ctx.strokeRect(mid - w / 2 + 0.5, apexY - 7.5, w - 1, 15);
    ctx.fillStyle = colour;
    ctx.fillText(strong.label, mid, apexY);
  }
  ctx.restore();
  const t = 0.25;
  const u = 1 - t;
  return [
    u ** 3 * x1 + 3 * u * u * t * x1 + 3 * u * t * t * x2 + t ** 3 * x2,
    u ** 3 * y1 + 3 * u * u * t * cy + 3 * u * t * t * cy + t ** 3 * y2,
  ];
}

/** The label's centre: over the apex, or beside the span it must avoid (left of it if room). */
function labelAt(mid: number, w: number, s: Strong): number {
  const avoid = s.avoid;
  if (!avoid || mid + w / 2 < avoid[0] - 4 || mid - w / 2 > avoid[1] + 4) return mid;
  const before = avoid[0] - 6 - w / 2;
  return before - w / 2 >= s.left ? before : avoid[1] + 6 + w / 2;
}

/** What the event detail needs to link the two events of a pair. */
export interface PairLinks {
  session(): string;
  /** An event by seq: drawn, in the pause record, or asked of the API. */
  lookup(seq: number): Promise<EventRecord | undefined>;
  /** Drawn events a rule named after `seq`: the later halves of its pairs. */
  laterOf(seq: number): readonly EventRecord[];
  /** Selects an event by seq. */
  pick(seq: number): void;
}

/** A link to event `seq`: selects it here; its href is the event's own page URL. */
export function eventLink(links: PairLinks, seq: number): HTMLAnchorElement {
  const a = h('a', {
    class: 'event-link mono',
    text: `#${seq}`,
    attrs: { href: eventHref(links.session(), seq), 'data-seq': String(seq) },
  });
  a.addEventListener('click', (e) => {
    e.preventDefault();
    links.pick(seq);
  });
  return a;
}

type Row = (name: string, ...value: (Node | string)[]) => HTMLElement[];

/**
 * The detail's rows for a pair: `Rule` on the event a rule named (after which event), `Then`
 * on an earlier event a rule later fired after.
 */
export function pairRows(e: EventRecord, links: PairLinks, row: Row): HTMLElement[] {
  const out: HTMLElement[] = [];
  const rule = e.rule;
  if (rule) {
    const name = h('strong', { class: 'rule-name', text: rule.name });
    if (rule.after === undefined) out.push(...row('Rule', name, ' · bytes sent upstream'));
    else {
      const what = h('span', { class: 'mono' });
      void links.lookup(rule.after).then((earlier) => {
        if (earlier) what.textContent = ` ${asked(earlier)}`;
      });
      out.push(...row('Rule', name, ' · after ', eventLink(links, rule.after), what));
    }
  }
  const later = links.laterOf(e.seq).slice(0, 5);
  if (later.length > 0)
    out.push(
      ...row(
        'Then',
        ...later.flatMap((x, i) => [
          i > 0 ? h('br') : '',
          h('strong', { class: 'rule-name', text: x.rule?.name ?? '' }),
          ' · ',
          eventLink(links, x.seq),
          h('span', { class: 'mono', text: ` ${asked(x)}` }),
        ]),
      ),
    );
  return out;
}
