import { PassThrough } from 'node:stream';
import { text } from 'node:stream/consumers';
import { describe, expect, it } from 'vitest';
import type { Refusal } from '../../src/action/refusal.js';
import {
  plainRefusal,
  refusalLine,
  refusalText,
  verdictRefusal,
} from '../../src/action/refusal.js';
import { httpRefusal, writeRawRefusal } from '../../src/action/respond.js';
import { judged } from '../../src/cli/check-answer.js';
import { TrajgateError } from '../../src/errors.js';
import type { Decision } from '../../src/guard/guard.js';
import { ingestAnswer } from '../../src/ingress/ingest-answer.js';
import { REFUSED } from '../../src/ingress/mcp.js';
import { mcpRefusal } from '../../src/ingress/mcp-refusal.js';

/**
 * One refusal as the decider returns it, rendered by each transport: the proxy and the bridge's
 * HTTP path (a response, or raw bytes on a CONNECT's socket), the bridge's MCP path (a JSON-RPC
 * error), ingest (its JSON answer) and the hook (what `trajgate check` writes to stderr). Each
 * carries the same verdict, boundary and reason, and the same text for the model.
 */

const WHY = 'unapproved network access to example.test:443: network crossing 1 (pause at 3)';

const review = verdictRefusal('REVIEW', 'network', 'CONNECT example.test:443', WHY);
const paused = verdictRefusal(
  'PAUSE',
  'workspace',
  'write /etc/passwd',
  'write outside',
  'timeout',
);
const held = verdictRefusal('PAUSE', null, 'GET http://example.test/', 'session paused', 'denied');
const invalid = plainRefusal(400, 'the target is not a URL');

function decisionOf(r: Refusal): Decision {
  return {
    verdict: r.verdict ?? 'REVIEW',
    boundary: r.boundary,
    count: 2,
    reason: r.reason.why,
    approved: false,
    approvedBy: null,
    counted: null,
  };
}

/** What a transport's rendering says of a refusal, read back from its bytes. */
interface Said {
  readonly verdict: string | null;
  readonly boundary: string | null;
  readonly reason: string;
  readonly text: string;
}

/** The verdict header and body of an HTTP refusal; the reason as its body states it. */
function fromHttp(headers: Readonly<Record<string, string>>, body: string): Said {
  const header = /^(REVIEW|PAUSE); boundary=(.+)$/.exec(headers['x-trajgate-verdict'] ?? '');
  const reason = /^Reason: (.*)\.$/m.exec(body)?.[1] ?? /^trajgate: (.*)$/.exec(body.trim())?.[1];
  return {
    verdict: header?.[1] ?? null,
    boundary: header === null ? null : header[2] === 'none' ? null : header[2]!,
    reason: reason ?? '',
    text: body,
  };
}

async function rawBytes(refusal: Refusal): Promise<{ head: string; body: string }> {
  const socket = new PassThrough();
  writeRawRefusal(socket, refusal);
  const [head, body] = (await text(socket)).split('\r\n\r\n') as [string, string];
  return { head, body };
}

/** Each transport's rendering read back; the hook's stderr is the text alone. */
function rendered(refusal: Refusal): Record<string, Partial<Said>> {
  const http = httpRefusal(refusal);
  const mcp = JSON.parse(mcpRefusal(7, true, refusal).text) as {
    error: { code: number; message: string; data: Said };
  };
  const answer = ingestAnswer({
    kind: 'refuse',
    rids: [42],
    refusal,
    ...(refusal.verdict === null ? {} : { decision: decisionOf(refusal) }),
  });
  if (answer instanceof TrajgateError) throw answer;
  const hook = judged(200, JSON.stringify(answer));
  return {
    http: fromHttp(http.headers, http.body),
    mcp: { ...mcp.error.data, text: `${mcp.error.message}\n` },
    ingest: {
      verdict: answer.verdict,
      boundary: answer.boundary,
      reason: answer.reason,
      text: answer.message ?? '',
    },
    hook: { reason: fromHttp({}, `${hook}\n`).reason, text: `${hook}\n` },
  };
}

