import type { EventRecord, JournalRecord, OutcomeRecord, Unstamped } from './records.js';

/**
 * JSON text of a record without its leading `{`, as JSON.stringify writes it. The two records
 * every request writes (its event and its outcome) are written field by field in the order
 * `eventRecord` and the pipeline create them: about half the cost of the generic walk, on the
 * hot path. Anything else goes through JSON.stringify.
 */
export function recordFields(record: Unstamped<JournalRecord>): string {
  if (record.type === 'event') return eventFields(record);
  if (record.type === 'outcome') return outcomeFields(record);
  return JSON.stringify(record).slice(1);
}

const text = (s: string): string => JSON.stringify(s);
/** JSON has no NaN or Infinity: JSON.stringify writes null for them. */
const num = (n: number | null): string => (n !== null && Number.isFinite(n) ? `${n}` : 'null');
const opt = (name: string, value: unknown): string =>
  value === undefined ? '' : `,"${name}":${JSON.stringify(value)}`;

function eventFields(r: Unstamped<EventRecord>): string {
  return (
    `"type":"event","session":${text(r.session)},"source":${text(r.source)}` +
    `,"kind":${text(r.kind)},"target":${text(r.target)}${opt('targetBytes', r.targetBytes)}` +
    `${opt('targetSha256', r.targetSha256)}${opt('command', r.command)}` +
    `${opt('commandBytes', r.commandBytes)}${opt('commandSha256', r.commandSha256)}` +
    `${opt('method', r.method)}` +
    `${opt('resolved', r.resolved)}${opt('alias', r.alias)}${opt('tree', r.tree)}` +
    `${opt('call', r.call)}` +
    `,"approved":${r.approved},"verdict":"${r.verdict}"` +
    `,"boundary":${r.boundary === null ? 'null' : text(r.boundary)},"count":${num(r.count)}` +
    `,"reason":${text(r.reason)}${opt('approvedBy', r.approvedBy)}${opt('counted', r.counted)}` +
    `${opt('rule', r.rule)}${opt('denied', r.denied)}${opt('rid', r.rid)}${opt('held', r.held)}` +
    `${opt('failed', r.failed)}${opt('marks', r.marks)}${opt('onFailure', r.onFailure)}` +
    `${opt('eventNo', r.eventNo)}${opt('budgeted', r.budgeted)}${opt('sentUp', r.sentUp)}` +
    `${opt('credentials', r.credentials)}${opt('exfiltration', r.exfiltration)}` +
    `${opt('toolChange', r.toolChange)}}`
  );
}

function outcomeFields(r: Unstamped<OutcomeRecord>): string {
  return (
    `"type":"outcome","rid":${num(r.rid)},"session":${text(r.session)},"status":${num(r.status)}` +
    `,"bytesUp":${num(r.bytesUp)},"bytesDown":${num(r.bytesDown)}${opt('error', r.error)}` +
    `${opt('failed', r.failed)}${opt('sni', r.sni)}` +
    `${opt('protocol', r.protocol)}${opt('via', r.via)}${opt('grpcStatus', r.grpcStatus)}` +
    `,"durationMs":${num(r.durationMs)}}`
  );
}
