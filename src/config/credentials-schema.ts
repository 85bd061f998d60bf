import { z } from 'zod';
import { HOP_BY_HOP } from '../http/hop-by-hop.js';
import { MIN_SECRET } from './problems.js';
import { SENTINEL } from '../event/sentinels.js';

export { SENTINEL };
import { PLACES, sentinelKeyIdClash, sigv4Schema } from './sigv4-schema.js';

/**
 * The `credentials` key: secrets the agent never holds. It is given a sentinel (`tgs_…`) that
 * trajgate swaps for the value only on the way to `hosts`. Validated here; the
 * value itself is never quoted back in any message (it is a secret).
 */

/** Shorter is not a secret worth injecting, and could not be told apart in messages. */
export const MIN_VALUE = MIN_SECRET;

/** POSIX shell variable names (XCU § 2.5.3 via § 3.235): what `trajgate env` exports. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The variable an agent holds a credential's sentinel in when `env` names none: `GITHUB_TOKEN`. */
export const defaultEnv = (name: string): string =>
  `${name.toUpperCase().replaceAll('-', '_')}_TOKEN`;

/** RFC 9110 § 5.1: a field name is a token. */
const FIELD_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Fields a proxy sets itself or never forwards (RFC 9110 § 7.2, § 7.6.1, § 8.6). */
const NOT_A_PLACE = new Set([...HOP_BY_HOP, 'host', 'content-length']);

/** A `value` that is a string of MIN_VALUE characters or more; its text is never described. */
const secret = z.unknown().transform((v, ctx): string => {
  if (typeof v !== 'string')
    ctx.addIssue({ code: 'custom', message: 'expected a string (quote it in YAML)' });
  else if (v.length < MIN_VALUE)
    ctx.addIssue({ code: 'custom', message: `must be at least ${MIN_VALUE} characters` });
  return typeof v === 'string' ? v : '';
});

const credential = (networkPattern: z.ZodType<string>) =>
  z
    .strictObject({
      name: z
        .string()
        .regex(/^[a-z0-9_-]{1,64}$/, 'expected 1 to 64 lower-case letters, digits, _ or -'),
      value: secret.optional(),
      // Read at load, relative to the config file's folder; one trailing newline is dropped.
      valueFile: z.string().min(1).optional(),
      hosts: z.array(networkPattern).min(1, 'list at least one network pattern it may go to'),
      header: z
        .string()
        .regex(FIELD_NAME, 'expected a header name (an HTTP token, RFC 9110 § 5.1)')
        .refine((h) => !NOT_A_PLACE.has(h.toLowerCase()), {
          message: 'is a header trajgate sets or never forwards',
        })
        .optional(),
      // The header's value is `SCHEME VALUE` (RFC 9110 § 11.4: auth-scheme is a token).
      scheme: z
        .string()
        .regex(FIELD_NAME, 'expected an auth scheme like Bearer (an HTTP token)')
        .optional(),
      // RFC 3986 § 2.3: unreserved characters, so the name needs no encoding.
      query: z
        .string()
        .regex(/^[A-Za-z0-9._~-]+$/, 'expected a query parameter name (letters, digits, . _ ~ -)')
        .optional(),
      sentinel: z
        .string()
        .regex(SENTINEL, 'expected tgs_ and 16 or more letters, digits or _')
        .optional(),
      // The value is an AWS secret key: requests signed with the sentinel are signed again.
      sigv4: sigv4Schema.optional(),
      env: z
        .string()
        .regex(
          ENV_NAME,
          'expected a shell variable name (letters, digits and _, not first a digit)',
        )
        .optional(),
      allowPlaintext: z.boolean().default(false),
      agents: z.array(z.string()).min(1).optional(),
      roles: z.array(z.string()).min(1).optional(),
    })
    .superRefine((c, ctx) => {
      const at = (path: string, message: string) =>
        ctx.addIssue({ code: 'custom', path: [path], message });
      if ((c.value === undefined) === (c.valueFile === undefined))
        at(
          c.value === undefined ? 'value' : 'valueFile',
          'give exactly one of value and valueFile',
        );
      if (c.sigv4 !== undefined)
        for (const key of PLACES)
          if (c[key] !== undefined)
            at(key, 'is not used with sigv4 (the value signs requests, it goes into none)');
      if (c.header !== undefined && c.query !== undefined)
        at('query', 'give header or query, not both (where the value goes)');
      if (c.scheme !== undefined && c.query !== undefined)
        at('scheme', 'is for a header; a query parameter has no scheme');
      const overlap = c.value === undefined ? null : sentinelOverlap(c.sentinel, c.value);
      if (overlap !== null) at('sentinel', overlap);
      if (c.env === undefined && c.sigv4 === undefined && !ENV_NAME.test(defaultEnv(c.name)))
        at('env', `give one: ${defaultEnv(c.name)} (from the name) is no shell variable name`);
    })
    .transform(({ header, query, env, ...c }) => {
      // A signing credential's sentinel goes in SIGV4_ENV unless `env` names another.
      if (c.sigv4 !== undefined) return { ...c, env: env as string | undefined };
      const named = { ...c, env: env ?? defaultEnv(c.name) };
      return query === undefined
        ? { ...named, header: header ?? 'Authorization' }
        : { ...named, query };
    });

