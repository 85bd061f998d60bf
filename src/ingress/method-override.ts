/**
 * Method overrides: fields and a query parameter that frameworks read as the request's real
 * method — `X-HTTP-Method-Override` (Rack, Symfony, Express method-override), `X-HTTP-Method`
 * (OData), `X-Method-Override`, and `_method` (Laravel, Symfony, Express). An upstream that
 * honours one runs a `DELETE` that trajgate judged as the `POST` it was sent as. Judging the
 * named method instead would still miss a `_method` in a form body, which trajgate does not
 * read, so a request carrying any of them is refused.
 */
const FIELDS: ReadonlySet<string> = new Set([
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
]);

const PARAM = '_method';

/** How many rounds of percent-decoding a name gets: servers that decode twice exist. */
const DECODE_ROUNDS = 3;

/** Why a request carrying an override is refused, in one line for the model; null if none. */
export function methodOverrideProblem(raw: readonly string[], search: string): string | null {
  const override = methodOverride(raw, search);
  if (override === null) return null;
  return `method overrides are not allowed (${override}): send the request with the method you mean, e.g. DELETE instead of POST`;
}

/** The override a request carries, named as the agent spelled it; null when none. */
export function methodOverride(raw: readonly string[], search: string): string | null {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    // Every override field starts with `x`: the others are not copied to be compared.
    if ((name.charCodeAt(0) | 0x20) !== 0x78) continue;
    // CGI-style servers (Rack, PHP) map `-` and `_` in a field name to the same `_`.
    if (FIELDS.has(name.toLowerCase().replaceAll('_', '-'))) return `the ${name} header`;
  }
  if (search.length <= 1) return null;
  // `;` separates pairs too for some parsers (older Rack, Python's cgi).
  for (const pair of search.slice(1).split(/[&;]/)) {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    if (readsAsMethodParam(name)) return `the query parameter ${JSON.stringify(name)}`;
  }
  return null;
}

/**
 * Whether a query name reads as `_method` to some server: percent-decoded (`%5Fmethod`), `+`
 * as space, any case, PHP's renaming of leading spaces and of `.`/space to `_`, and an array
 * suffix (`_method[]`) dropped.
 */
function readsAsMethodParam(name: string): boolean {
  let text = name.replaceAll('+', ' ');
  for (let round = 0; round < DECODE_ROUNDS && text.includes('%'); round++) {
    const decoded = text.replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) =>
      String.fromCharCode(parseInt(hex, 16)),
    );
    if (decoded === text) break;
    text = decoded;
  }
  const bracket = text.indexOf('[');
  if (bracket >= 0) text = text.slice(0, bracket);
  return text.trimStart().toLowerCase().replace(/[. ]/g, '_') === PARAM;
}
