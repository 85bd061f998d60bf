/**
 * A whole Server-Sent Events stream (WHATWG HTML § 9.2.6) as its events, each kept as the lines
 * it came in, so that all but one can be written back as they were. Lines end in CRLF, LF or
 * CR; a blank line ends an event; a `data` field's value is what follows `data:` and one
 * optional space, several joined by LF. Text after the last blank line is no event (a client
 * does not dispatch it) and is kept as it was.
 */
export interface SseStream {
  readonly events: readonly SseEvent[];
  /** What follows the last event, unterminated. */
  readonly rest: string;
}

export interface SseEvent {
  readonly lines: readonly string[];
  /** The event's data, or null when it has no data line (a client dispatches nothing). */
  readonly data: string | null;
}

export function parseSse(text: string): SseStream {
  const lines = text.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/);
  // The piece after the last line break is unterminated: never a line of an event.
  const rest = lines.pop() ?? '';
  const events: SseEvent[] = [];
  let current: string[] = [];
  for (const line of lines) {
    if (line !== '') {
      current.push(line);
      continue;
    }
    if (current.length > 0) events.push(eventOf(current));
    current = [];
  }
  return { events, rest: [...current, rest].join('\n') };
}

function eventOf(lines: string[]): SseEvent {
  const data: string[] = [];
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    if (name !== 'data') continue;
    const value = colon < 0 ? '' : line.slice(colon + 1);
    data.push(value.startsWith(' ') ? value.slice(1) : value);
  }
  return { lines, data: data.length > 0 ? data.join('\n') : null };
}

/** `event` with its data replaced by `data` (one line: JSON has no raw line breaks). */
export function withData(event: SseEvent, data: string): SseEvent {
  const others = event.lines.filter((l) => !/^data(:|$)/.test(l));
  return { lines: [...others, `data: ${data}`], data };
}

/** The stream as text, LF line ends. */
export function writeSse(stream: SseStream): string {
  const events = stream.events.map((e) => `${e.lines.join('\n')}\n\n`).join('');
  return events + stream.rest;
}
