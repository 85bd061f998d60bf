import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { loadOperatorConfig } from '../../src/config/operator-config.js';
import { TrajgateError } from '../../src/errors.js';
import { tempDir } from '../helpers/tmp.js';

/** The real value: no message may quote it. */
const SECRET = 'ghp_REALSECRETvalue0123456789';
const ENV = { GITHUB_TOKEN: SECRET };

function load(yaml: string, dir = tempDir(), env: NodeJS.ProcessEnv = ENV) {
  return parseConfig(`version: 1\n${yaml}`, join(dir, 'trajgate.yaml'), dir, env);
}

/** Every line of the error load throws, message first. */
function errors(yaml: string, dir?: string, env?: NodeJS.ProcessEnv): string[] {
  try {
    load(yaml, dir, env);
  } catch (err) {
    if (!(err instanceof TrajgateError)) throw err;
    expect(err.code).toMatch(/^E_CONFIG_/);
    return [err.message, ...err.details];
  }
  throw new Error('loaded without error');
}

describe('credentials', () => {
  it('loads with the value from the environment, a header by default', () => {
    const config = load(`credentials:
  - name: github
    value: \${GITHUB_TOKEN}
    hosts: [api.github.com]
    scheme: Bearer
  - name: search-key
    value: literal-value-0123
    hosts: ['https://search.example:443']
    query: api_key
    sentinel: tgs_search_0123456789abcdef
    allowPlaintext: true
`);
    expect(config.credentials).toEqual([
      {
        name: 'github',
        value: SECRET,
        hosts: ['api.github.com'],
        header: 'Authorization',
        scheme: 'Bearer',
        allowPlaintext: false,
        env: 'GITHUB_TOKEN',
      },
      {
        name: 'search-key',
        value: 'literal-value-0123',
        hosts: ['https://search.example:443'],
        query: 'api_key',
        sentinel: 'tgs_search_0123456789abcdef',
        allowPlaintext: true,
        env: 'SEARCH_KEY_TOKEN',
      },
    ]);
    expect(load('').credentials).toEqual([]);
  });

  it('reads valueFile against the config folder, less one trailing newline', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'gh'), `${SECRET}\n`);
    const config = load(
      'credentials:\n  - { name: gh, valueFile: gh, hosts: [api.github.com], header: X-Api-Key }\n',
      dir,
    );
    expect(config.credentials[0]).toMatchObject({
      value: SECRET,
      valueFile: join(dir, 'gh'),
      header: 'X-Api-Key',
    });
  });

  it('names each bad entry by key and line, never quoting the value', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'short'), 'abc\n');
    writeFileSync(join(dir, 'secret'), SECRET);
    const lines = errors(
      `agents:
  - { id: agent-1, token: agent-token-0123456789 }
credentials:
  - name: github
    value: \${GITHUB_TOKEN}
    hosts: [api.github.com]
    sentinel: tgs_${SECRET}
  - { name: github, value: '\${GITHUB_TOKEN}', hosts: ['${SECRET}:443x'] }
  - { name: Bad.Name, value: 12345678901, hosts: [] }
  - { name: both, value: '\${GITHUB_TOKEN}', valueFile: secret, hosts: [a.example], query: k, header: X-K }
  - { name: neither, hosts: [a.example], scheme: Bearer, query: k }
  - { name: short, valueFile: short, hosts: [a.example], header: Proxy-Authorization }
  - { name: fixed, valueFile: secret, hosts: [a.example], sentinel: tgs_short }
  - { name: inside, valueFile: secret, hosts: [a.example], sentinel: tgs_${SECRET} }
  - { name: missing, value: '\${NOT_SET_ANYWHERE}', hosts: [a.example], valu: x }
`,
      dir,
    );
    const text = lines.join('\n');
    const file = join(dir, 'trajgate.yaml');
    for (const expected of [
      `${file}:8:5: credentials[0] (github).sentinel: must not contain the value, nor be part of it`,
      `credentials[1] (github).hosts[0]: `,
      `${file}:10:7: credentials[2] (Bad.Name).name: expected 1 to 64 lower-case letters`,
      `credentials[2] (Bad.Name).value: expected a string (quote it in YAML)`,
      `credentials[2] (Bad.Name).hosts: list at least one network pattern it may go to`,
      `credentials[3] (both).valueFile: give exactly one of value and valueFile`,
      `credentials[3] (both).query: give header or query, not both`,
      `credentials[4] (neither).value: give exactly one of value and valueFile`,
      `credentials[4] (neither).scheme: is for a header; a query parameter has no scheme`,
      `credentials[5] (short).header: is a header trajgate sets or never forwards`,
      `credentials[6] (fixed).sentinel: expected tgs_ and 16 or more letters, digits or _`,
      `credentials[8].value: environment variable NOT_SET_ANYWHERE is not set`,
      `credentials[8] (missing).valu: unknown key`,
    ])
      expect(text).toContain(expected);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(SECRET.slice(4));
    expect(text).not.toContain('12345678901');
    expect(text).toContain('[hidden]');
  });

  it('names a valueFile that cannot be read, or is short, and the sentinel inside its value', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'short'), 'abc\n');
    writeFileSync(join(dir, 'secret'), `${SECRET}\n`);
    const text = errors(
      `credentials:
  - { name: short, valueFile: short, hosts: [a.example] }
  - { name: gone, valueFile: gone, hosts: [a.example] }
  - { name: inside, valueFile: secret, hosts: [a.example], sentinel: tgs_${SECRET} }
`,
      dir,
    ).join('\n');
    expect(text).toContain('credentials[0] (short).valueFile: holds fewer than 8 characters');
    expect(text).toContain(
      `credentials[1] (gone).valueFile: ENOENT: cannot read the credential's value`,
    );
    expect(text).toContain(join(dir, 'gone'));
    expect(text).toContain('credentials[2] (inside).sentinel: must not contain the value');
    expect(text).not.toContain(SECRET.slice(4));
  });

  it('names agents and roles that do not exist, a name twice, a sentinel inside another', () => {
    const text = errors(`agents:
  - { id: agent-1, token: agent-token-0123456789, roles: [dev] }
roles: { dev: {} }
credentials:
  - { name: ok, value: '\${GITHUB_TOKEN}', hosts: [a.example], agents: [agent-1], roles: [dev] }
  - { name: scoped, value: '\${GITHUB_TOKEN}', hosts: [a.example], agents: [agent-2], roles: [ops] }
  - { name: ok, value: '\${GITHUB_TOKEN}', hosts: [b.example], sentinel: tgs_0123456789abcdef_x }
  - { name: other, value: '\${GITHUB_TOKEN}', hosts: [b.example], sentinel: tgs_0123456789abcdef }
`).join('\n');
    expect(text).toContain('credentials[2] (ok).name: duplicates credentials[0].name');
    expect(text).toContain(
      'credentials[3] (other).sentinel: overlaps credentials[2].sentinel (one must not contain the other)',
    );
    expect(text).toContain(
      'credentials[1] (scoped).agents[0]: no agent "agent-2" (agents: agent-1)',
    );
    expect(text).toContain('credentials[1] (scoped).roles[0]: no role "ops" (roles: dev)');
    expect(text).not.toContain(': credentials[0]');
    const none = errors(
      "credentials:\n  - { name: x, value: '\${GITHUB_TOKEN}', hosts: [a.example], agents: [a] }\n",
    ).join('\n');
    expect(none).toContain('credentials[0] (x).agents[0]: no agent "a" (no agents are defined)');
  });

  it('env: a shell variable name, unique; the default from the name must be one', () => {
    const config = load(
      "credentials:\n  - { name: gh, value: '\${GITHUB_TOKEN}', hosts: [a.example], env: GH_PAT }\n",
    );
    expect(config.credentials[0]?.env).toBe('GH_PAT');
    const text = errors(`credentials:
  - { name: a, value: '\${GITHUB_TOKEN}', hosts: [a.example], env: 'GH-TOKEN' }
  - { name: 9lives, value: '\${GITHUB_TOKEN}', hosts: [a.example] }
  - { name: b, value: '\${GITHUB_TOKEN}', hosts: [a.example], env: X }
  - { name: c, value: '\${GITHUB_TOKEN}', hosts: [a.example], env: X }
  - { name: x, value: '\${GITHUB_TOKEN}', hosts: [a.example], env: B_TOKEN }
`).join('\n');
    expect(text).toContain('credentials[0] (a).env: expected a shell variable name');
    expect(text).toContain(
      'credentials[1] (9lives).env: give one: 9LIVES_TOKEN (from the name) is no shell variable name',
    );
    expect(text).toContain('credentials[3] (c).env: duplicates credentials[2].env');
    expect(text).not.toContain('credentials[4]');
  });

  it('lets operator commands run with the value unset', () => {
    const dir = tempDir();
    const file = join(dir, 'trajgate.yaml');
    writeFileSync(
      file,
      'version: 1\ncredentials:\n  - { name: gh, value: "${GITHUB_TOKEN}", hosts: [a.example] }\n',
    );
    const config = loadOperatorConfig(file, {});
    expect(config.unset.get('credentials[0].value')?.written).toBe('${GITHUB_TOKEN}');
  });
});

