// The journal's health (GET /api/health) as a banner of its own: while trajgate cannot write
// its journal it refuses every request with 503 and records no operator action, which an
// operator must see before anything else on the page.

import { call } from './api.js';
import { byId, clock, setText } from './dom.js';
import type { HealthView } from '../../wire.js';

const banner = byId('journal-banner');

export async function loadHealth(): Promise<void> {
  const { journal } = await call<HealthView>('GET', '/api/health');
  banner.hidden = journal.writable;
  if (journal.writable) return;
  setText(
    banner,
    `The journal cannot be written (${journal.lastFailure?.error ?? 'unknown error'}), so trajgate refuses every request with 503 and cannot record approvals, resumes or denials. ` +
      `Failing since ${clock(journal.failingSince ?? '')}, ${journal.failures} failed write(s) so far. ` +
      `Make ${journal.path} writable again (free disk space): the next write that succeeds ends it.`,
  );
}

/** Signed out: nothing shown. */
export function hideHealth(): void {
  banner.hidden = true;
}
