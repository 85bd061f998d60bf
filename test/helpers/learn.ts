import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { parse, stringify } from 'yaml';
import type { EventRecord, JournalRecord } from '../../src/journal/records.js';
import { runCliAsync, runCliPiped } from './cli.js';
import { tempDir } from './tmp.js';

type Config = Record<string, any>;

/** `trajgate learn ARGS`: exit 0 and its YAML patch, parsed. */
export async function learnPatch(args: string[]): Promise<{ text: string; patch: Config }> {
  const r = await runCliAsync(['learn', ...args]);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return { text: r.stdout, patch: parse(r.stdout) as Config };
}

/** `base` with the patch merged in: its network.allow and each agent's allow appended. */
export function withPatch(base: Config, patch: Config): Config {
  const out = structuredClone(base);
  if (patch.network?.allow !== undefined) {
    out.network = {
      ...out.network,
      allow: [...(out.network?.allow ?? []), ...patch.network.allow],
    };
  }
  for (const a of (patch.agents ?? []) as Config[]) {
    const mine = (out.agents as Config[]).find((x) => x.id === a.id) as Config;
    mine.allow = [...(mine.allow ?? []), ...a.allow];
  }
  return out;
}

/** Writes `config` (with a fresh workspace and journal) and expects `check-config` to say ok. */
export async function checkedConfig(config: Config): Promise<string> {
  const dir = tempDir();
  const file = join(dir, 'trajgate.yaml');
  const ws = tempDir('trajgate-ws-');
  writeFileSync(
    file,
    stringify({
      version: 1,
      workspace: ws,
      journal: join(dir, 'data', 'journal.jsonl'),
      ...config,
    }),
  );
  const r = await runCliAsync(['check-config', file]);
  expect(r.stdout + r.stderr).toMatch(/^ok\n/);
  expect(r.status).toBe(0);
  return file;
}

/**
 * The journal's network requests (each by the first record of its request id) judged again
 * by `replay --json` as bare events against `config`, in order: `METHOD TARGET` (or the
 * authority of a tunnel) and the verdict replay gave it.
 */
export async function replayedRequests(
  records: readonly JournalRecord[],
  config: string,
): Promise<[string, string][]> {
  const seen = new Set<number>();
  const firsts: EventRecord[] = [];
  for (const r of records) {
    if (r.type !== 'event' || r.kind !== 'network' || seen.has(r.rid ?? r.seq)) continue;
    seen.add(r.rid ?? r.seq);
    firsts.push(r);
  }
  const input = firsts
    .map(({ kind, target, method, session, ts }) =>
      JSON.stringify({ kind, target, method, session, ts }),
    )
    .join('\n');
  const r = await runCliPiped(['replay', '-', '--json', '--config', config], { input });
  expect(r.stderr).toBe('');
  const verdicts = r.stdout
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { verdict: string }).verdict);
  expect(verdicts).toHaveLength(firsts.length);
  return firsts.map((e, i) => [`${e.method ?? 'CONNECT'} ${e.target}`, verdicts[i] as string]);
}
