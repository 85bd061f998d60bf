import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { adminClient } from '../helpers/admin.js';
import { spawnGateway } from '../helpers/child-gateway.js';
import { exportHar } from '../helpers/cli.js';
import { curl } from '../helpers/curl.js';
import { readRecords } from '../helpers/gateway.js';
import { interceptConfig, makeLocalCa } from '../helpers/tls.js';
import { textUnder } from '../helpers/tmp.js';
import { startUpstream } from '../helpers/upstream.js';
import { waitFor } from '../helpers/wait.js';
import { startWebhook } from '../helpers/webhook.js';

/**
 * The real value of a credential is written nowhere: `trajgate start` as users run it (debug
 * logs on), a request that carries it, an upstream that echoes it back, a sentinel sent to
 * another host; then every output is searched for it: the journal and everything beside it
 * (captures, the credential key), the process's stdout and stderr, the webhook's deliveries,
 * the metrics, the review API and a HAR export. Each must hold the sentinel instead where it
 * shows the request at all (so the search is not vacuous).
 */
const ca = makeLocalCa();
const api = await startUpstream({ tls: true });
const other = await startUpstream({ tls: true });
const REAL = 'ghp_real-value-written-nowhere-42';
const SENTINEL = 'tgs_github_fedcba9876543210';
const ADMIN = 'admin-token-for-outputs-01234567';

describe('the real value in every output', () => {
  it('is never there; the sentinel is', async () => {
    const hook = await startWebhook();
    const g = await spawnGateway(
      {
        ...interceptConfig({
          ca,
          intercept: [`127.0.0.1:${api.port}`, `localhost:${other.port}`],
          allow: [`127.0.0.1:${api.port}`, `localhost:${other.port}`],
          ports: [api.port, other.port],
          capture: { bodies: true },
        }),
        admin: { token: ADMIN },
        notify: { webhook: hook.url },
        credentials: [
          {
            name: 'github',
            value: '${GH_VALUE}',
            sentinel: SENTINEL,
            hosts: [`127.0.0.1:${api.port}`],
          },
        ],
      },
      { GH_VALUE: REAL, TRAJGATE_LOG_LEVEL: 'debug' },
    );
    const proxy = ['--cacert', ca.certPath, '-x', `http://127.0.0.1:${g.proxy}`, '--http1.1'];
    const used = await curl([
      ...proxy,
      '-H',
      `Authorization: Bearer ${SENTINEL}`,
      '--data',
      `{"t":"${SENTINEL}"}`,
      `https://127.0.0.1:${api.port}/echo`,
    ]);
    expect(used.status).toBe(200);
    expect(api.seen.at(-1)?.headers.authorization).toBe(`Bearer ${REAL}`);
    expect(used.body).toContain(SENTINEL);
    const leak = await curl([
      ...proxy,
      '-H',
      `X-Copy: ${SENTINEL}`,
      `https://localhost:${other.port}/x`,
    ]);
    expect(leak.status).toBe(403);
    await waitFor(() => hook.deliveries.length === 1);
    await waitFor(() => readRecords(g.journal).filter((r) => r.type === 'outcome').length === 2);
    const admin = adminClient(g.admin, ADMIN);
    const metrics = (await admin.get('/metrics')).text;
    const sessions = (await admin.get('/api/sessions/127.0.0.1')).text;
    const events = (await admin.get('/api/sessions/127.0.0.1/events')).text;
    const har = await exportHar(g.journal, '127.0.0.1');
    const outputs = {
      'the data folder': textUnder(dirname(g.journal)),
      'stdout and stderr': g.cli.output().stdout + g.cli.output().stderr,
      'the webhook': JSON.stringify(hook.deliveries.map((d) => d.body)),
      'the metrics': metrics,
      'the review API': sessions + events,
      'the HAR export': readFileSync(har.out, 'utf8'),
    };
    for (const [where, text] of Object.entries(outputs))
      expect({ where, has: text.includes(REAL) }).toEqual({ where, has: false });
    // The notification names the credential and where its sentinel was, never a value.
    expect(outputs['the webhook']).toContain(
      '"exfiltration":{"credential":"github","where":"header X-Copy"}',
    );
    for (const where of ['the data folder', 'the HAR export'] as const)
      expect({ where, has: outputs[where].includes(SENTINEL) }).toEqual({ where, has: true });
    expect(sessions).toContain('"name":"github"');
  });
});
