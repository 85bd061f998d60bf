import type { JournalRecord } from '../../src/journal/records.js';

/** Polls `check` every 10 ms until it holds; fails after `ms`. */
export async function waitFor(check: () => boolean, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Polls a gateway's journal until at least `count` records match, and returns all its records
 * then. Outcomes are written after the response (with the next record or on a later turn), so
 * a test reading them waits for them here; fails after `ms`.
 */
export async function waitForRecords(
  g: { records(): JournalRecord[] },
  match: (r: JournalRecord) => boolean,
  count = 1,
  ms = 5_000,
): Promise<JournalRecord[]> {
  let records: JournalRecord[] = [];
  await waitFor(() => (records = g.records()).filter(match).length >= count, ms);
  return records;
}

/** Matches the outcome of the request whose event has seq `ref`. */
export const outcomeOf =
  (ref: number | undefined) =>
  (r: JournalRecord): boolean =>
    r.type === 'outcome' && r.ref === ref;

export const isOutcome = (r: JournalRecord): boolean => r.type === 'outcome';
