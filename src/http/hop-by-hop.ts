/**
 * Hop-by-hop fields (RFC 9110 § 7.6.1) are meant for one connection only and are never
 * forwarded, nor is any field the Connection header names; Proxy-Authorization carries the
 * agent's credentials for trajgate and must never reach an upstream (RFC 9110 § 11.7.2).
 * Proxy-Connection and Keep-Alive are the pre-standard forms (RFC 9112 § 9.6, Appendix C.2.2).
 * HTTP2-Settings is connection-specific, for an h2c upgrade (RFC 7540 § 3.2.1), and h2c is
 * deprecated (RFC 9113 § 3.1): it is never forwarded, named in Connection or not.
 */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'proxy-connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-authorization',
  'proxy-authenticate',
  'http2-settings',
]);
