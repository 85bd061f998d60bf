import { afterAll, describe, expect, it } from 'vitest';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { exchange } from '../helpers/raw.js';
import type { RecordingUpstream } from '../helpers/recording-upstream.js';
import { startRecordingUpstream } from '../helpers/recording-upstream.js';
import { connectHead, corpusRequests } from '../helpers/request-corpus.js';
import { generatedRequests } from '../helpers/request-mutations.js';
import { waitFor } from '../helpers/wait.js';
import type { JournalRecord } from '../../src/journal/records.js';

/**
 * The lean engine end to end against node:http, the reference: every request of the proxy
 * suites' corpus and a sample of the generated mutations goes as raw bytes to a gateway on each
 * engine, each with its own raw upstream that records the bytes it receives, to the listener
 * and again inside a read CONNECT tunnel (`CONNECT host:port`, then the same bytes). Both must
 * journal the same judgement (events' verdicts, refusals' status and reason, outcomes' status),
 * send the same bytes up and give the agent the same answer bytes (Date aside); or the lean
 * engine refuses where node:http forwarded (STRICTER, each with its reason), never the reverse.
 */
const SEED = 0x1ea9;
/** One mutation in SAMPLE_EVERY, spread over every family the generator makes. */
const SAMPLE_EVERY = 40;
const HEADER_BYTES = 16_384;

/** Cases where the lean engine refuses what node:http forwards, on purpose, and why: none yet. */
const STRICTER = new Map<string, string>([]);

const SUMMED = /^\d+ more refusals within one second/;

type Engine = 'node' | 'lean';
/** Where the bytes are sent: to the listener, or inside a CONNECT tunnel trajgate reads. */
type Via = 'listener' | 'tunnel';
const upstreams: Record<Engine, RecordingUpstream> = {
  node: await startRecordingUpstream({}),
  lean: await startRecordingUpstream({}),
};
/** Method patterns only: a CONNECT to the upstream is read, each request in it judged. */
const READ_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const allow = (engine: Engine, via: Via) => {
  const authority = `127.0.0.1:${upstreams[engine].port}`;
  return via === 'listener' ? [authority] : READ_METHODS.map((m) => `${m} ${authority}`);
};
const config = (engine: Engine, via: Via) => ({
  engine,
  network: { allow: allow(engine, via), allowPrivate: ['127.0.0.1/32'] },
  // One session (one client address) sends every case: a crossing is refused REVIEW, never
  // held, so no case waits on one before it (a hold's end is a matter of timing).
  policy: {
    boundaries: {
      network: { kinds: ['network'], unless: 'approved', reviewAt: 1, pauseAt: 1_000_000 },
    },
  },
  limits: {
    headerBytes: HEADER_BYTES,
    headerTimeout: '1s',
    keepAliveIdle: '200ms',
    tunnelIdle: '200ms',
    upstreamTimeout: '1s',
    bodyTimeout: '1s',
  },
});
const gateways: Record<Via, Record<Engine, TestGateway>> = {
  listener: {
    node: await startTestGateway(config('node', 'listener')),
    lean: await startTestGateway(config('lean', 'listener')),
  },
  tunnel: {
    node: await startTestGateway(config('node', 'tunnel')),
    lean: await startTestGateway(config('lean', 'tunnel')),
  },
};
afterAll(async () => {
  const all = Object.values(gateways).flatMap((byEngine) => Object.values(byEngine));
  await Promise.all(all.map((g) => g.stop()));
  for (const up of Object.values(upstreams)) up.server.close();
});

interface Seen {
  readonly answer: string;
  readonly upstream: string[];
  readonly journal: unknown[];
}

/** What a record says of the judgement, ports and times left out. */
function judgement(r: JournalRecord): unknown {
  if (r.type === 'event')
    return { type: r.type, method: r.method, target: r.target, verdict: r.verdict };
  if (r.type === 'refusal') return { type: r.type, status: r.status, reason: r.reason };
  if (r.type === 'outcome') return { type: r.type, status: r.status, error: r.error };
  return { type: r.type };
}

/**
 * The bytes inside a tunnel to the upstream: the mutations' host `a.test` named as the tunnel's
 * authority, so a request the tunnel's rules admit is judged and forwarded, not refused 421.
 */
function tunnelled(bytes: Buffer, port: number): Buffer {
  const authority = `127.0.0.1:${port}`;
  const inner = bytes
    .toString('latin1')
    .replaceAll('Host: a.test\r\n', `Host: ${authority}\r\n`)
    .replaceAll('http://a.test/', `http://${authority}/`);
  return Buffer.concat([Buffer.from(connectHead(authority)), Buffer.from(inner, 'latin1')]);
}

