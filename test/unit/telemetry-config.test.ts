import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { loadOperatorConfig } from '../../src/config/operator-config.js';
import { TrajgateError } from '../../src/errors.js';
import { tempDir } from '../helpers/tmp.js';

/** telemetry.otlp: off by default, its secrets from the environment and never in a message. */
const load = (yaml: string, env: NodeJS.ProcessEnv = {}) =>
  parseConfig(`version: 1\n${yaml}`, 't.yaml', '/srv/x', env);

function problems(yaml: string, env: NodeJS.ProcessEnv = {}): string {
  try {
    load(yaml, env);
  } catch (err) {
    if (err instanceof TrajgateError) return [err.message, ...err.details].join('\n');
    throw err;
  }
  throw new Error('loaded without error');
}

describe('telemetry.otlp config', () => {
  it('is off unless set', () => {
    expect(load('').telemetry.otlp).toBeUndefined();
  });

  it('takes the headers from the environment; the endpoint loses its trailing slash', () => {
    const otlp = load(
      "telemetry: { otlp: { endpoint: 'https://otel.example:4318/', headers: { x-api-key: '${OTLP_KEY}' } } }",
      { OTLP_KEY: 'key-from-the-environment-0123' },
    ).telemetry.otlp;
    expect(otlp).toEqual({
      endpoint: 'https://otel.example:4318',
      headers: { 'x-api-key': 'key-from-the-environment-0123' },
    });
  });

  it('names the key of an unset variable', () => {
    const text = problems(
      "telemetry: { otlp: { endpoint: 'http://127.0.0.1:4318', headers: { authorization: 'Bearer ${OTLP_UNSET}' } } }",
    );
    expect(text).toContain(
      'telemetry.otlp.headers.authorization: environment variable OTLP_UNSET is not set',
    );
  });

  it('never quotes a header value or the credentials of a refused endpoint', () => {
    const text = problems(
      'telemetry: { otlp: { endpoint: \'https://user:url-secret-0123@otel.example\', headers: { x-key: "value-secret-0123\\r\\n" } } }',
    );
    expect(text).toContain('telemetry.otlp.endpoint: must not carry credentials');
    expect(text).toContain('telemetry.otlp.headers.x-key: has a value with a control character');
    for (const secret of ['url-secret-0123', 'value-secret-0123'])
      expect(text).not.toContain(secret);
  });

  it("lets operator commands run without the collector's secret", () => {
    const file = join(tempDir(), 'trajgate.yaml');
    writeFileSync(
      file,
      "version: 1\ntelemetry: { otlp: { endpoint: 'http://127.0.0.1:4318', headers: { x-api-key: '${OTLP_KEY}' } } }\n",
    );
    const config = loadOperatorConfig(file, {});
    expect(config.unset.get('telemetry.otlp.headers.x-api-key')?.written).toBe('${OTLP_KEY}');
  });
});
