import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { EventRecord, JournalRecord } from '../../src/journal/records.js';
import type { AdminClient } from './admin.js';
import { adminClient } from './admin.js';
import type { ChildGateway } from './child-gateway.js';
import { startChild, tempConfig } from './child-gateway.js';
import { runCliAsync } from './cli.js';
import type { RunResult } from './cli.js';
import type { TestRedis } from './redis.js';

export const ADMIN_TOKEN = 'admin-token-0123456789abcdef';
export const agentToken = (id: string): string => `${id}-token-0123456789abcdef`;
export const agents = (ids: readonly string[]) => ids.map((id) => ({ id, token: agentToken(id) }));

/** One trajgate replica: the built CLI in a child process on its own config and journal. */
export interface Replica {
  readonly name: string;
  readonly config: string;
  readonly journal: string;
  readonly child: ChildGateway;
  readonly api: AdminClient;
  /** Its journal's records now (a torn last line, still being written, is left out). */
  records(): JournalRecord[];
  /** Its event records of `session`. */
  events(session: string): EventRecord[];
}

/** The `state` key of a replica named `replica` sharing `redis` under `prefix`. */
export function redisState(redis: TestRedis, replica: string, prefix = 'trajgate-test:') {
  return { store: 'redis', redis: { url: redis.url, prefix, replica, timeout: '1s' } };
}

/**
 * `names.length` replicas sharing `redis` (same prefix and admin token, their own journals),
 * `config` merged over each one's temp config. Started one after the other: resolves once all
 * listen.
 */
export async function startReplicas(
  redis: TestRedis,
  names: readonly string[],
  config: Record<string, unknown>,
): Promise<Replica[]> {
  const replicas: Replica[] = [];
  for (const name of names) {
    const files = tempConfig({
      admin: { token: ADMIN_TOKEN },
      state: redisState(redis, name),
      ...config,
    });
    replicas.push(await startReplica(name, files.config, files.journal));
  }
  return replicas;
}

/** Starts (or restarts, on the same config and journal) one replica. */
export async function startReplica(
  name: string,
  config: string,
  journal: string,
): Promise<Replica> {
  const child = await startChild(config, 20_000);
  // startChild's afterAll does not run when the file fails while collecting: no stray replica.
  process.once('exit', () => {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  const records = () => readJournalLoose(journal);
  return {
    name,
    config,
    journal,
    child,
    api: adminClient(child.adminPort, ADMIN_TOKEN),
    records,
    events: (session) =>
      records().filter((r): r is EventRecord => r.type === 'event' && r.session === session),
  };
}

/** A journal's records; a last line still being written (not yet JSON) is left out. */
export function readJournalLoose(path: string): JournalRecord[] {
  if (!existsSync(path)) return [];
  const lines = readFileSync(path, 'utf8').split('\n');
  const out: JournalRecord[] = [];
  for (const [i, line] of lines.entries()) {
    if (line === '') continue;
    try {
      out.push(JSON.parse(line) as JournalRecord);
    } catch (err) {
      if (i < lines.length - 1 && lines[i + 1] !== '') throw err; // torn in the middle: a bug
    }
  }
  return out;
}

/** Every replica's event records of `session`, together. */
export const allEvents = (replicas: readonly Replica[], session: string): EventRecord[] =>
  replicas.flatMap((r) => r.events(session));

export interface ProxyAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** What agent `agent` gets from replica `r` for `url` (10 s at most). */
export const answerVia = (r: Replica, agent: string, url: string): Promise<ProxyAnswer> =>
  viaReplica(r.child.proxyPort, url, agent, 10_000).answer;

/** An answer's verdict header (`REVIEW; boundary=network`, …), as a string. */
export const verdictOf = (a: ProxyAnswer): string => String(a.headers['x-trajgate-verdict']);

/** A request in flight whose answer a test can check for without waiting (a held one). */
export interface Pending {
  readonly answer: Promise<ProxyAnswer>;
  settled(): boolean;
}

/**
 * GET `url` through the proxy on `port` as agent `agent` (absolute form, Basic credentials, a
 * connection of its own). Resolves with status 0 on a socket error or after `timeoutMs`.
 */
export function viaReplica(port: number, url: string, agent: string, timeoutMs = 60_000): Pending {
  let done = false;
  const answer = new Promise<ProxyAnswer>((resolve) => {
    const auth = Buffer.from(`${agent}:${agentToken(agent)}`).toString('base64');
    const req = request({
      host: '127.0.0.1',
      port,
      path: url,
      headers: { host: new URL(url).host, 'proxy-authorization': `Basic ${auth}` },
      agent: false,
      timeout: timeoutMs,
    });
    const fail = (why: string) => resolve({ status: 0, headers: {}, body: why });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (err) => fail(err.message));
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', (err) => fail(err.message));
    });
    req.end();
  }).finally(() => (done = true));
  return { answer, settled: () => done };
}

/** `trajgate state rebuild --from JOURNAL… --config FILE`, run to completion. */
export function stateRebuild(journals: readonly string[], config: string): Promise<RunResult> {
  return runCliAsync(['state', 'rebuild', '--from', ...journals, '--config', config], {
    timeoutMs: 30_000,
  });
}
