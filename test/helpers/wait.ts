import type { JournalRecord } from '../../src/journal/records.js';

/**
 * The one wait of the tests: polls `check` (sync or async) every 10 ms until it holds, and
 * fails after `ms` naming `what`. Tests wait for the thing that matters this way (a journal
 * line, a page's text, a socket state), never for a fixed time.
 */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  ms = 20_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} not met within ${ms} ms`);
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
  ms = 20_000,
): Promise<JournalRecord[]> {
  let records: JournalRecord[] = [];
  await waitFor(() => (records = g.records()).filter(match).length >= count, ms);
  return records;
}

/** Matches the outcome of the request whose event has seq `rid`. */
export const outcomeOf =
  (rid: number | undefined) =>
  (r: JournalRecord): boolean =>
    r.type === 'outcome' && r.rid === rid;

export const isOutcome = (r: JournalRecord): boolean => r.type === 'outcome';
