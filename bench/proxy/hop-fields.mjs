// Fields a proxy does not pass on (RFC 9110 § 7.6.1), and the proxy's own credentials: what the
// bench's two floor forwarders drop both ways.
export const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'upgrade',
]);
