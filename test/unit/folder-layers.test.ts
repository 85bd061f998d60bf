import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The folders under src/ form a DAG (drawn in docs/architecture.md § Layout): no folder may
 * import, directly or through others, from a folder that imports it. A file directly in src/
 * (gateway.ts, pipeline.ts, …) is a node of its own. Inside a folder the files form a DAG too:
 * types two files share live in a third they both import. `import type` counts like a value
 * import. The review page (src/review/page/) is a separate browser build and is left out.
 */

const SRC = resolve(import.meta.dirname, '../../src');
const EXCLUDED = [join(SRC, 'review', 'page')];

/** One file import that makes an edge between two folders. */
interface Import {
  from: string;
  to: string;
}

/** from-node → to-node → the file imports behind that edge. */
type FolderGraph = Map<string, Map<string, Import[]>>;

/** Imports between two files of one folder, by `src/…` path: from-file → to-file → itself. */
type FileGraph = Map<string, Map<string, Import[]>>;

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!EXCLUDED.includes(path)) files.push(...sourceFiles(path));
    } else if (entry.name.endsWith('.ts')) files.push(path);
  }
  return files;
}

/** Relative module specifiers of `import`, `import type`, `export … from` and `import()`. */
function relativeSpecifiers(source: string): string[] {
  return ts
    .preProcessFile(source, true, true)
    .importedFiles.map((f) => f.fileName)
    .filter((name) => name.startsWith('./') || name.startsWith('../'));
}

/** `./load.js` → `load.ts`, or `load.d.ts` for a declaration file (src/wire.d.ts). */
function sourceOf(path: string): string {
  const ts = path.replace(/\.js$/, '.ts');
  const declaration = path.replace(/\.js$/, '.d.ts');
  return !existsSync(ts) && existsSync(declaration) ? declaration : ts;
}

/** `src/config/load.ts` → `config`; `src/gateway.ts` → `gateway`; `src/wire.d.ts` → `wire`. */
function nodeOf(file: string): string {
  const parts = relative(SRC, file).split(sep);
  return parts.length > 1 ? parts[0]! : parts[0]!.replace(/(\.d)?\.ts$/, '');
}

function addEdge(graph: FolderGraph | FileGraph, from: string, to: string, edge: Import): void {
  const edges = graph.get(from) ?? new Map<string, Import[]>();
  graph.set(from, edges);
  const list = edges.get(to) ?? [];
  edges.set(to, list);
  list.push(edge);
}

function importGraphs(): { graph: FolderGraph; inside: FileGraph; files: number; imports: number } {
  const graph: FolderGraph = new Map();
  const inside: FileGraph = new Map();
  const files = sourceFiles(SRC);
  let imports = 0;
  for (const file of files) {
    for (const specifier of relativeSpecifiers(readFileSync(file, 'utf8'))) {
      const target = sourceOf(resolve(dirname(file), specifier));
      if (relative(SRC, target).startsWith('..')) continue; // outside src/ (none today)
      if (!existsSync(target)) {
        throw new Error(`${relative(SRC, file)}: cannot resolve ${specifier}`);
      }
      imports++;
      const edge = { from: `src/${relative(SRC, file)}`, to: `src/${relative(SRC, target)}` };
      if (dirname(file) === dirname(target)) addEdge(inside, edge.from, edge.to, edge);
      const from = nodeOf(file);
      const to = nodeOf(target);
      if (from !== to) addEdge(graph, from, to, edge);
    }
  }
  return { graph, inside, files: files.length, imports };
}

/**
 * One cycle per strongly connected component with more than one node (Tarjan), each as the
 * list of nodes walked, first node repeated at the end: `['config', 'guard', 'config']`.
 */
function findCycles(graph: ReadonlyMap<string, ReadonlyMap<string, unknown>>): string[][] {
  const nodes = [
    ...new Set([...graph.keys(), ...[...graph.values()].flatMap((e) => [...e.keys()])]),
  ].sort();
  const next = (node: string): string[] => [...(graph.get(node)?.keys() ?? [])].sort();
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const to of next(node)) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) components.push(component);
    }
  };
  for (const node of nodes) if (!index.has(node)) visit(node);

  // Within a component, the shortest way from its first node back to itself (breadth first).
  return components.map((component) => {
    const inside = new Set(component);
    const start = [...component].sort()[0]!;
    const previous = new Map<string, string>();
    const queue = [start];
    while (queue.length > 0 && !previous.has(start)) {
      const node = queue.shift()!;
      for (const to of next(node)) {
        if (!inside.has(to) || previous.has(to)) continue;
        previous.set(to, node);
        queue.push(to);
      }
    }
    const path: string[] = [];
    for (let node = previous.get(start)!; node !== start; node = previous.get(node)!) {
      path.unshift(node);
    }
    return [start, ...path, start];
  });
}

function describeCycle(graph: FolderGraph | FileGraph, cycle: string[]): string {
  const steps = cycle.slice(1).map((to, i) => {
    const first = graph.get(cycle[i]!)!.get(to)![0]!;
    return `  ${cycle[i]} → ${to}: ${first.from} imports ${first.to}`;
  });
  return [cycle.join(' → '), ...steps].join('\n');
}

describe('findCycles', () => {
  const graphOf = (edges: Record<string, string[]>) =>
    new Map(Object.entries(edges).map(([from, tos]) => [from, new Map(tos.map((to) => [to, []]))]));

  it('reports a two-folder cycle', () => {
    expect(findCycles(graphOf({ config: ['guard', 'event'], guard: ['config'] }))).toEqual([
      ['config', 'guard', 'config'],
    ]);
  });

  it('reports a longer cycle along its edges, and one per tangle', () => {
    const graph = graphOf({
      ingress: ['action', 'review'],
      action: ['journal'],
      journal: ['review'],
      review: ['ingress'],
      cli: ['gateway'],
      gateway: ['cli'],
    });
    expect(findCycles(graph)).toEqual(
      expect.arrayContaining([
        ['action', 'journal', 'review', 'ingress', 'action'],
        ['cli', 'gateway', 'cli'],
      ]),
    );
    expect(findCycles(graph)).toHaveLength(2);
  });

  it('finds nothing in a DAG', () => {
    expect(findCycles(graphOf({ a: ['b', 'c'], b: ['c'], c: [] }))).toEqual([]);
  });
});

describe('src/ folder layers', () => {
  const { graph, inside, files, imports } = importGraphs();

  it('reads the sources and their imports', () => {
    // Guards against a parser that silently sees nothing and so never finds a cycle.
    expect(files).toBeGreaterThan(50);
    expect(imports).toBeGreaterThan(200);
    expect(graph.get('ingress')?.has('event')).toBe(true);
    expect(graph.get('guard')?.get('event')?.length).toBeGreaterThan(0);
    // Type-only imports are edges too.
    expect(inside.get('src/guard/decision.ts')?.has('src/guard/compiled-policy.ts')).toBe(true);
    expect(inside.get('src/pipeline/pipeline.ts')?.has('src/pipeline/decide.ts')).toBe(true);
  });

  it('has no folder-level import cycle', () => {
    const cycles = findCycles(graph).map((cycle) => describeCycle(graph, cycle));
    expect(cycles, `folder import cycles:\n${cycles.join('\n')}`).toEqual([]);
  });

  it('has no import cycle between the files of a folder', () => {
    const cycles = findCycles(inside).map((cycle) => describeCycle(inside, cycle));
    expect(cycles, `file import cycles inside a folder:\n${cycles.join('\n')}`).toEqual([]);
  });
});
