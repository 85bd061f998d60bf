import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach } from 'vitest';
import { stringify } from 'yaml';
import type { Lookup } from '../../src/action/egress.js';
import { parseConfig } from '../../src/config/load.js';
import type { RunningGateway } from '../../src/gateway.js';
import { startGateway } from '../../src/gateway.js';
import { journalFiles } from '../../src/journal/files.js';
import type { JournalRecord } from '../../src/journal/records.js';
import { withTestEngine } from './engine.js';
import { isPart } from '../../src/journal/snapshot-read.js';
import type { Tunnel } from './raw.js';
import { tempDir } from './tmp.js';

export interface TestGateway {
  readonly gw: RunningGateway;
  /** `http://127.0.0.1:PORT`, the proxy URL without credentials. */
  readonly proxyUrl: string;
  readonly journalPath: string;
  records(): JournalRecord[];
  stop(): Promise<void>;
}

export interface TestGatewayOptions {
  /** Resolves names instead of the system resolver. */
  readonly lookup?: Lookup;
  /**
   * The folder of its journal (a new temp folder by default; the same one again: a restart).
   * Its workspace, unless the config names one, is a temp folder of its own: trajgate's data
   * is never inside a workspace.
   */
  readonly dir?: string;
}

/**
 * A gateway in this process on loopback port 0, with its own temp workspace and journal (in
 * separate folders). `config` is merged over a base that listens on free ports.
 */
export async function startTestGateway(
  config: Record<string, unknown> = {},
  options: TestGatewayOptions = {},
): Promise<TestGateway> {
  const dir = options.dir ?? tempDir();
  const journalPath = join(dir, 'journal.jsonl');
  const text = stringify(
    withTestEngine({
      version: 1,
      workspace: config.workspace ?? tempDir('trajgate-ws-'),
      journal: journalPath,
      listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
      ...config,
    }),
  );
  const gw = await startGateway(parseConfig(text, 'test config', dir), {
    log: pino({ level: process.env.TEST_LOG ?? 'silent' }),
    ...(options.lookup ? { lookup: options.lookup } : {}),
  });
  return {
    gw,
    proxyUrl: `http://127.0.0.1:${gw.proxy.port}`,
    journalPath,
    records: () => readRecords(journalPath),
    stop: () => gw.stop().then(() => undefined),
  };
}

export function readRecords(path: string): JournalRecord[] {
  return (
    readFileSync(path, 'utf8')
      .split('\n')
      // A snapshot's part lines are no records (read back as one with their head).
      .filter((l) => l !== '' && !isPart(l))
      .map((l) => JSON.parse(l) as JournalRecord)
  );
}

/** Every record of the journal at `path`: its rotated files oldest first, then the live one. */
export function readAllRecords(path: string): JournalRecord[] {
  return journalFiles(path).flatMap(readRecords);
}

/**
 * One gateway per test on `base` (the test's own keys merged over it); after each test the
 * gateway is stopped and the tunnels the test kept are closed.
 */
export function gatewayPerTest(base: Record<string, unknown>): {
  /** `options`: as startTestGateway's (`dir` used before: a restart on its journal). */
  start(extra?: Record<string, unknown>, options?: TestGatewayOptions): Promise<TestGateway>;
  keep(tunnel: Tunnel): Tunnel;
  /** The test stopped the gateway itself. */
  stopped(): void;
} {
  let current: TestGateway | undefined;
  const tunnels: Tunnel[] = [];
  afterEach(async () => {
    for (const t of tunnels.splice(0)) t.socket.destroy();
    await current?.stop();
    current = undefined;
  });
  return {
    async start(extra = {}, options = {}) {
      current = await startTestGateway({ ...base, ...extra }, options);
      return current;
    },
    keep(tunnel) {
      tunnels.push(tunnel);
      return tunnel;
    },
    stopped() {
      current = undefined;
    },
  };
}

export const AGENT_TOKEN = 'agent-1-token-0123456789abcdef';

/**
 * `bridge.routes` of a plain-HTTP file server (`protocol: http`): a write whose target is a
 * JSON body field, a read and a delete whose target is a query parameter (a path segment
 * cannot carry the absolute path trajgate forwards).
 */
export const FILE_ROUTES = [
  { method: 'POST', path: '/fs/write', kind: 'write', target: '$.path' },
  { method: 'GET', path: '/fs/read', kind: 'read', target: 'query:path' },
  { method: 'DELETE', path: '/files', kind: 'write', target: 'query:path' },
];

/**
 * A gateway for a whole test file whose bridge fronts `upstream` for `agent-1` (token
 * AGENT_TOKEN) on `workspace`, pauses refused at once (`policy.pause: block`). `bridge` adds
 * to the bridge's config (`protocol: 'http'` and its `routes`).
 */
export async function bridgeGateway(
  workspace: string,
  upstream: string,
  bridge: Record<string, unknown> = {},
): Promise<TestGateway> {
  const g = await startTestGateway(
    {
      workspace,
      agents: [{ id: 'agent-1', token: AGENT_TOKEN }],
      policy: { pause: 'block' },
      bridge: { upstream, ...bridge },
    },
    { dir: tempDir() },
  );
  afterAll(() => g.stop());
  return g;
}
