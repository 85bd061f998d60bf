import type { EventRecord } from '../../src/journal/records.js';

/**
 * An event record as the journal holds it, for tests of what shows records (chat text, tables,
 * the review's pause records): an ALLOWed read of `/w/f<seq>` in session `s` unless `over`
 * says otherwise; one second per seq from 2026-03-01T10:00:00Z.
 */
export function eventRecord(seq: number, over: Partial<EventRecord> = {}): EventRecord {
  return {
    seq,
    ts: new Date(Date.UTC(2026, 2, 1, 10, 0, 0) + seq * 1000).toISOString(),
    type: 'event',
    session: 's',
    source: 'bridge',
    kind: 'read',
    target: `/w/f${seq}`,
    approved: false,
    verdict: 'ALLOW',
    boundary: null,
    count: 0,
    reason: 'ok',
    ...over,
  };
}
