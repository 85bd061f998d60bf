import { describe, expect, it } from 'vitest';
import type { CapturedExchange } from '../../src/action/capture.js';
import type { HealthView } from '../../src/journal/health.js';
import type { EventRecord, PauseRecord } from '../../src/journal/records.js';
import type { SessionDetail, SessionView } from '../../src/review/api.js';
import type { ApprovalView, DenyView } from '../../src/review/api-rules.js';
import type * as Page from '../../src/review/page/types.js';

/**
 * The review page is a browser build and cannot import the server's modules, so it restates the
 * API's shapes. This file makes the compiler hold the two together: every answer the server
 * sends must be assignable to what the page reads. A shape that drifts fails `tsc -p
 * tsconfig.test.json` (run by `npm test`'s lint step), naming both types.
 */
const reads = <PageType>(serverValue: PageType): PageType => serverValue;
const server = <T>(): T => undefined as T;

describe('the review page reads what the admin API sends', () => {
  it('is checked by the compiler (these calls type-check only while the shapes agree)', () => {
    const checked = [
      reads<Page.SessionView>(server<SessionView>()),
      reads<Page.SessionDetail>(server<SessionDetail>()),
      reads<Page.TrajEvent>(server<EventRecord>()),
      reads<Page.PauseRecord>(server<PauseRecord>()),
      reads<Page.ApprovalView>(server<ApprovalView>()),
      reads<Page.DenyView>(server<DenyView>()),
      reads<Page.CapturedExchange>(server<CapturedExchange>()),
      reads<Page.Health>(server<HealthView>()),
    ];
    expect(checked).toHaveLength(8);
  });
});
