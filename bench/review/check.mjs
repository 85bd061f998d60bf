// Reads the journal back (streaming) and checks it against what the clients saw.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

/** Per request id (the seq of its first event record): its event records and outcomes. */
export async function readJournal(path) {
  const requests = new Map();
  const byTarget = new Map();
  const counts = { records: 0, event: 0, outcome: 0, refusal: 0, pause: 0, resume: 0, deny: 0 };
  counts.approve = 0;
  const orphans = [];
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Infinity });
  for await (const line of lines) {
    if (line === '') continue;
    const r = JSON.parse(line);
    counts.records++;
    counts[r.type] = (counts[r.type] ?? 0) + 1;
    if (r.type === 'event') {
      const rid = r.rid ?? r.seq;
      let q = requests.get(rid);
      if (!q) {
        q = { rid, target: r.target, session: r.session, events: [], outcomes: [] };
        requests.set(rid, q);
        const same = byTarget.get(r.target);
        byTarget.set(r.target, same === undefined ? rid : [same, rid].flat());
      }
      q.events.push({ seq: r.seq, verdict: r.verdict, held: r.held === true });
    } else if (r.type === 'outcome') {
      const q = requests.get(r.rid);
      if (q) q.outcomes.push({ seq: r.seq, status: r.status, error: r.error });
      else orphans.push(r);
    }
  }
  return { requests, byTarget, counts, orphans };
}

/**
 * The invariants; returns { failures: [...], figures }. `sent` is what the clients recorded:
 * one entry per request, with its URL (unique) and the status it received (or an error).
 */
export function check(journal, sent) {
  const failures = [];
  const fail = (what, examples) => {
    if (examples.length > 0)
      failures.push(`${what}: ${examples.length} (e.g. ${JSON.stringify(examples.slice(0, 3))})`);
  };
  const { requests, byTarget, orphans } = journal;
  const urls = new Set(sent.map((s) => s.url));

  fail(
    'client requests without a response',
    sent.filter((s) => s.error),
  );
  fail(
    'requests with no event record',
    sent.filter((s) => byTarget.get(s.url) === undefined),
  );
  fail(
    'URLs with more than one first event record',
    sent.filter((s) => Array.isArray(byTarget.get(s.url))),
  );
  fail(
    'requests in the journal that no client sent',
    [...requests.values()].filter((q) => !urls.has(q.target)),
  );
  fail('outcomes that name no request', orphans);

  const one = [];
  const undecided = [];
  const mismatch = [];
  const afterOutcome = [];
  const held = { total: 0, sent: 0, review: 0, denied: 0, timeout: 0, shutdown: 0, other: 0 };
  const sentByUrl = new Map(sent.map((s) => [s.url, s]));
  for (const q of requests.values()) {
    if (q.outcomes.length !== 1) {
      one.push({ rid: q.rid, outcomes: q.outcomes.length });
      continue;
    }
    const [outcome] = q.outcomes;
    const before = q.events.filter((e) => e.seq < outcome.seq);
    if (before.length !== q.events.length) afterOutcome.push(q.rid);
    const last = before.at(-1);
    // decided: not a bare "held" record, unless the outcome says the request was refused
    if (!last || (last.held && outcome.status !== 403)) undecided.push({ rid: q.rid, last });
    if (outcome.status === 200 && last?.verdict !== 'ALLOW') undecided.push({ rid: q.rid, last });
    const client = sentByUrl.get(q.target);
    if (client && !client.error && client.status !== outcome.status)
      mismatch.push({ url: q.target, client: client.status, journal: outcome.status });
    if (q.events.some((e) => e.verdict === 'PAUSE')) {
      held.total++;
      const end = client?.end ?? 'other';
      held[end in held ? end : 'other']++;
    }
  }
  fail('requests without exactly one outcome', one);
  fail('requests whose last event before the outcome is not decided', undecided);
  fail('event records written after the outcome', afterOutcome);
  fail('outcome status differs from what the client received', mismatch);
  // every held request ends sent, refused again (REVIEW), denied or timed out: none is left
  // to the shutdown, and none ends otherwise
  if (held.shutdown + held.other > 0)
    failures.push(
      `held requests left unanswered until shutdown or ended otherwise: ${held.shutdown + held.other}`,
    );
  return { failures, held };
}
