import { canonicalHost } from '../event/network-target.js';

/** One tunnel whose HTTP trajgate reads: who opened it and the authority its CONNECT named. */
export interface Tunnel {
  readonly session: string;
  readonly client: string;
  /** Canonical host (no brackets) and port from the CONNECT line. */
  readonly host: string;
  readonly port: number;
  /** `https` inside intercepted TLS, `http` for plain HTTP read from the tunnel. */
  readonly scheme: 'http' | 'https';
  /** It came by the SOCKS5 listener: its refusal records say so. */
  readonly via?: 'socks';
}

export const DEFAULT_PORT = { http: 80, https: 443 } as const;

/** The tunnel's host as in a URL: IPv6 in brackets. */
export function tunnelHost(tunnel: Tunnel): string {
  return tunnel.host.includes(':') ? `[${tunnel.host}]` : tunnel.host;
}

/** `scheme://host[:port]` of a tunnel, the port omitted when it is the scheme's. */
export function tunnelOrigin(tunnel: Tunnel): string {
  const port = tunnel.port === DEFAULT_PORT[tunnel.scheme] ? '' : `:${tunnel.port}`;
  return `${tunnel.scheme}://${tunnelHost(tunnel)}${port}`;
}

/** One parse: an unparsable target (rare, refused) pays for the throw instead of every request. */
export function safeUrl(text: string): URL | null {
  try {
    return new URL(text);
  } catch {
    return null;
  }
}

/**
 * `host:port` of a Host field or `:authority` in canonical form (the scheme's port when
 * absent), or null: what is compared with the tunnel's CONNECT host and port.
 */
export function hostOf(header: string | undefined, defaultPort: number): string | null {
  if (header === undefined) return null;
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d{1,5}))?$/.exec(header);
  if (!m) return null;
  try {
    return `${canonicalHost(m[1] as string)}:${Number(m[2] ?? defaultPort)}`;
  } catch {
    return null;
  }
}
