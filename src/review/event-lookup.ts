import { isAbsolute, resolve } from 'node:path';
import { TrajgateError } from '../errors.js';
import { PATH_KINDS } from '../event/event.js';
import type { Suggestion } from '../guard/suggest.js';
import { suggestApproval } from '../guard/suggest.js';
import type { EventRecord } from '../journal/records.js';
import type { SessionIndex } from '../journal/session-index.js';
import { segmentsOf } from '../journal/files.js';
import { SegmentReader } from '../journal/segment-reader.js';

/**
 * One event record by its seq, read from the journal where the session index locates it (the
 * newest 10,240 events of each session), and the approval that fits it.
 */
export async function eventBySeq(
  journal: string,
  index: SessionIndex,
  seq: number,
): Promise<EventRecord> {
  const at = index.locate(seq);
  const unknown = () =>
    new TrajgateError(
      'E_UNKNOWN_EVENT',
      `no event with seq ${seq} (not an event record, or older than the events kept per session)`,
    );
  if (at === null) throw unknown();
  // The index's offsets run across the journal's rotated files.
  const fh = new SegmentReader(segmentsOf(journal));
  try {
    const buf = Buffer.allocUnsafe(at.bytes);
    const { bytesRead } = await fh.read(buf, 0, at.bytes, at.offset);
    const record = JSON.parse(buf.subarray(0, bytesRead).toString('utf8')) as EventRecord;
    if (record.seq !== seq || record.type !== 'event') throw unknown();
    return record;
  } finally {
    await fh.close();
  }
}

/**
 * The approval that fits an event (guard/suggest.ts). A relative path is resolved in the
 * session's workspace first, since path approvals match the resolved path.
 */
export function suggestionFor(record: EventRecord, workspace: string): Suggestion {
  const relative = PATH_KINDS.has(record.kind) && !isAbsolute(record.target);
  const target = relative ? resolve(workspace, record.target) : record.target;
  return suggestApproval({ kind: record.kind, target, method: record.method, tree: record.tree });
}
