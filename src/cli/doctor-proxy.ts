import { request } from 'node:http';
import type { Socket } from 'node:net';
import { connect, createServer } from 'node:net';
import type { HostPort } from '../config/formats.js';
import { formatHostPort } from '../config/formats.js';
import { AddressPolicy } from '../action/addresses.js';
import type { Check, DoctorContext } from './doctor-context.js';

/** An answer through the proxy: its status, verdict header and text; null status: none came. */
interface Answer {
  readonly status: number | null;
  readonly verdict: string | undefined;
  readonly text: string;
}

/** Loopback addresses the probe may use, the first one allowPrivate does not cover first. */
const LOOPBACKS = ['127.0.0.1', '127.255.255.254', '::1'];

/** A GET of `url` through the proxy as the doctor's session; held requests are let go by `held`. */
function viaProxy(ctx: DoctorContext, url: string): Promise<Answer> {
  const { proxy, auth, localAddress } = ctx.who;
  return new Promise((resolve) => {
    const req = request({
      host: proxy.host,
      port: proxy.port,
      method: 'GET',
      path: url,
      agent: false,
      ...(localAddress ? { localAddress } : {}),
      headers: { host: new URL(url).host, ...(auth ? { 'proxy-authorization': auth } : {}) },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text = (text + c).slice(0, 4096)));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? null,
          verdict: res.headers['x-trajgate-verdict'] as string | undefined,
          text,
        }),
      );
    });
    req.on('error', (err) => resolve({ status: null, verdict: undefined, text: err.message }));
    req.end();
  });
}

/**
 * Port 80 when nothing listens there (a pattern naming no port covers 80 and 443), else a port
 * nothing listens on now (bound, read, closed): the probe reaches no service if let through.
 */
async function probePort(host: string): Promise<number> {
  const free = await new Promise<boolean>((resolve) =>
    connect(80, host)
      .once('connect', function (this: Socket) {
        this.destroy();
        resolve(false);
      })
      .once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED')),
  );
  if (free) return 80;
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** The answer as a refusal by trajgate (a verdict, or its refusal of the address), or null. */
function refusal(a: Answer): string | null {
  if (a.status === 403 && a.verdict !== undefined) return `403 ${a.verdict}`;
  const why = /^Reason: (.*)$/m.exec(a.text)?.[1];
  if (a.status !== null && a.status >= 400 && /trajgate refused/.test(a.text) && why)
    return `${a.status}: ${why}`;
  return null;
}

function answered(a: Answer): string {
  if (a.status === null) return `no answer (${a.text})`;
  return `${a.status}${a.verdict ? ` (${a.verdict})` : ''}: ${a.text.split('\n')[0]?.slice(0, 160)}`;
}

/** Probes `url` as the doctor's session, then resets that session's counts. */
async function probe(ctx: DoctorContext, url: string): Promise<Answer> {
  const answer = await ctx.session.during(() => viaProxy(ctx, url));
  await ctx.session.reset();
  return answer;
}

/** An unlisted loopback host, outside allowPrivate where one is, must be refused. */
export async function unlistedRefused(ctx: DoctorContext): Promise<Check> {
  const check = 'unlisted-refused';
  const policy = new AddressPolicy(ctx.config.network.allowPrivate);
  const host = LOOPBACKS.find((a) => !policy.check(a).allowed) ?? '127.0.0.1';
  const at: HostPort = { host, port: await probePort(host) };
  const url = `http://${formatHostPort(at)}/trajgate-doctor`;
  return mustRefuse(
    check,
    url,
    await probe(ctx, url),
    (a) =>
      `GET ${url} through the proxy was not refused by trajgate: ${a}; network.allow or network.allowPrivate admits a host no rule should (${ctx.config.source})`,
  );
}

/** A probe's check: ok when trajgate refused it, else `failed` given what answered. */
function mustRefuse(
  check: string,
  url: string,
  a: Answer,
  failed: (answer: string) => string,
): Check {
  const refused = refusal(a);
  if (refused !== null) return { check, ok: true, detail: `GET ${url} refused (${refused})` };
  return { check, ok: false, detail: failed(answered(a)) };
}

/** The admin listener, asked for through the proxy, must not answer. */
export async function adminHidden(ctx: DoctorContext): Promise<Check> {
  const check = 'admin-hidden';
  const { host, port } = ctx.config.listen.admin;
  const at = /^[0:.]+$/.test(host) ? { host: '127.0.0.1', port } : { host, port };
  const url = `http://${formatHostPort(at)}/healthz`;
  if (!isLoopback(at.host))
    return {
      check,
      ok: false,
      detail: `listen.admin ${formatHostPort(at)} is not a loopback address: the doctor only sends to loopback; put the admin listener on loopback (docs/deploy.md)`,
    };
  return mustRefuse(
    check,
    url,
    await probe(ctx, url),
    (a) =>
      `the admin listener answered through the proxy at ${url}: ${a}; an agent can reach the review API: narrow network.allowPrivate and network.allow (${ctx.config.source})`,
  );
}

export function isLoopback(host: string): boolean {
  return /^127\./.test(host) || host === '::1' || host === 'localhost';
}
