import { posix } from 'node:path';

/**
 * Relative links in Markdown and the headings they point at, read as GitHub renders them: the
 * link checker of the documentation (test/unit/doc-links.test.ts). Pure: the files come from
 * a `Tree`, so that a made-up tree can show that a broken link is caught.
 */

/** What the checker may ask of the files: a path relative to the repository's root. */
export interface Tree {
  /** The file's text, '' for a folder, undefined when there is nothing at that path. */
  read(path: string): string | undefined;
}

/** A fence line (``` or ~~~, possibly indented inside a list item): its character and length. */
const FENCE = /^ *(`{3,}|~{3,})/;

/** Each line with whether it lies inside a fenced code block (the fence lines included). */
function linesOutsideCode(text: string): { line: string; code: boolean }[] {
  let open: string | null = null;
  return text.split('\n').map((line) => {
    const fence = FENCE.exec(line)?.[1];
    if (open === null && fence !== undefined) {
      open = fence;
      return { line, code: true };
    }
    if (open !== null) {
      if (fence !== undefined && fence[0] === open[0] && fence.length >= open.length) open = null;
      return { line, code: true };
    }
    return { line, code: false };
  });
}

/** A heading's text as rendered: code spans keep their text, links their label, no markup. */
function renderedText(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/`/g, '')
    .trim();
}

/**
 * GitHub's anchor for a heading: lower case, every character but letters, marks, digits,
 * `_`, `-` and spaces dropped, spaces made `-`; the second heading of one slug gets `-1`, the
 * third `-2` (github-slugger).
 */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const lines = linesOutsideCode(text);
  lines.forEach(({ line, code }, i) => {
    if (code) return;
    let heading = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(line)?.[1];
    const previous = lines[i - 1];
    if (
      heading === undefined &&
      /^ {0,3}(=+|-+)[ \t]*$/.test(line) &&
      previous !== undefined &&
      !previous.code &&
      /^ {0,3}[^\s#>|*+-]/.test(previous.line)
    ) {
      heading = previous.line.trim();
    }
    if (heading === undefined) return;
    const base = renderedText(heading)
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  });
  return out;
}

/** A link found in a file: its line (1-based) and destination as written. */
export interface Link {
  line: number;
  target: string;
}

/** Inline links and images (`[t](dest)`, `![a](dest)`) and definitions (`[r]: dest`). */
export function links(text: string): Link[] {
  const found: Link[] = [];
  linesOutsideCode(text).forEach(({ line, code }, i) => {
    if (code) return;
    // Code spans are text, never links: `[a](b)` inside backticks is left alone.
    const plain = line.replace(/(`+)[^`]*?\1/g, (span) => ' '.repeat(span.length));
    for (const m of plain.matchAll(/\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+"[^"]*")?\s*\)/g)) {
      found.push({ line: i + 1, target: m[1]!.replace(/^<|>$/g, '') });
    }
    const definition = /^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/.exec(plain);
    if (definition) found.push({ line: i + 1, target: definition[1]!.replace(/^<|>$/g, '') });
  });
  return found;
}

/** `scheme:` (https:, mailto:, …): not a file of the repository. */
const EXTERNAL = /^[a-z][a-z0-9+.-]*:/i;

/**
 * Every relative link of `file` (a path from the repository's root) that does not resolve:
 * no file there, or a `#anchor` that no heading of the target file makes. One line each,
 * `file:line: target: why`.
 */
export function brokenLinks(file: string, text: string, tree: Tree): string[] {
  const problems: string[] = [];
  for (const { line, target } of links(text)) {
    if (EXTERNAL.test(target)) continue;
    const hash = target.indexOf('#');
    const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
    const anchor = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
    const where = `${file}:${line}: ${target}`;
    const path =
      pathPart === '' ? file : posix.normalize(posix.join(posix.dirname(file), pathPart));
    if (path.startsWith('../') || posix.isAbsolute(path)) {
      problems.push(`${where}: outside the repository`);
      continue;
    }
    const content = tree.read(path.replace(/\/$/, ''));
    if (content === undefined) {
      problems.push(`${where}: no file ${path}`);
      continue;
    }
    if (anchor === null) continue;
    if (!path.endsWith('.md')) {
      problems.push(`${where}: an anchor into ${path}, which has no headings`);
    } else if (!anchors(content).has(anchor)) {
      problems.push(`${where}: no heading of ${path} makes #${anchor}`);
    }
  }
  return problems;
}
