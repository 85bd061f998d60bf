import {
  mkdirSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import type { TestGateway } from '../helpers/gateway.js';
import { postAsAgent, startIngestGateway } from '../helpers/ingest.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * `replay` of a journal gives the verdicts the live gateway gave: a path event is judged as it
 * was resolved at decision time (the record's `resolved`), not as the file system reads when
 * the journal is replayed, so a link swapped after the call cannot change the verdict.
 */
let g: TestGateway | undefined;
afterEach(async () => {
  await g?.stop();
  g = undefined;
});

const verdicts = (journal: string): string[] =>
  readFileSync(journal, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((r) => r.type === 'event')
    .map((r) => (r.verdict === 'ALLOW' ? 'ALLOW' : `${r.verdict}: ${r.boundary}`));

describe('replay judges the path as it was resolved', () => {
  it('a link swapped after the call: replay gives the live verdicts', async () => {
    const ws = realpathSync(tempDir());
    const outside = realpathSync(tempDir());
    mkdirSync(join(ws, 'inside'));
    const link = join(ws, 'link');
    symlinkSync(join(ws, 'inside'), link);
    const started = await startIngestGateway(ws, ['a']);
    g = started.g;
    const write = () =>
      postAsAgent(`${started.bridge}/events`, 'a', { kind: 'write', target: 'link/f' });
    expect((await write()).json.verdict).toBe('ALLOW');
    unlinkSync(link);
    symlinkSync(outside, link);
    expect((await write()).json.verdict).toBe('PAUSE');
    // Back inside: a replay that resolved again would judge both writes as inside.
    unlinkSync(link);
    symlinkSync(join(ws, 'inside'), link);

    const records = g.records().filter((r) => r.type === 'event');
    expect(records.map((r) => (r as { resolved?: unknown }).resolved)).toEqual([
      join(ws, 'inside', 'f'),
      join(outside, 'f'),
    ]);
    const live = verdicts(g.journalPath);
    expect(live).toEqual(['ALLOW', 'PAUSE: workspace']);
    const r = runCli(['replay', g.journalPath, '--workspace', ws]);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim().split('\n')).toEqual(live);
  });

  it('a line without "resolved" is resolved again; a bad one names its line and field', () => {
    const ws = realpathSync(tempDir());
    const file = join(tempDir(), 'lines.jsonl');
    writeFileSync(
      file,
      '{"kind":"write","target":"/outside/x"}\n' +
        '{"kind":"write","target":"/outside/y","resolved":"' +
        join(ws, 'y') +
        '"}\n',
    );
    const ok = runCli(['replay', file, '--workspace', ws]);
    expect(ok.stdout).toBe('PAUSE: workspace\nALLOW\n');
    writeFileSync(file, '{"kind":"read","target":"x","resolved":"relative/x"}\n');
    const bad = runCli(['replay', file, '--workspace', ws]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain(`${file}:1`);
    expect(bad.stderr).toContain('"resolved" must be an absolute path or null');
  });

  it('an agent cannot send "resolved" or "alias": ingest refuses them', async () => {
    const ws = realpathSync(tempDir());
    const started = await startIngestGateway(ws, ['a']);
    g = started.g;
    for (const field of ['resolved', 'alias']) {
      const out = await postAsAgent(`${started.bridge}/events`, 'a', {
        kind: 'write',
        target: '/etc/x',
        [field]: join(ws, 'x'),
      });
      expect(out.status).toBe(400);
      expect(out.json.error.message).toContain(`"${field}" is set by trajgate`);
    }
  });
});