/** Sends `bytes` through one engine's gateway: its answer, upstream bytes and journal lines. */
async function through(engine: Engine, via: Via, bytes: (port: number) => Buffer): Promise<Seen> {
  const g = gateways[via][engine];
  const up = upstreams[engine];
  const from = { up: up.requests.length, journal: g.records().length };
  const sent = via === 'listener' ? bytes(up.port) : tunnelled(bytes(up.port), up.port);
  const res = await exchange(g.gw.proxy.port, sent, { timeoutMs: 10_000 });
  // Outcomes follow the answer: wait for one per event judged (one missing is a difference).
  let records: JournalRecord[] = [];
  await waitFor(() => {
    records = g.records().slice(from.journal);
    const events = records.filter((r) => r.type === 'event').length;
    return records.filter((r) => r.type === 'outcome').length >= events;
  }, 3_000).catch(() => undefined);
  // A crossing's number counts the session's earlier cases (see pipelinedUnjudged).
  const port = (s: string) =>
    s.replaceAll(String(up.port), 'PORT').replace(/network crossing \d+/g, 'network crossing N');
  return {
    answer: port(res.text.replace(/\r\ndate: [^\r]*/gi, '')),
    upstream: up.requests.slice(from.up).map((r) => port(unchunked(r.bytes))),
    // Past 20 refusals a second the journal sums them up: where a second ends is timing.
    journal: records
      .filter((r) => !(r.type === 'refusal' && SUMMED.test(r.reason)))
      .map((r) => JSON.parse(port(JSON.stringify(judgement(r))))),
  };
}

/**
 * A chunked message with its data as one piece: each engine forwards the body in the pieces it
 * read, so where the pieces end is timing; the data, and whether its last chunk came, are not.
 */
function unchunked(bytes: string): string {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0 || !/\r\ntransfer-encoding: chunked\r\n/i.test(bytes.slice(0, end + 2))) return bytes;
  let rest = bytes.slice(end + 4);
  let data = '';
  let last = false;
  for (let line = rest.indexOf('\r\n'); line >= 0 && !last; line = rest.indexOf('\r\n')) {
    const size = parseInt(rest.slice(0, line), 16);
    last = size === 0;
    data += rest.slice(line + 2, line + 2 + size);
    rest = rest.slice(line + 4 + size);
  }
  return `${bytes.slice(0, end + 4)}${JSON.stringify(data)}${last ? ' (last chunk)' : ''}`;
}

/** Lean refused (nothing up, a refusal journaled) what node:http forwarded. */
const leanStricter = (node: Seen, lean: Seen) =>
  node.upstream.length > 0 &&
  lean.upstream.length === 0 &&
  lean.journal.some((j) => (j as { type: string }).type === 'refusal');

/**
 * node:http emits pipelined requests as it parses them, so it judges one queued behind a
 * request whose refusal then closes the connection; the lean engine serves them in order and
 * never reads it. Neither forwards nor answers it: the agent and the upstream see the same, the
 * lean journal lacks that judgement only (its records are node's first ones).
 */
const pipelinedUnjudged = (name: string, node: Seen, lean: Seen) =>
  name.startsWith('pipeline') &&
  node.answer === lean.answer &&
  JSON.stringify(node.upstream) === JSON.stringify(lean.upstream) &&
  JSON.stringify(node.journal.slice(0, lean.journal.length)) === JSON.stringify(lean.journal);

/**
 * node:http judges and forwards pipelined requests at once (their answers wait their turn); the
 * lean engine one after another: the same requests judged and sent up, the same answers, in
 * another order up and in the journal.
 */
const sorted = (list: readonly unknown[]) =>
  JSON.stringify(list.map((x) => JSON.stringify(x)).sort());
const pipelinedConcurrent = (name: string, node: Seen, lean: Seen) =>
  name.startsWith('pipeline') &&
  node.answer === lean.answer &&
  sorted(node.upstream) === sorted(lean.upstream) &&
  sorted(node.journal) === sorted(lean.journal);

async function differ(
  via: Via,
  cases: readonly { name: string; bytes: (port: number) => Buffer }[],
) {
  const unlike: { name: string; node: Seen; lean: Seen }[] = [];
  for (const c of cases) {
    const [node, lean] = await Promise.all([
      through('node', via, c.bytes),
      through('lean', via, c.bytes),
    ]);
    const same =
      node.answer === lean.answer &&
      JSON.stringify(node.upstream) === JSON.stringify(lean.upstream) &&
      JSON.stringify(node.journal) === JSON.stringify(lean.journal);
    if (same) continue;
    if (pipelinedUnjudged(c.name, node, lean)) continue;
    if (pipelinedConcurrent(c.name, node, lean)) continue;
    if (STRICTER.has(c.name) && leanStricter(node, lean)) continue;
    else unlike.push({ name: c.name, node, lean });
  }
  return unlike;
}

describe.each<Via>(['listener', 'tunnel'])('lean engine vs node:http, end to end: %s', (via) => {
  it("the proxy suites' requests: same judgement, upstream bytes and answer", async () => {
    const names = corpusRequests(0).map((c) => c.name);
    const cases = names.map((name, i) => ({
      name,
      bytes: (port: number) => corpusRequests(port)[i]!.bytes,
    }));
    expect(await differ(via, cases)).toEqual([]);
  }, 120_000);

  it('a sample of the generated mutations: the same, or lean stricter where listed', async () => {
    // Origin-form targets: the listener refuses them, after the parse, as it refuses any.
    const all = generatedRequests(SEED, HEADER_BYTES);
    const sample = all.filter((_, i) => i % SAMPLE_EVERY === 0);
    expect(sample.length).toBeGreaterThan(50);
    const cases = sample.map((c) => ({ name: c.name, bytes: () => c.bytes }));
    expect(await differ(via, cases)).toEqual([]);
  }, 300_000);
});
