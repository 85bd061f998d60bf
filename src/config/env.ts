/** `${VAR}` or `${VAR:-default}` (the default used when VAR is unset or empty, as in sh). */
const REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/**
 * Replaces `${VAR}` and `${VAR:-default}` in every string of a parsed YAML value. Expansion
 * happens after parsing, so a secret full of YAML metacharacters cannot change the document's
 * structure. A `${VAR}` without a default whose variable is unset is reported to `onMissing`,
 * which may give the text that stands in for it (else it is emptied).
 */
export function expandEnv(
  value: unknown,
  env: NodeJS.ProcessEnv,
  onMissing: (path: readonly PropertyKey[], name: string) => string | void,
  path: readonly PropertyKey[] = [],
): unknown {
  if (typeof value === 'string') {
    return value.replace(
      REF,
      (_, name: string, fallback: string | undefined) =>
        lookup(env, name, fallback) ?? onMissing(path, name) ?? '',
    );
  }
  if (Array.isArray(value)) return value.map((v, i) => expandEnv(v, env, onMissing, [...path, i]));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, expandEnv(v, env, onMissing, [...path, k])]),
    );
  }
  return value;
}

/** A variable's value as `${VAR}` or `${VAR:-fallback}` reads it; undefined: unset, no fallback. */
function lookup(env: NodeJS.ProcessEnv, name: string, fallback: string | undefined) {
  const found = env[name];
  return fallback !== undefined && (found === undefined || found === '') ? fallback : found;
}

/** Literal text, or a `${VAR}` left for a shell or compose to fill in. */
export type Part = { readonly text: string } | { readonly ref: string };

/** One string with its set variables expanded and its unset ones kept as references. */
export function expandParts(value: string, env: NodeJS.ProcessEnv): Part[] {
  const parts: Part[] = [];
  let text = '';
  let at = 0;
  for (const m of value.matchAll(REF)) {
    const found = lookup(env, m[1] as string, m[2]);
    text += value.slice(at, m.index) + (found ?? '');
    if (found === undefined) {
      if (text !== '') parts.push({ text });
      parts.push({ ref: m[1] as string });
      text = '';
    }
    at = m.index + m[0].length;
  }
  text += value.slice(at);
  return text === '' ? parts : [...parts, { text }];
}
