import type { Part } from '../config/env.js';
import type { HostPort } from '../config/formats.js';
import { formatHostPort } from '../config/formats.js';

/** A variable's value: literal text and `${VAR}` references left to the shell or compose. */
export type Value = readonly Part[];

/** What a client of the gateway needs to know, as the agent sees it. */
export interface ClientView {
  readonly proxy: HostPort;
  readonly bridge: HostPort;
  /** With `agents` configured: the agent and its token (a reference when unset here). */
  readonly agent: { readonly id: string; readonly token: Value } | null;
  /** With `tls.intercept`: the CA certificate and the bundle (system roots + CA), as paths. */
  readonly ca: { readonly cert: string; readonly bundle: string } | null;
  /** With `credentials`: the sentinels of those given to the agent, by variable name. */
  readonly sentinels: readonly { readonly name: string; readonly sentinel: string }[];
}

export type EnvFormat = 'shell' | 'compose' | 'json';

const text = (t: string): Part => ({ text: t });

/** git over SSH through the proxy: `trajgate connect` reads the credentials from https_proxy. */
export const GIT_SSH_COMMAND = 'ssh -o ProxyCommand="trajgate connect %h %p"';

/**
 * Every variable, in print order. Proxies in both cases (curl and git read only the lower-case
 * names, many tools only the upper). The bridge is reached directly: NO_PROXY names its host
 * and nothing else. CA files: NODE_EXTRA_CA_CERTS adds to Node's roots; the others replace
 * their client's roots, so they name the bundle (tls/ca-bundle.ts). Credentials' sentinels
 * last: what the agent holds in place of each value.
 */
export function clientVars(view: ClientView): [string, Value][] {
  const { proxy, bridge, agent, ca } = view;
  const user = agent
    ? [
        text(`${encodeURIComponent(agent.id)}:`),
        // Literal text is percent-encoded (RFC 3986 § 3.2.1); a reference goes in as its value.
        ...agent.token.map((p) => ('text' in p ? text(encodeURIComponent(p.text)) : p)),
        text('@'),
      ]
    : [];
  const url = joined([text('http://'), ...user, text(formatHostPort(proxy))]);
  const none: Value = [text(bridge.host)];
  const vars: [string, Value][] = [
    ['HTTP_PROXY', url],
    ['HTTPS_PROXY', url],
    ['NO_PROXY', none],
    ['http_proxy', url],
    ['https_proxy', url],
    ['no_proxy', none],
  ];
  if (ca) {
    vars.push(['NODE_EXTRA_CA_CERTS', [text(ca.cert)]]);
    for (const name of [
      'SSL_CERT_FILE',
      'REQUESTS_CA_BUNDLE',
      'CURL_CA_BUNDLE',
      'GIT_SSL_CAINFO',
      'PIP_CERT',
      'npm_config_cafile',
      // gRPC's C core and grpc-js: their default roots, in place of Node's and the system's.
      'GRPC_DEFAULT_SSL_ROOTS_FILE_PATH',
    ])
      vars.push([name, [text(ca.bundle)]]);
  }
  vars.push(['JAVA_TOOL_OPTIONS', [text(javaOptions(proxy, bridge, agent !== null))]]);
  // ssh reaches hosts over the proxy only through a ProxyCommand; git runs this ssh.
  vars.push(['GIT_SSH_COMMAND', [text(GIT_SSH_COMMAND)]]);
  vars.push(['TRAJGATE_BRIDGE', [text(`http://${formatHostPort(bridge)}`)]]);
  if (agent) vars.push(['TRAJGATE_AGENT_TOKEN', agent.token]);
  for (const s of view.sentinels) vars.push([s.name, [text(s.sentinel)]]);
  return vars;
}

/**
 * The JVM's proxy properties. They carry no credentials: a program answers the 407 with an
 * Authenticator, and since 8u111 the JDK refuses Basic for CONNECT unless
 * jdk.http.auth.tunneling.disabledSchemes is cleared.
 */
function javaOptions(proxy: HostPort, bridge: HostPort, credentials: boolean): string {
  const { host, port } = proxy;
  return [
    `-Dhttp.proxyHost=${host}`,
    `-Dhttp.proxyPort=${port}`,
    `-Dhttps.proxyHost=${host}`,
    `-Dhttps.proxyPort=${port}`,
    `-Dhttp.nonProxyHosts=${bridge.host}`,
    ...(credentials ? ['-Djdk.http.auth.tunneling.disabledSchemes='] : []),
  ].join(' ');
}

/** Adjacent literal parts as one. */
function joined(parts: readonly Part[]): Value {
  const out: Part[] = [];
  for (const p of parts) {
    const last = out[out.length - 1];
    if ('text' in p && last !== undefined && 'text' in last)
      out[out.length - 1] = text(last.text + p.text);
    else out.push(p);
  }
  return out;
}

/** `'…'` for sh: nothing inside single quotes is special but the quote itself. */
const sq = (t: string) => `'${t.replaceAll("'", `'\\''`)}'`;

/**
 * The variables for `eval` in sh (each exported, literal text single-quoted, a reference
 * double-quoted so the shell fills it in), for a compose file's `environment:` (YAML
 * double-quoted, `$` doubled where literal: compose would expand it), or as one JSON object
 * (references as `${VAR}` text).
 */
export function formatVars(vars: readonly [string, Value][], format: EnvFormat): string {
  const plain = (v: Value, literal: (t: string) => string) =>
    v.map((p) => ('text' in p ? literal(p.text) : `\${${p.ref}}`)).join('');
  switch (format) {
    case 'shell':
      return vars
        .map(([name, v]) => {
          const quoted = v.map((p) => ('text' in p ? sq(p.text) : `"\${${p.ref}}"`)).join('');
          return `export ${name}=${quoted === '' ? "''" : quoted}`;
        })
        .join('\n');
    case 'compose':
      return [
        'environment:',
        ...vars.map(
          ([name, v]) => `  ${name}: ${JSON.stringify(plain(v, (t) => t.replaceAll('$', '$$$$')))}`,
        ),
      ].join('\n');
    case 'json':
      return JSON.stringify(
        Object.fromEntries(vars.map(([name, v]) => [name, plain(v, (t) => t)])),
        null,
        2,
      );
  }
}
