// A command event's command line, as the page shows it: redacted and bounded by the gateway
// (journal records), and here made to show as the shell got it, nothing hidden or reordered.

import { h } from './dom.js';
import type { EventRecord } from '../../wire.js';

/**
 * What would act rather than show: C0 and C1 controls, the line separators and the bidi format
 * characters that reorder what follows (a command that reads as another).
 */
const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * `text` with those characters written as escapes (`\n`, `\u001b`, `\u202e`); `lines` keeps
 * line breaks as breaks (a heredoc, shown whole).
 */
export function escapedText(text: string, lines = false): string {
  return text.replace(HIDDEN, (c) =>
    lines && c === '\n' ? c : (NAMED[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
  );
}

/** A command line on one line: `$ npm test`, `…` after it when the journal kept its prefix. */
export function ran(e: EventRecord): string {
  return `$ ${escapedText(e.command ?? '')}${e.commandBytes === undefined ? '' : '…'}`;
}

/** A command line whole, line breaks kept; journaled as its prefix: the whole's size and digest. */
export function commandLine(e: EventRecord): HTMLElement[] {
  const text = h('pre', { class: 'command mono', text: escapedText(e.command ?? '', true) });
  if (e.commandBytes === undefined) return [text];
  const note = `the first part of ${e.commandBytes.toLocaleString('en')} bytes (SHA-256 ${e.commandSha256 ?? '?'})`;
  return [text, h('div', { class: 'help', text: note })];
}
