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
    return value.replace(REF, (_, name: string, fallback: string | undefined) => {
      const found = env[name];
      if (fallback !== undefined) return found === undefined || found === '' ? fallback : found;
      if (found === undefined) return onMissing(path, name) ?? '';
      return found;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => expandEnv(v, env, onMissing, [...path, i]));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, expandEnv(v, env, onMissing, [...path, k])]),
    );
  }
  return value;
}
