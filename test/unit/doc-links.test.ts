import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Tree } from '../helpers/markdown-links.js';
import { anchors, brokenLinks, links } from '../helpers/markdown-links.js';

/**
 * The documentation's relative links resolve: every link in README.md, docs/, bench/ and the
 * other Markdown files of the repository names a file that exists, and every `#anchor` a
 * heading of that file, by GitHub's rules. A link that a move of text left behind fails here,
 * naming the file, the line and the link.
 */
const ROOT = join(import.meta.dirname, '../..');
/** Built, installed or generated: not the repository's documentation. */
const SKIP = new Set(['.git', 'node_modules', 'dist', 'coverage', 'artifacts', 'out', 'data']);

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory()
      ? SKIP.has(d.name)
        ? []
        : markdownFiles(join(dir, d.name))
      : d.name.endsWith('.md')
        ? [join(dir, d.name)]
        : [],
  );
}

/** The repository as the checker sees it. */
const disk: Tree = {
  read(path) {
    const full = join(ROOT, path);
    try {
      return statSync(full).isDirectory() ? '' : readFileSync(full, 'utf8');
    } catch {
      return undefined;
    }
  },
};

/** A made-up repository of a few files. */
const memory = (files: Record<string, string>): Tree => ({
  read: (path) =>
    files[path] ?? (Object.keys(files).some((f) => f.startsWith(`${path}/`)) ? '' : undefined),
});

describe('anchors (GitHub heading slugs)', () => {
  it.each([
    ['## The forward proxy', 'the-forward-proxy'],
    ["## trajgate's own files", 'trajgates-own-files'],
    ['## The rule (seed parity)', 'the-rule-seed-parity'],
    ['## Ingest: `POST /events`', 'ingest-post-events'],
    ['## `start` and `check-config`', 'start-and-check-config'],
    ['## 2. Replicas sharing state through Redis', '2-replicas-sharing-state-through-redis'],
    ['### A [linked](x.md) heading ##', 'a-linked-heading'],
    ['## snake_case — and a dash', 'snake_case--and-a-dash'],
    ['Setext heading\n==============', 'setext-heading'],
  ])('%j → #%s', (heading, slug) => {
    expect([...anchors(heading)]).toEqual([slug]);
  });

  it('numbers repeated headings and skips fenced code', () => {
    const text =
      '## Notes\n\n```sh\n# not a heading\n```\n\n## Notes\n\n  ~~~\n  ## nor this\n  ~~~\n';
    expect([...anchors(text)]).toEqual(['notes', 'notes-1']);
  });
});

describe('links', () => {
  it('finds inline links, images and definitions, not code', () => {
    const text = [
      'See [a](docs/a.md#x) and ![pic](docs/p.png "title").',
      'Not `[b](nowhere.md)`, nor:',
      '```md',
      '[c](nowhere.md)',
      '```',
      '[ref]: <docs/r.md>',
    ].join('\n');
    expect(links(text)).toEqual([
      { line: 1, target: 'docs/a.md#x' },
      { line: 1, target: 'docs/p.png' },
      { line: 6, target: 'docs/r.md' },
    ]);
  });
});

describe('brokenLinks', () => {
  const tree = memory({
    'README.md': '# t\n',
    'docs/a.md': '# A\n\n## Pointing clients at it\n',
    'docs/p.png': 'png',
    'config/x.yaml': 'version: 1',
  });
  it.each([
    ['README.md', '[ok](docs/a.md)', []],
    ['README.md', '[ok](docs/a.md#pointing-clients-at-it) [ok](docs/) [ok](#t)', []],
    ['docs/a.md', '[ok](../config/x.yaml) ![ok](p.png) [ok](#a) [web](https://example.test/x)', []],
    [
      'README.md',
      'A made-up [broken link](docs/missing.md).',
      ['README.md:1: docs/missing.md: no file docs/missing.md'],
    ],
    [
      'README.md',
      '\n[stale](docs/a.md#the-forward-proxy)',
      [
        'README.md:2: docs/a.md#the-forward-proxy: no heading of docs/a.md makes #the-forward-proxy',
      ],
    ],
    ['docs/a.md', '[self](#nope)', ['docs/a.md:1: #nope: no heading of docs/a.md makes #nope']],
    [
      'docs/a.md',
      '[up](../../etc/passwd)',
      ['docs/a.md:1: ../../etc/passwd: outside the repository'],
    ],
    [
      'docs/a.md',
      '[yaml](../config/x.yaml#key)',
      ['docs/a.md:1: ../config/x.yaml#key: an anchor into config/x.yaml, which has no headings'],
    ],
  ])('%s: %s', (file, text, problems) => {
    expect(brokenLinks(file, text, tree)).toEqual(problems);
  });
});

describe("the repository's Markdown", () => {
  const files = markdownFiles(ROOT).map((f) => relative(ROOT, f).split(sep).join('/'));

  it('includes README.md, docs/ and bench/README.md', () => {
    expect(files).toEqual(
      expect.arrayContaining(['README.md', 'docs/configuration.md', 'bench/README.md']),
    );
  });

  it('has no broken relative link or anchor', () => {
    const problems = files.flatMap((f) => brokenLinks(f, disk.read(f) ?? '', disk));
    expect(problems).toEqual([]);
  });

  it('README.md stays a landing page of at most 300 lines', () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length - 1;
    expect(lines).toBeLessThanOrEqual(300);
  });
});
