import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { journalFiles, listRotated } from '../../src/journal/files.js';
import { adminClient } from '../helpers/admin.js';
import { runCliAsync } from '../helpers/cli.js';
import type { TestGateway } from '../helpers/gateway.js';
import { readAllRecords, startTestGateway } from '../helpers/gateway.js';
import { agentToken, postAsAgent } from '../helpers/ingest.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * A paused agent floods the journal through the runner routes with the
 * largest bodies they take (results with 60 KB targets and long errors, events refused while
 * paused). Every record is bounded and `journal.keepFor` keeps the rotated files, so the pause,
 * the event that paused it and its recent events survive; a restart is still paused and a
 * replay gives the same PAUSE.
 */
const ADMIN = 'admin-token-0123456789abcdef';
const FLOOD = 150;
let g: TestGateway | undefined;
afterEach(async () => {
  await g?.stop();
  g = undefined;
});

const start = (ws: string, dir: string) =>
  startTestGateway(
    {
      workspace: ws,
      journal: { path: join(dir, 'journal.jsonl'), rotate: 8192, keep: 1 },
      agents: [{ id: 'a', token: agentToken('a') }],
      admin: { token: ADMIN },
      policy: { pause: 'block' },
    },
    { dir },
  );

describe('ingest floods cannot rotate a pause out of the journal', () => {
  it('150 large results and refused events: the pause and its trigger stay, restart still paused', async () => {
    const ws = tempDir();
    const dir = tempDir();
    g = await start(ws, dir);
    const bridge = `http://127.0.0.1:${g.gw.bridge.port}`;
    const trigger = await postAsAgent(`${bridge}/events`, 'a', {
      kind: 'write',
      target: '/etc/cron.d/x',
    });
    expect(trigger.json.verdict).toBe('PAUSE');

    const big = 'x'.repeat(60_000);
    for (let i = 0; i < FLOOD; i++) {
      const result = await postAsAgent(`${bridge}/events/result`, 'a', {
        kind: 'read',
        target: `${i}/${big}`,
        ok: false,
        error: 'e'.repeat(4_000),
      });
      expect(result.status).toBeLessThan(500);
      const refused = await postAsAgent(`${bridge}/events`, 'a', { kind: 'read', target: big });
      expect(refused.json.verdict).toBe('PAUSE');
    }

    const path = g.journalPath;
    expect(listRotated(path).length).toBeGreaterThan(10);
    const all = readAllRecords(path);
    expect(all.find((r) => r.type === 'event')).toMatchObject({
      target: '/etc/cron.d/x',
      verdict: 'PAUSE',
    });
    expect(all.some((r) => r.type === 'pause' && r.session === 'a')).toBe(true);
    // Every record but a snapshot (its head and part lines) is bounded, whatever the agent sent.
    for (const f of journalFiles(path))
      for (const line of readFileSync(f, 'utf8').split('\n').filter(Boolean))
        if (!line.includes('"type":"snapshot')) expect(line.length).toBeLessThan(12_000);

    const api = adminClient(g.gw.admin.port, ADMIN);
    const sessions = (await api.get('/api/sessions')).json.sessions as {
      id: string;
      state: string;
    }[];
    expect(sessions.find((s) => s.id === 'a')?.state).toBe('paused');
    await g.stop();

    g = await start(ws, dir);
    const again = await postAsAgent(`http://127.0.0.1:${g.gw.bridge.port}/events`, 'a', {
      kind: 'read',
      target: 'harmless',
    });
    expect(again.json.verdict).toBe('PAUSE');
    await g.stop();
    g = undefined;
    const replayed = await runCliAsync(['replay', path, '--workspace', ws]);
    expect(replayed.status).toBe(0);
    expect(replayed.stdout.split('\n')[0]).toBe('PAUSE: workspace');
  });
});
