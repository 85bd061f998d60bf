import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfig } from '../../src/config/load.js';
import { startGateway } from '../../src/gateway.js';
import type { RunningGateway } from '../../src/gateway.js';
import { journalFiles, listRotated, rotatedName } from '../../src/journal/files.js';
import { TARGET_BYTES } from '../../src/journal/long-target.js';
import type { EventRecord } from '../../src/journal/records.js';
import { adminClient } from '../helpers/admin.js';
import { exportHar, runCliAsync } from '../helpers/cli.js';
import { fillDisk } from '../helpers/full-disk.js';
import { readAllRecords } from '../helpers/gateway.js';
import { agents, viaReplica } from '../helpers/redis-replicas.js';
import { tempDir } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';

/**
 * Live: an agent makes one request (the "exfiltration record"), then floods
 * the journal with a few hundred long allowed URLs. With `keep: 1` and a 4 KiB rotation the
 * flood rotates the journal scores of times; `journal.keepFor` (7 days by default) keeps every
 * rotated file, so the first record is still there, and each long target is journaled as its
 * first 512 bytes with its size and SHA-256. With a keepFor of 1 ms, `keep` prunes as before.
 * When the disk is full and keepFor holds the files, requests are refused with 503 and
 * /api/health and the log say why.
 */
const ADMIN = 'admin-token-0123456789abcdef';
const FLOOD = 300;
const upstream = await startUpstream();
const EXFIL = `${upstream.url}/exfil?data=c2VjcmV0LWtleQ`;
const longUrl = (i: number) => `${upstream.url}/flood/${i}/${'a'.repeat(3000)}`;
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

interface Stage {
  readonly gw: RunningGateway;
  readonly path: string;
  readonly file: string;
  readonly logs: { level: number; msg: string }[];
}

async function stage(journal: Record<string, unknown>, dir = tempDir()): Promise<Stage> {
  const path = join(dir, 'journal.jsonl');
  const logs: Stage['logs'] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(JSON.parse(chunk.toString()) as Stage['logs'][number]);
      done();
    },
  });
  const config = {
    version: 1,
    workspace: tempDir('trajgate-ws-'),
    journal: { path, rotate: 4096, ...journal },
    listen: { proxy: '127.0.0.1:0', bridge: '127.0.0.1:0', admin: '127.0.0.1:0' },
    agents: agents(['agent-1']),
    admin: { token: ADMIN },
    network: { allow: [`127.0.0.1:${upstream.port}`], allowPrivate: ['127.0.0.1/32'] },
  };
  const file = join(dir, 'trajgate.yaml');
  writeFileSync(file, stringify(config));
  const gw = await startGateway(parseConfig(stringify(config), file, dir), {
    log: pino({ level: 'info' }, sink),
  });
  return { gw, path, file, logs };
}

const get = async (s: Stage, url: string) =>
  (await viaReplica(s.gw.proxy.port, url, 'agent-1').answer).status;

/** The exfiltration request, then the flood, each answered 200. */
async function exfiltrateThenFlood(s: Stage): Promise<void> {
  expect(await get(s, EXFIL)).toBe(200);
  for (let i = 0; i < FLOOD; i++) expect(await get(s, longUrl(i))).toBe(200);
}

/** The event records of every file of the journal, oldest first. */
const events = (path: string) =>
  readAllRecords(path).filter((r): r is EventRecord => r.type === 'event');

