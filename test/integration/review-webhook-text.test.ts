import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { adminClient, agentAuth } from '../helpers/admin.js';
import { curl } from '../helpers/curl.js';
import { postAsAgent } from '../helpers/ingest.js';
import type { TestGateway } from '../helpers/gateway.js';
import { startTestGateway } from '../helpers/gateway.js';
import { startUpstream } from '../helpers/upstream.js';
import { startWebhook } from '../helpers/webhook.js';
import { waitFor } from '../helpers/wait.js';

/**
 * What a chat incoming webhook shows: `text`, one line with Slack-format links (Mattermost
 * turns `<url|label>` into Markdown), and `url`, the review page for the session.
 */
const other = await startUpstream();
const ADMIN = 'operator-admin-token-0123456789';
const AGENT = { id: 'agent-1', token: 'agent-1-token-0123456789abcdef' };
const auth = agentAuth(AGENT.id, AGENT.token);
const host = `127[.]0[.]0[.]1:${other.port}`;

let gateway: TestGateway | undefined;
afterEach(async () => {
  await gateway?.stop();
  gateway = undefined;
});

async function start(notify: Record<string, unknown>, config: Record<string, unknown> = {}) {
  const hook = await startWebhook();
  const g = (gateway = await startTestGateway({
    agents: [AGENT],
    network: { allowPrivate: ['127.0.0.1/32'] },
    admin: { token: ADMIN },
    notify: { webhook: hook.url, ...notify },
    ...config,
  }));
  return { g, hook, api: adminClient(g.gw.admin.port, ADMIN) };
}
type Started = Awaited<ReturnType<typeof start>>;

/** REVIEW on `first`, PAUSE holding `second`; denied once the pause notification arrived. */
async function pauseOn(started: Started, first: string, second: string) {
  const { g, hook, api } = started;
  const get = (url: string) => curl([...auth, '-g', '-x', g.proxyUrl, url]);
  expect((await get(first)).status).toBe(403);
  const held = get(second);
  await waitFor(async () => hook.deliveries.some((d) => d.body.kind === 'pause'));
  await api.post('/api/sessions/agent-1/deny');
  expect((await held).status).toBe(403);
  return hook.deliveries.find((d) => d.body.kind === 'pause')!.body;
}

/** Mattermost's rewrite of Slack links in webhook text (server/channels/app/webhook.go). */
const mattermost = (text: string) => text.replace(/<([^\n<|>]+)\|([^|\n>]+)>/g, '[$2]($1)');

