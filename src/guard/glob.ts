/**
 * Target patterns for boundaries and non-network approvals: `*` and `?` stay within one path
 * segment, `**` crosses segments, `**\/` may match no directory at all and a trailing `/**`
 * also matches the directory itself (so `**\/.ssh/**` covers listing `~/.ssh`). A backslash
 * makes the next `*`, `?` or `\` literal, so any target can be approved as itself alone.
 * Literal text ends where it ends: `/x` matches `/x`, never `/xyz` or `/x/y`.
 */
export function globToRegExp(glob: string): RegExp {
  return new RegExp(`^${globSource(glob)}$`, 's');
}

/**
 * One piece of a glob: a character (`c`), `?` (`one`), `*` (`star`), `**` (`any`), `**\/`
 * (`dirs`), a trailing `/**` (`under`); `re` is its expression.
 */
interface Token {
  readonly type: 'c' | 'one' | 'star' | 'any' | 'dirs' | 'under';
  readonly re: string;
  readonly c?: string;
}

const ANY_DIRS = '(?:.*/)?';

function tokens(glob: string): Token[] {
  const out: Token[] = [];
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === '\\' && /[*?\\]/.test(glob[i + 1] ?? '')) {
      const e = glob[++i] as string;
      out.push({ type: 'c', re: `\\${e}`, c: e });
    } else if (c === '/' && glob.slice(i) === '/**') {
      out.push({ type: 'under', re: '(?:/.*)?' });
      break;
    } else if (c === '*' && glob[i + 1] === '*') {
      i++;
      const dirs = glob[i + 1] === '/';
      if (dirs) i++;
      out.push(dirs ? { type: 'dirs', re: ANY_DIRS } : { type: 'any', re: '.*' });
    } else if (c === '*') {
      out.push({ type: 'star', re: '[^/]*' });
    } else if (c === '?') {
      out.push({ type: 'one', re: '[^/]' });
    } else {
      out.push({ type: 'c', re: c.replace(/[\\^$.|+()[\]{}]/g, '\\$&'), c });
    }
  }
  return out;
}

function globSource(glob: string): string {
  return tokens(glob)
    .map((t) => t.re)
    .join('');
}

/**
 * Whether `value`, or some path under it, matches the glob's tokens. Run as a set of positions
 * in the glob (no backtracking: linear in the path whatever the stars), over `value` and then
 * a `/`: any position still alive after it can still reach the end. Position `n + 1` is inside
 * a trailing `/**`, where everything matches.
 */
function reachesTokens(t: readonly Token[], value: string): boolean {
  const n = t.length;
  let live = closure(t, [0]);
  for (let i = 0; i < value.length && live.length > 0; i++)
    live = step(t, live, value[i] as string);
  if (live.includes(n) || live.includes(n + 1)) return true;
  return (value.endsWith('/') ? live : step(t, live, '/')).length > 0;
}

/** The positions reachable from `from` without reading a character. */
function closure(t: readonly Token[], from: readonly number[]): number[] {
  const seen = new Set<number>();
  const stack = [...from];
  while (stack.length > 0) {
    const at = stack.pop() as number;
    if (seen.has(at)) continue;
    seen.add(at);
    const type = t[at]?.type;
    if (type === 'star' || type === 'any' || type === 'dirs' || type === 'under')
      stack.push(at + 1);
  }
  return [...seen];
}

function step(t: readonly Token[], live: readonly number[], c: string): number[] {
  const next: number[] = [];
  for (const at of live) {
    if (at === t.length + 1) next.push(at);
    const tok = t[at];
    if (tok === undefined) continue;
    const slash = c === '/';
    if (tok.type === 'c' ? tok.c === c : tok.type === 'one' && !slash) next.push(at + 1);
    else if ((tok.type === 'star' && !slash) || tok.type === 'any') next.push(at);
    else if (tok.type === 'dirs') next.push(...(slash ? [at, at + 1] : [at]));
    else if (tok.type === 'under' && slash) next.push(t.length + 1);
  }
  return closure(t, next);
}

export interface TargetMatcher {
  readonly source: string;
  test(value: string): boolean;
  /**
   * Whether `value` or some path under it could match: a read that can return anything under
   * `value` (a tree read) is judged by every path it may reach, so `~` reaches `~/.ssh/**`.
   */
  reaches(value: string): boolean;
}

/**
 * One expression for all of them, with a leading `**\/` they all share taken out of the
 * alternatives: each one would otherwise backtrack over every `/` of the target again.
 */
export function globMatcher(globs: readonly string[]): TargetMatcher {
  const sources = globs.map(globSource);
  const lead = sources.every((s) => s.startsWith(ANY_DIRS)) ? ANY_DIRS : '';
  const body = sources.map((s) => s.slice(lead.length)).join('|');
  const re = new RegExp(`^${lead}(?:${body})$`, 's');
  const each = globs.map(tokens);
  return {
    source: globs.join(', '),
    test: (value) => re.test(value),
    reaches: (value) => each.some((t) => reachesTokens(t, value)),
  };
}

/**
 * Whether `glob` matches `value` and everything under it: it ends in `/**` (or is `**`) and
 * the rest matches `value` or a folder above it. A tree read is approved only so: an approval
 * of the folder alone (`/x`) must not let every file under it be read in one call.
 */
export function treeCoverer(glob: string): (value: string) => boolean {
  if (glob === '**') return () => true;
  // A `/` is never escaped, so the `**` after one is a wildcard.
  if (!glob.endsWith('/**')) return () => false;
  const base = globToRegExp(glob.slice(0, -3));
  return (path) => {
    if (base.test(path)) return true;
    for (let i = path.lastIndexOf('/'); i >= 0; i = path.lastIndexOf('/', i - 1)) {
      if (base.test(path.slice(0, i))) return true;
      if (i === 0) break;
    }
    return false;
  };
}
