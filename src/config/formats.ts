import { isIP } from 'node:net';

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `100ms`, `55s`, `2m`, `1h`, `7d` → milliseconds; undefined when not of that form. */
export function parseDuration(text: string): number | undefined {
  const m = DURATION.exec(text.trim());
  if (!m) return undefined;
  return Math.round(Number(m[1]) * (UNIT_MS[m[2] as string] as number));
}

const BYTES = /^(\d+(?:\.\d+)?) ?(B|KB|MB|GB|KiB|MiB|GiB)?$/i;
const UNIT_BYTES: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
};

/**
 * `256MB`, `512KiB`, `10 MB` → bytes (B, KB, MB, GB 1000-based; KiB, MiB, GiB 1024-based);
 * a number without its unit only when `bare`; undefined when not of that form.
 */
export function parseBytes(text: string, bare = false): number | undefined {
  const m = BYTES.exec(text.trim());
  if (!m || (m[2] === undefined && !bare)) return undefined;
  return Math.round(Number(m[1]) * (UNIT_BYTES[(m[2] ?? 'b').toLowerCase()] as number));
}

/**
 * Where the listeners are when the config does not say (the defaults the example config
 * documents). Here, with the host:port format, so that `trajgate check` knows the bridge's
 * address without loading the config's YAML and schema.
 */
export const DEFAULT_LISTEN = {
  proxy: '127.0.0.1:8080',
  bridge: '127.0.0.1:8081',
  admin: '127.0.0.1:8082',
} as const;

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** `127.0.0.1:8080`, `[::1]:8080`, `localhost:0` (port 0: any free port). */
export function parseHostPort(text: string): HostPort | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+)):(\d{1,5})$/.exec(text);
  if (!m) return undefined;
  const host = m[1] ?? (m[2] as string);
  const port = Number(m[3]);
  if (port > 65535 || (m[1] !== undefined && isIP(host) !== 6)) return undefined;
  return { host, port };
}

export function formatHostPort({ host, port }: HostPort): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** `10.0.0.0/8`, `fd00::/8`, or a bare address (a /32 or /128). */
export function parseCidr(
  text: string,
): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | undefined {
  const [address = '', prefixText, extra] = text.split('/');
  const version = isIP(address);
  if (version === 0 || extra !== undefined) return undefined;
  const max = version === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (!/^\d{1,3}$/.test(prefixText ?? '0') || prefix > max) return undefined;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}