describe('webhook text and url', () => {
  it('a pause: one readable line with the page and the decision links, and the page url', async () => {
    const s = await start({ on: ['pause', 'review'] });
    const body = await pauseOn(s, `${other.url}/v1/first`, `${other.url}/v1/second`);
    const admin = `http://127.0.0.1:${s.g.gw.admin.port}/`;
    expect(body.url).toBe(`${admin}#/session/agent-1`);
    const { text, links } = body;
    expect(text).not.toMatch(/[\n\r]/);
    expect(text).toMatch(
      new RegExp(
        `^trajgate: session "agent-1" paused on network \\(crossing 2\\): GET http\\[:\\]//${escape(host)}/v1/second; 1 request held, links valid until \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC\\. `,
      ),
    );
    expect(text).toContain(`Suggested approval: GET http[:]//${host}/v1/.`);
    expect(links.approveOnce).toMatch(new RegExp(`^${escape(admin)}decide/[\\w-]+\\.[\\w-]{43}$`));
    expect(text).toContain(
      `<${body.url}|Review> · <${links.approveOnce}|Approve once> · ` +
        `<${links.approvePattern}|Approve suggestion> · ` +
        `<${links.approveReset}|Approve and reset counts> · <${links.deny}|Deny>`,
    );
    // Angle brackets appear only around our five links (Slack: everything else is escaped).
    expect(text.match(/[<>]/g)).toHaveLength(10);
    expect(mattermost(text)).toContain(`[Approve once](${links.approveOnce})`);
    expect(mattermost(text)).not.toMatch(/[<>]/);

    const review = s.hook.deliveries.find((d) => d.body.kind === 'review')!.body;
    expect(review.url).toBe(body.url);
    expect(review.text).toBe(
      `trajgate: session "agent-1" flagged for review on network (crossing 1): ` +
        `GET http[:]//${host}/v1/first. <${body.url}|Review>`,
    );
  });

  it('notify.pageUrl is the base of the page url and of the links', async () => {
    const s = await start({ pageUrl: 'https://trajgate.example.internal/review' });
    const body = await pauseOn(s, `${other.url}/a`, `${other.url}/b`);
    expect(body.url).toBe('https://trajgate.example.internal/review/#/session/agent-1');
    for (const link of [body.links.approveOnce, body.links.approvePattern, body.links.deny])
      expect(link).toMatch(/^https:\/\/trajgate\.example\.internal\/review\/decide\//);
    // The trigger's path was /b: the suggestion is the method on the origin.
    expect(body.links.suggestion).toEqual({ pattern: `GET ${other.url}`, kind: 'network' });
  });

  it('a pause by a sequence rule: the rule and both events, linked; the decision page too', async () => {
    const rule = 'secret-then-egress';
    const sequences = [
      { name: rule, after: { kind: 'read', target: ['**/.ssh/**'] }, then: { kind: 'network' } },
    ].map((r) => ({ ...r, within: '1h', verdict: 'PAUSE' }));
    const s = await start({}, { policy: { sequences } });
    const key = '/home/u/.ssh/id_ed25519';
    const bridge = `http://127.0.0.1:${s.g.gw.bridge.port}/events`;
    const read = await postAsAgent(bridge, 'agent-1', { kind: 'read', target: key });
    expect(read.json.verdict).toBe('ALLOW');
    const held = curl([...auth, '-x', s.g.proxyUrl, `${other.url}/up`]);
    await waitFor(async () => s.hook.deliveries.some((d) => d.body.kind === 'pause'));
    const body = s.hook.deliveries.find((d) => d.body.kind === 'pause')!.body;
    const { seq, rule: named } = body.trigger;
    const after = named.after as number;
    expect(named).toEqual({ name: rule, after });
    expect(body.after).toMatchObject({ seq: after, kind: 'read', target: key });
    const page = `http://127.0.0.1:${s.g.gw.admin.port}/#/session/agent-1/event/`;
    expect(body).toMatchObject({ eventUrl: `${page}${seq}`, afterUrl: `${page}${after}` });
    expect(body.text).toMatch(
      new RegExp(
        `^trajgate: session "agent-1" paused by rule ${rule}: <${escape(page)}${seq}\\|#${seq}> ` +
          `network GET http\\[:\\]//${escape(host)}/up after <${escape(page)}${after}\\|#${after}> ` +
          `read ${escape(key)}; 1 request held, `,
      ),
    );

    // The decision page a link opens says the same, each event linked to the review page.
    const confirm = await request(body.links.deny, { headers: { accept: 'text/html' } });
    const html = await confirm.body.text();
    expect(confirm.statusCode).toBe(200);
    const link = (n: number) => `<a href="../#/session/agent-1/event/${n}">#${n}</a>`;
    expect(html).toContain(`<dt>Paused by</dt><dd>${link(seq)} network GET ${other.url}/up</dd>`);
    expect(html).toContain(`<dt>Rule</dt><dd>${rule}</dd>`);
    expect(html).toContain(`<dt>After</dt><dd>${link(after)} read ${key}</dd>`);
    expect(new URL('../#/session/agent-1/event/1', body.links.deny).href).toBe(`${page}1`);
    const json = await request(body.links.deny, { headers: { accept: 'application/json' } });
    expect(await json.body.json()).toMatchObject({
      rule: { name: rule, after },
      after: { seq: after, method: null, target: key },
    });

    await s.api.post('/api/sessions/agent-1/deny');
    expect((await held).status).toBe(403);
  });

  it("an agent's target cannot mention, link, unfurl or run long", async () => {
    const s = await start({});
    const hostile = `/@here/[click](http://evil.example/)/${'x'.repeat(3000)}`;
    const body = await pauseOn(s, `${other.url}/a`, `${other.url}${hostile}`);
    const { text } = body;
    // Past 512 bytes a target is journaled (and announced) as its prefix.
    expect(`${other.url}${hostile}`.startsWith(body.trigger.target)).toBe(true);
    expect(body.trigger.target.length).toBe(512);
    expect(text.length).toBeLessThan(1200);
    expect(text).toContain('…');
    expect(text).not.toMatch(/@here|\]\(|evil\.example|http:\/\/evil/);
    expect(text).toContain('@\u2060here');
    expect(mattermost(text).match(/\]\(/g)).toHaveLength(5); // only our own links
    // Only the links trajgate made are URLs; the agent's target is written defanged.
    expect(text.match(/https?:\/\//g)).toHaveLength(5);
  });
});

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
