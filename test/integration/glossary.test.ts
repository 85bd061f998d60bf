import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { COMMAND_NAMES } from '../../src/cli/help.js';
import { parseConfig } from '../../src/config/load.js';
import { isTrajgateError } from '../../src/errors.js';
import { currentNames } from '../../src/journal/old-names.js';
import { adminClient } from '../helpers/admin.js';
import { runCliAsync } from '../helpers/cli.js';
import { startTestGateway } from '../helpers/gateway.js';
import { tempDir } from '../helpers/tmp.js';

/**
 * docs/glossary.md cannot drift: every command, admin route, config key, journal record and
 * field and page text an entry lists exists, and every old spelling it lists still works.
 */
const ROOT = join(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const ADMIN = 'glossary-admin-token-0123456789';

interface Entry {
  readonly name: string;
  readonly lists: readonly { readonly label: string; readonly items: readonly string[] }[];
}

/** `## name`, a description, then `- label: items` lines (items in backticks, page text in quotes). */
function entries(text: string): Entry[] {
  return text
    .split(/^## /m)
    .slice(1)
    .map((section) => {
      const [name = '', ...lines] = section.split('\n');
      const lists = lines
        .filter((l) => l.startsWith('- '))
        .map((l) => {
          const [label = '', rest = ''] = l.slice(2).split(/: (.*)/);
          const quoted = label === 'page' ? /"([^"]+)"/g : /`([^`]+)`/g;
          return { label, items: [...rest.matchAll(quoted)].map((m) => m[1] as string) };
        });
      return { name, lists };
    });
}

/** Quoted strings after `readonly type:` and the names of `readonly` fields in the record types. */
const recordSources = read('src/journal/records.ts') + read('src/wire.d.ts');
const RECORD_TYPES = new Set(
  [...recordSources.matchAll(/readonly type: ([^;]+);/g)].flatMap((m) =>
    [...(m[1] as string).matchAll(/'([^']+)'/g)].map((q) => q[1]),
  ),
);
const FIELDS = new Set([...recordSources.matchAll(/readonly (\w+)\??:/g)].map((m) => m[1]));
const PAGE = readdirSync(join(ROOT, 'src/review/page'))
  .filter((f) => f.endsWith('.ts'))
  .map((f) => read(`src/review/page/${f}`))
  .join('\n');

/** A config with `key` (dotted) set to `value` (null: just there): the problems it has. */
function configProblems(key: string, value: string | null): string[] {
  const dir = tempDir();
  const doc = key
    .split('.')
    .reverse()
    .reduce<unknown>((inner, k) => ({ [k]: inner }), value);
  try {
    parseConfig(stringify({ version: 1, workspace: dir, ...(doc as object) }), 'glossary', dir);
    return [];
  } catch (err) {
    if (!isTrajgateError(err)) throw err;
    return [...err.details];
  }
}

const glossary = entries(read('docs/glossary.md'));
const g = await startTestGateway({ admin: { token: ADMIN } });
afterAll(() => g.stop());

describe('docs/glossary.md', () => {
  it('has entries, each with a list in a known form', () => {
    expect(glossary.length).toBeGreaterThan(20);
    const labels = new Set(['CLI', 'API', 'config', 'page', 'journal record', 'journal field']);
    for (const l of [...labels]) labels.add(`old ${l}`);
    for (const { name, lists } of glossary) {
      for (const { label, items } of lists) {
        expect(labels.has(label), `${name}: "- ${label}:"`).toBe(true);
        expect(items.length, `${name}: ${label} names nothing`).toBeGreaterThan(0);
      }
    }
    // The names that were made one are there.
    expect(glossary.map((e) => e.name)).toEqual(
      expect.arrayContaining(['deny pattern', 'deny', 'block', 'request id', 'review', 'inspect']),
    );
  });

  it.each(glossary)('$name: what it names exists', async ({ name, lists }) => {
    const api = adminClient(g.gw.admin.port, ADMIN);
    for (const { label, items } of lists) {
      for (const item of items) {
        const where = `${name}: ${label} ${item}`;
        switch (label) {
          case 'CLI':
            expect(COMMAND_NAMES, where).toContain(item.replace(/^trajgate /, ''));
            break;
          case 'old CLI': {
            // An old name works as the new one and says so.
            const r = await runCliAsync([item.replace(/^trajgate /, ''), '--help']);
            expect(r.status, where).toBe(0);
            expect(r.stdout, where).toMatch(/^usage: trajgate /);
            expect(r.stderr, where).toMatch(/is now "[a-z-]+"; the old name goes in the next/);
            break;
          }
          case 'API':
          case 'old API': {
            const [method = '', path = ''] = item.split(' ');
            const res = await api.call(method, path.replace(/:\w+/g, 'glossary-x'), {
              ...(method === 'POST' ? { body: {} } : {}),
            });
            expect(['E_NOT_FOUND', 'E_METHOD'], where).not.toContain(res.json?.error?.code);
            break;
          }
          case 'config': {
            const [key = '', value = null] = item.split(': ');
            const problems = configProblems(key, value);
            if (value === null) expect(problems.join('\n'), where).not.toMatch(/unknown key/);
            else expect(problems, where).toEqual([]);
            break;
          }
          case 'journal record':
            expect(RECORD_TYPES.has(item), where).toBe(true);
            break;
          case 'journal field':
            expect(FIELDS.has(item), where).toBe(true);
            break;
          case 'old journal record': {
            const now = currentNames({ type: item }).type;
            expect(now !== item && RECORD_TYPES.has(now), where).toBe(true);
            break;
          }
          case 'old journal field':
            expect(Object.keys(currentNames({ [item]: 1 })), where).not.toContain(item);
            break;
          case 'page':
            expect(PAGE.includes(item), where).toBe(true);
            break;
        }
      }
    }
  });
});
