import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { expandParts } from '../../src/config/env.js';
import type { ClientView, Value } from '../../src/cli/env-vars.js';
import { clientVars, formatVars } from '../../src/cli/env-vars.js';

/** `trajgate env`'s variables and their three formats, quoting read back by a real sh. */

const view = (extra: Partial<ClientView> = {}): ClientView => ({
  proxy: { host: 'trajgate', port: 8080 },
  bridge: { host: 'trajgate', port: 8081 },
  agent: null,
  ca: null,
  sentinels: [],
  ...extra,
});

/** What `sh` has in NAME after `eval` of the shell format, with `env` set. */
function shellValue(vars: [string, Value][], name: string, env: NodeJS.ProcessEnv = {}): string {
  return execFileSync(
    'sh',
    ['-c', `eval "$1"; printf %s "$${name}"`, 'sh', formatVars(vars, 'shell')],
    {
      env: { PATH: process.env.PATH, ...env },
      encoding: 'utf8',
    },
  );
}

const HOSTILE = [
  "it's",
  'a "quoted" \\ back',
  '$HOME and $(id) and `id`',
  'two\nlines',
  '${NOT_A_REF}',
  ' spaced  ',
  'ünïcode ✓',
  '',
];

describe('formats and quoting', () => {
  it.each(HOSTILE)('sh reads %j back exactly, nothing in it runs or expands', (text) => {
    const vars: [string, Value][] = [['V', [{ text }]]];
    expect(shellValue(vars, 'V', { HOME: '/h', NOT_A_REF: 'x' })).toBe(text);
  });

  it.each(HOSTILE)(
    'compose gets %j with every literal $ doubled, as YAML double-quoted',
    (text) => {
      const out = formatVars([['V', [{ text }]]], 'compose');
      const doc = parse(out) as { environment: Record<string, string> };
      expect(doc.environment.V).toBe(text.split('$').join('$$'));
    },
  );

  it('a reference: sh and compose fill it in, json keeps it as ${VAR}', () => {
    const v: Value = [{ text: "it's:" }, { ref: 'TOK' }, { text: '$x' }];
    const vars: [string, Value][] = [['V', v]];
    expect(shellValue(vars, 'V', { TOK: 'sec ret' })).toBe("it's:sec ret$x");
    expect(formatVars(vars, 'compose')).toBe('environment:\n  V: "it\'s:${TOK}$$x"');
    expect(JSON.parse(formatVars(vars, 'json'))).toEqual({ V: "it's:${TOK}$x" });
  });

  it('expandParts: set variables expanded (defaults too), unset ones kept as references', () => {
    expect(expandParts('a-${SET}-${UNSET}-${EMPTY:-dflt}', { SET: 's', EMPTY: '' })).toEqual([
      { text: 'a-s-' },
      { ref: 'UNSET' },
      { text: '-dflt' },
    ]);
    expect(expandParts('${ONLY}', {})).toEqual([{ ref: 'ONLY' }]);
  });
});

describe('the variables', () => {
  it('without agents or interception: proxies in both cases, NO_PROXY the bridge, JVM flags, ssh for git, bridge', () => {
    expect(Object.fromEntries(clientVars(view()).map(([n, v]) => [n, v]))).toEqual({
      HTTP_PROXY: [{ text: 'http://trajgate:8080' }],
      HTTPS_PROXY: [{ text: 'http://trajgate:8080' }],
      NO_PROXY: [{ text: 'trajgate' }],
      http_proxy: [{ text: 'http://trajgate:8080' }],
      https_proxy: [{ text: 'http://trajgate:8080' }],
      no_proxy: [{ text: 'trajgate' }],
      JAVA_TOOL_OPTIONS: [
        {
          text: '-Dhttp.proxyHost=trajgate -Dhttp.proxyPort=8080 -Dhttps.proxyHost=trajgate -Dhttps.proxyPort=8080 -Dhttp.nonProxyHosts=trajgate',
        },
      ],
      GIT_SSH_COMMAND: [{ text: 'ssh -o ProxyCommand="trajgate connect %h %p"' }],
      TRAJGATE_BRIDGE: [{ text: 'http://trajgate:8081' }],
    });
  });

  it('credentials percent-encoded in the URL (RFC 3986 § 3.2.1), the token itself as is', () => {
    const vars = clientVars(view({ agent: { id: 'agent-1', token: [{ text: 'p@ss:w/rd%x?#' }] } }));
    const get = (n: string) => shellValue(vars, n);
    expect(get('HTTP_PROXY')).toBe('http://agent-1:p%40ss%3Aw%2Frd%25x%3F%23@trajgate:8080');
    expect(new URL(get('https_proxy')).password).toBe('p%40ss%3Aw%2Frd%25x%3F%23');
    expect(decodeURIComponent(new URL(get('https_proxy')).password)).toBe('p@ss:w/rd%x?#');
    expect(get('TRAJGATE_AGENT_TOKEN')).toBe('p@ss:w/rd%x?#');
    expect(get('JAVA_TOOL_OPTIONS')).toContain(' -Djdk.http.auth.tunneling.disabledSchemes=');
  });

  it('an IPv6 gateway: brackets in URLs, none in NO_PROXY and the JVM flags', () => {
    const vars = clientVars(
      view({ proxy: { host: '::1', port: 8080 }, bridge: { host: '::1', port: 8081 } }),
    );
    const get = (n: string) => shellValue(vars, n);
    expect(get('http_proxy')).toBe('http://[::1]:8080');
    expect(get('TRAJGATE_BRIDGE')).toBe('http://[::1]:8081');
    expect(get('no_proxy')).toBe('::1');
    expect(get('JAVA_TOOL_OPTIONS')).toContain('-Dhttp.proxyHost=::1 ');
  });

  it('with interception: Node adds the CA, the clients that replace their roots get the bundle', () => {
    const ca = { cert: '/etc/trajgate/ca.pem', bundle: '/etc/trajgate/ca-bundle.pem' };
    const vars = Object.fromEntries(
      clientVars(view({ ca })).map(([n, v]) => [n, shellValue([[n, v]], n)]),
    );
    expect(vars.NODE_EXTRA_CA_CERTS).toBe(ca.cert);
    for (const n of [
      'SSL_CERT_FILE',
      'REQUESTS_CA_BUNDLE',
      'CURL_CA_BUNDLE',
      'GIT_SSL_CAINFO',
      'PIP_CERT',
      'npm_config_cafile',
      'GRPC_DEFAULT_SSL_ROOTS_FILE_PATH',
    ])
      expect(vars[n], n).toBe(ca.bundle);
  });
});