describe('a flood of long URLs cannot push an agent’s records out of the journal', () => {
  it('keepFor (default 7d) keeps every rotated file; long targets are prefix + SHA-256', async () => {
    const s = await stage({ keep: 1 });
    await exfiltrateThenFlood(s);
    const api = adminClient(s.gw.admin.port, ADMIN);

    const rotated = listRotated(s.path);
    expect(rotated.length).toBeGreaterThan(10);
    expect(rotated[0]?.n).toBe(1);
    const all = events(s.path);
    expect(all).toHaveLength(FLOOD + 1);
    expect(all[0]).toMatchObject({ target: EXFIL, verdict: 'ALLOW' });
    expect(all[0]?.targetSha256).toBeUndefined();
    for (const [i, e] of all.slice(1).entries()) {
      const url = longUrl(i);
      expect(e).toMatchObject({
        target: url.slice(0, TARGET_BYTES),
        targetBytes: url.length,
        targetSha256: sha256(url),
      });
    }
    // No line carries the whole of a long URL.
    for (const f of journalFiles(s.path))
      for (const line of readFileSync(f, 'utf8').split('\n'))
        expect(line).not.toContain('a'.repeat(TARGET_BYTES));

    // The event pages (read from the files) show the prefix and digest too.
    const page = await api.get('/api/sessions/agent-1/events?limit=5');
    expect(page.status).toBe(200);
    expect(page.json.events[0]).toMatchObject({ targetSha256: sha256(longUrl(FLOOD - 1)) });

    // Full disk, every rotated file younger than keepFor: refused with 503, and said why.
    const roomAgain = fillDisk(s.path);
    try {
      const refused = await viaReplica(s.gw.proxy.port, longUrl(0), 'agent-1').answer;
      expect(refused.status).toBe(503);
      expect(refused.body).toMatch(/cannot write its journal/);
      const health = (await api.get('/api/health')).json;
      expect(health).toMatchObject({ status: 'degraded', journal: { writable: false } });
      expect(health.journal.lastFailure.error).toMatch(
        new RegExp(
          `ENOSPC.*rotation could not free space: the ${rotated.length - 1} rotated file\\(s\\) beyond journal\\.keep \\(1\\) are younger than journal\\.keepFor \\(7d\\)`,
        ),
      );
      const logged = s.logs.filter((l) => l.level === 50 && l.msg.startsWith('journal: '));
      expect(logged[0]?.msg).toMatch(/younger than journal\.keepFor \(7d\)/);
    } finally {
      roomAgain();
    }
    expect(await get(s, EXFIL)).toBe(200);
    expect(listRotated(s.path)[0]?.n).toBe(1);
    await s.gw.stop();

    // A restart rebuilds from the live file; replay and HAR export read the prefixes.
    const again = await stage({ keep: 1 }, join(s.path, '..'));
    expect(again.gw.restored).toBeGreaterThan(0);
    expect(await get(again, longUrl(1))).toBe(200);
    await again.gw.stop();
    const judged = events(s.path).length;
    expect(judged).toBe(FLOOD + 3);
    const replayed = await runCliAsync(['replay', s.path, '--config', s.file]);
    expect(replayed.stderr).toBe('');
    expect(replayed.status).toBe(0);
    expect(replayed.stdout.trim().split('\n')).toHaveLength(judged);
    const har = await exportHar(s.path, 'agent-1');
    expect(har.status).toBe(0);
    const entries = JSON.parse(readFileSync(har.out, 'utf8')).log.entries as {
      request: { url: string };
      _trajgate: { targetSha256?: string };
    }[];
    expect(entries).toHaveLength(judged);
    expect(entries[0]?.request.url).toBe(EXFIL);
    expect(entries[1]?._trajgate.targetSha256).toBe(sha256(longUrl(0)));
  });

  it('with keepFor: 1ms, keep prunes as before: the first record is gone', async () => {
    const s = await stage({ keep: 1, keepFor: '1ms' });
    try {
      await exfiltrateThenFlood(s);
      const rotated = listRotated(s.path);
      expect(rotated.at(-1)?.n).toBeGreaterThan(10);
      // Only files rotated within the last millisecond can still be there beyond keep.
      expect(rotated.length).toBeLessThan(5);
      expect(rotated.map((r) => r.path)).not.toContain(rotatedName(s.path, 1));
      expect(events(s.path).some((e) => e.target === EXFIL)).toBe(false);
    } finally {
      await s.gw.stop();
    }
  });
});