describe('one refusal, every transport', () => {
  it.each([
    ['a REVIEW', review],
    ['a PAUSE that timed out', paused],
    ['a held request denied (no boundary)', held],
    ['bad input (no verdict)', invalid],
  ])('%s says the same verdict, boundary, reason and text everywhere', (_, refusal) => {
    const expected: Said = {
      verdict: refusal.verdict,
      boundary: refusal.boundary,
      reason: refusal.reason.why,
      text: refusalText(refusal),
    };
    const each = rendered(refusal);
    expect(each.http).toEqual(expected);
    expect(each.mcp).toEqual(expected);
    // Ingest's answer always names a verdict (what check reads): a refusal that is none, REVIEW.
    expect(each.ingest).toEqual({ ...expected, verdict: refusal.verdict ?? 'REVIEW' });
    expect(each.hook).toEqual({ reason: expected.reason, text: expected.text });
  });

  it('the text for the model is the same bytes as the proxy has always sent', () => {
    expect(refusalText(review)).toBe(
      [
        'trajgate refused this request: CONNECT example.test:443',
        `Reason: ${WHY}.`,
        'It was not sent, and it has been flagged for a person to review.',
        'Do not retry it or look for another way to reach it: crossing the network boundary again pauses this session until an operator decides.',
        'If you need this access for your task, say so in your output and continue with other work.',
        '',
      ].join('\n'),
    );
    expect(refusalText(paused)).toBe(
      [
        'trajgate paused this session: write /etc/passwd was not sent.',
        'Reason: write outside.',
        'No operator decided within the hold time. Every request of this session stays held until an operator reviews the recent events and resumes it.',
        'Wait for an operator; do not try other routes, they are held as well.',
        '',
      ].join('\n'),
    );
    expect(refusalText(invalid)).toBe('trajgate: the target is not a URL\n');
    expect(refusalLine(review)).toBe(`REVIEW: ${WHY}`);
    expect(refusalLine(invalid)).toBe('the target is not a URL');
  });

  it('HTTP: 403 with X-Trajgate-Verdict, raw on a socket as on a response', async () => {
    expect(httpRefusal(held).headers).toEqual({ 'x-trajgate-verdict': 'PAUSE; boundary=none' });
    expect(httpRefusal(invalid, { 'retry-after': '1' })).toEqual({
      status: 400,
      headers: { 'retry-after': '1' },
      body: 'trajgate: the target is not a URL\n',
    });
    const { head, body } = await rawBytes(review);
    expect(head.split('\r\n')).toEqual([
      'HTTP/1.1 403 Forbidden',
      'x-trajgate-verdict: REVIEW; boundary=network',
      'content-type: text/plain; charset=utf-8',
      `content-length: ${Buffer.byteLength(body)}`,
      'connection: close',
    ]);
    expect(body).toBe(refusalText(review));
  });

  it('MCP: a request gets its error in a 200, a notification the HTTP status and header', () => {
    const request = mcpRefusal('a', true, review);
    expect(request.status).toBe(200);
    expect(request.headers).toEqual({});
    expect(JSON.parse(request.text)).toMatchObject({ id: 'a', error: { code: REFUSED } });
    const notification = mcpRefusal(null, false, review);
    expect(notification.status).toBe(403);
    expect(notification.headers).toEqual({
      'x-trajgate-verdict': 'REVIEW; boundary=network',
    });
    expect(notification.text).toBe(request.text.replace('"id":"a"', '"id":null'));
  });

  it('ingest: an outage is no verdict but E_JOURNAL_WRITE; a forward is allowed', () => {
    const why = 'trajgate cannot write its journal, so it refuses every request (fail closed)';
    const outage = ingestAnswer({ kind: 'refuse', rids: [], refusal: plainRefusal(503, why) });
    expect(outage).toBeInstanceOf(TrajgateError);
    expect(outage).toMatchObject({ code: 'E_JOURNAL_WRITE', message: why });
    const allowed = { ...decisionOf(review), verdict: 'ALLOW' as const, boundary: null };
    expect(ingestAnswer({ kind: 'forward', rids: [3], decision: allowed })).toEqual({
      verdict: 'ALLOW',
      boundary: null,
      count: 2,
      reason: WHY,
      allowed: true,
    });
    expect(
      judged(200, JSON.stringify(ingestAnswer({ kind: 'forward', rids: [3], decision: allowed }))),
    ).toBeNull();
  });
});