describe('credentials with sigv4', () => {
  /** The real key id: like the value, no message may quote it. */
  const KEY_ID = 'AKIAREALKEYID0123456';
  const AWS = {
    AWS_SECRET_ACCESS_KEY: 'real/Secret+Key0123456789abcdefghijklmnop',
    AWS_ACCESS_KEY_ID: KEY_ID,
  };

  it('loads the key id, regions and services, with no header', () => {
    const config = load(
      `credentials:
  - name: aws
    value: \${AWS_SECRET_ACCESS_KEY}
    sigv4:
      accessKeyId: \${AWS_ACCESS_KEY_ID}
      sentinelKeyId: TGSAKIA0123456789AB
      regions: [us-east-1]
      services: [s3]
    hosts: ["*.s3.amazonaws.com:443"]
  - { name: minio, value: minio-secret-0123, sigv4: { accessKeyId: minioadmin }, hosts: [127.0.0.1] }
`,
      tempDir(),
      AWS,
    );
    expect(config.credentials).toEqual([
      {
        name: 'aws',
        value: AWS.AWS_SECRET_ACCESS_KEY,
        sigv4: {
          accessKeyId: KEY_ID,
          sentinelKeyId: 'TGSAKIA0123456789AB',
          regions: ['us-east-1'],
          services: ['s3'],
        },
        hosts: ['*.s3.amazonaws.com:443'],
        allowPlaintext: false,
      },
      {
        name: 'minio',
        value: 'minio-secret-0123',
        sigv4: { accessKeyId: 'minioadmin' },
        hosts: ['127.0.0.1'],
        allowPlaintext: false,
      },
    ]);
  });

  it('names each bad key, never quoting the real key id', () => {
    const text = errors(
      `credentials:
  - name: placed
    value: \${AWS_SECRET_ACCESS_KEY}
    sigv4: { accessKeyId: '\${AWS_ACCESS_KEY_ID}' }
    hosts: [a.example]
    header: Authorization
    scheme: AWS4
  - { name: queried, value: '\${AWS_SECRET_ACCESS_KEY}', sigv4: { accessKeyId: '\${AWS_ACCESS_KEY_ID}' }, hosts: [a.example], query: k }
  - name: bad
    value: \${AWS_SECRET_ACCESS_KEY}
    sigv4: { accessKeyId: '${KEY_ID}/x', sentinelKeyId: tgs-lower, regions: [US East], services: [], extra: 1 }
    hosts: [a.example]
  - name: inside
    value: \${AWS_SECRET_ACCESS_KEY}
    sigv4: { accessKeyId: '\${AWS_ACCESS_KEY_ID}', sentinelKeyId: X${KEY_ID} }
    hosts: [a.example]
`,
      tempDir(),
      AWS,
    ).join('\n');
    for (const expected of [
      'credentials[0] (placed).header: is not used with sigv4',
      'credentials[0] (placed).scheme: is not used with sigv4',
      'credentials[1] (queried).query: is not used with sigv4',
      'credentials[2] (bad).sigv4.accessKeyId: expected 8 to 128 printable ASCII characters without /, comma or space',
      'credentials[2] (bad).sigv4.sentinelKeyId: expected 16 to 128 upper-case letters or digits',
      'credentials[2] (bad).sigv4.regions[0]: expected a region name like us-east-1',
      'credentials[2] (bad).sigv4.services: list at least one service, or leave the key out for any',
      'credentials[2] (bad).sigv4.extra: unknown key',
      'credentials[3] (inside).sigv4.sentinelKeyId: must not contain accessKeyId, nor be part of it',
    ])
      expect(text).toContain(expected);
    expect(text).not.toContain(KEY_ID);
    expect(text).not.toContain(AWS.AWS_SECRET_ACCESS_KEY);
    const twice = errors(
      `credentials:
  - { name: first, value: '\${AWS_SECRET_ACCESS_KEY}', sigv4: { accessKeyId: KEYID9876, sentinelKeyId: TGS0123456789ABCDEF }, hosts: [a.example] }
  - { name: again, value: '\${AWS_SECRET_ACCESS_KEY}', sigv4: { accessKeyId: KEYID0123, sentinelKeyId: TGS0123456789ABCDEF }, hosts: [a.example] }
  - { name: number, value: '\${AWS_SECRET_ACCESS_KEY}', sigv4: { accessKeyId: 123456789 }, hosts: [a.example] }
`,
      tempDir(),
      AWS,
    ).join('\n');
    expect(twice).toContain(
      'credentials[1] (again).sigv4.sentinelKeyId: duplicates credentials[0].sigv4.sentinelKeyId',
    );
    expect(twice).toContain(
      'credentials[2] (number).sigv4.accessKeyId: expected a string (quote it in YAML)',
    );
  });

  it('lets operator commands run with the key id unset', () => {
    const dir = tempDir();
    const file = join(dir, 'trajgate.yaml');
    writeFileSync(
      file,
      'version: 1\ncredentials:\n  - { name: aws, value: "${AWS_SECRET_ACCESS_KEY}", sigv4: { accessKeyId: "${AWS_ACCESS_KEY_ID}" }, hosts: [a.example] }\n',
    );
    const config = loadOperatorConfig(file, {});
    expect(config.unset.get('credentials[0].sigv4.accessKeyId')?.written).toBe(
      '${AWS_ACCESS_KEY_ID}',
    );
  });
});