/** Why a fixed sentinel cannot stand for `value` (a swap would never end), or null. */
export function sentinelOverlap(sentinel: string | undefined, value: string): string | null {
  if (sentinel === undefined || value === '') return null;
  return sentinel.includes(value) || value.includes(sentinel)
    ? 'must not contain the value, nor be part of it'
    : null;
}

/** Where the AWS SDKs and CLI read the secret key: a signing credential's default `env`. */
export const SIGV4_ENV = 'AWS_SECRET_ACCESS_KEY';

export type RawCredential = z.output<ReturnType<typeof credential>>;

/**
 * Names and variables unique (an agent given both would hold one), sentinels unique and none
 * inside another (a scan would find both), sentinel key ids unique.
 */
export const credentialsSchema = (networkPattern: z.ZodType<string>) =>
  z
    .array(credential(networkPattern))
    .default([])
    .superRefine((list, ctx) => {
      const seen = { name: new Map<string, number>(), env: new Map<string, number>() };
      list.forEach((c, i) => {
        for (const key of ['name', 'env'] as const) {
          const value = c[key];
          if (value === undefined) continue;
          const first = seen[key].get(value);
          if (first !== undefined)
            ctx.addIssue({
              code: 'custom',
              path: [i, key],
              message: `duplicates credentials[${first}].${key}`,
            });
          else seen[key].set(value, i);
        }
        const clash = sentinelKeyIdClash(list, i);
        if (clash !== null)
          ctx.addIssue({
            code: 'custom',
            path: [i, 'sigv4', 'sentinelKeyId'],
            message: `duplicates credentials[${clash}].sigv4.sentinelKeyId`,
          });
        list.forEach((d, j) => {
          if (j >= i || c.sentinel === undefined || d.sentinel === undefined) return;
          if (c.sentinel.includes(d.sentinel) || d.sentinel.includes(c.sentinel))
            ctx.addIssue({
              code: 'custom',
              path: [i, 'sentinel'],
              message: `overlaps credentials[${j}].sentinel (one must not contain the other)`,
            });
        });
      });
    });

/** A credential's `agents` and `roles` must exist: a typo would hand it to nobody. */
export function checkScopes(
  raw: {
    readonly credentials: readonly RawCredential[];
    readonly agents?: readonly { readonly id: string }[];
    readonly roles: Record<string, unknown>;
  },
  ctx: z.RefinementCtx,
): void {
  const ids = raw.agents?.map((a) => a.id);
  const known = (what: string, names: readonly string[] | undefined) =>
    names === undefined ? `no ${what} are defined` : `${what}: ${names.join(', ')}`;
  raw.credentials.forEach((c, i) => {
    const check = (key: 'agents' | 'roles', names: readonly string[] | undefined) =>
      c[key]?.forEach((n, j) => {
        if (names?.includes(n)) return;
        ctx.addIssue({
          code: 'custom',
          path: ['credentials', i, key, j],
          message: `no ${key === 'agents' ? 'agent' : 'role'} ${JSON.stringify(n)} (${known(key, names)})`,
        });
      });
    check('agents', ids);
    const roles = Object.keys(raw.roles);
    check('roles', roles.length > 0 ? roles : undefined);
  });
}
