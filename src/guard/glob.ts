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

function globSource(glob: string): string {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === '\\' && /[*?\\]/.test(glob[i + 1] ?? '')) {
      re += `\\${glob[++i]}`;
      continue;
    }
    if (c === '/' && glob.slice(i) === '/**') {
      re += '(?:/.*)?';
      break;
    }
    if (c === '*' && glob[i + 1] === '*') {
      i++;
      if (glob[i + 1] === '/') {
        i++;
        re += '(?:.*/)?';
      } else {
        re += '.*';
      }
    } else if (c === '*') {
      re += '[^/]*';
    } else if (c === '?') {
      re += '[^/]';
    } else {
      re += c.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
    }
  }
  return re;
}

export interface TargetMatcher {
  readonly source: string;
  test(value: string): boolean;
}

const ANY_DIRS = '(?:.*/)?';

/**
 * One expression for all of them, with a leading `**\/` they all share taken out of the
 * alternatives: each one would otherwise backtrack over every `/` of the target again.
 */
export function globMatcher(globs: readonly string[]): TargetMatcher {
  const sources = globs.map(globSource);
  const lead = sources.every((s) => s.startsWith(ANY_DIRS)) ? ANY_DIRS : '';
  const body = sources.map((s) => s.slice(lead.length)).join('|');
  const re = new RegExp(`^${lead}(?:${body})$`, 's');
  return { source: globs.join(', '), test: (value) => re.test(value) };
}
