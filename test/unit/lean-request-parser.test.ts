import { execFileSync } from 'node:child_process';
import { METHODS as NODE_METHODS } from 'node:http';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TrajgateError } from '../../src/errors.js';
import { METHODS } from '../../src/http/llhttp.js';
import type { RequestSink } from '../../src/ingress/lean/request-parser.js';
import { MAX_FIELDS, RequestParser } from '../../src/ingress/lean/request-parser.js';
import { parseErrorProblem } from '../../src/ingress/request-rules.js';

/**
 * The lean parser's contract with the connection that will drive it: the order of its calls,
 * one instance for every request on a connection, the hand-over at an upgrade, the end of input,
 * and the refusals. What it reads is held equal to `node:http` by the differential test
 * (test/integration/lean-request-parser.test.ts).
 */
const HEADER_BYTES = 16_384;

/** A parser whose sink writes every call, in order, to `calls`. */
function logged(headerBytes = HEADER_BYTES): { parser: RequestParser; calls: string[] } {
  const calls: string[] = [];
  const sink: RequestSink = {
    messageBegin: () => calls.push('begin'),
    head: (h) =>
      calls.push(
        `head ${h.method} ${h.url} ${h.versionMajor}.${h.versionMinor} ${h.rawHeaders.length / 2} fields` +
          `${h.shouldKeepAlive ? ' keep-alive' : ''}${h.upgrade ? ' upgrade' : ''}`,
      ),
    body: (chunk) => calls.push(`body ${chunk.toString('latin1')}`),
    end: (trailers) => calls.push(`end ${JSON.stringify(trailers)}`),
  };
  return { parser: new RequestParser(sink, headerBytes), calls };
}

const feed = (parser: RequestParser, text: string) => parser.feed(Buffer.from(text, 'latin1'));

describe('one parser per connection', () => {
  it('reads pipelined requests from one buffer in order, each head after its begin', () => {
    const { parser, calls } = logged();
    const fed = feed(
      parser,
      'POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\nT: 1\r\n\r\n' +
        'GET /b HTTP/1.1\r\nHost: x\r\n\r\n\r\nGET /c HTTP/1.0\r\n\r\n',
    );
    expect(fed).toEqual({ kind: 'more' });
    expect(calls).toEqual([
      'begin',
      'head POST /a 1.1 1 fields keep-alive',
      'body hel',
      'body lo',
      'end ["T","1"]',
      'begin',
      'head GET /b 1.1 1 fields keep-alive',
      'end []',
      'begin',
      'head GET /c 1.0 0 fields',
      'end []',
    ]);
    expect(parser.finish()).toBeNull();
  });

  it('a head begins at its first byte: CR LF between requests starts no clock', () => {
    const { parser, calls } = logged();
    feed(parser, 'GET /a HTTP/1.1\r\n\r\n\r\n');
    expect(calls).toEqual(['begin', 'head GET /a 1.1 0 fields keep-alive', 'end []']);
    feed(parser, 'G');
    expect(calls.at(-1)).toBe('begin');
    feed(parser, 'ET /b HTTP/1.1\r\n');
    expect(calls.at(-1)).toBe('begin');
    feed(parser, '\r\n');
    expect(calls.at(-2)).toBe('head GET /b 1.1 0 fields keep-alive');
  });

  it('a head of 40 fields with its target split over three reads arrives whole', () => {
    const { parser, calls } = logged();
    const fields = Array.from({ length: 40 }, (_, i) => `f${i}: v\r\n`).join('');
    feed(parser, 'GET /a-lo');
    feed(parser, 'ng-target HTTP/1.1\r\nf');
    feed(parser, `${fields.slice(1)}\r\n`);
    expect(calls).toEqual(['begin', 'head GET /a-long-target 1.1 40 fields keep-alive', 'end []']);
  });
});

describe('upgrades hand the rest of the bytes over', () => {
  it.each([
    ['CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n', 'CONNECT a.test:443'],
    [
      'GET /ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nContent-Length: 3\r\n\r\n',
      'GET /ws',
    ],
  ])('%j: no body is read, the rest is the tunnel’s', (head, line) => {
    const { parser, calls } = logged();
    const fed = feed(parser, `${head}abc\x16\x03\x01`);
    expect(fed.kind).toBe('upgrade');
    expect(fed.kind === 'upgrade' && fed.rest.toString('latin1')).toBe('abc\x16\x03\x01');
    expect(calls).toEqual([
      'begin',
      expect.stringMatching(`^head ${line} 1.1 .* upgrade$`),
      'end []',
    ]);
    expect(() => feed(parser, 'more')).toThrow(TrajgateError);
  });
});

describe('refusals answer as node:http’s clientError does', () => {
  it('a bad method → 400 naming llhttp’s code and reason; the parser is then done', () => {
    const { parser } = logged();
    const fed = feed(parser, 'get / HTTP/1.1\r\n\r\n');
    expect(fed.kind).toBe('error');
    if (fed.kind !== 'error') return;
    expect(fed.error.code).toBe('HPE_INVALID_METHOD');
    expect(parseErrorProblem(fed.error)).toEqual({
      status: 400,
      reason: 'malformed request (HPE_INVALID_METHOD: Invalid method encountered)',
    });
    expect(() => parser.finish()).toThrow(/finish when failed/);
  });

  it('a head over headerBytes → 431', () => {
    const { parser } = logged(1_024);
    const fed = feed(parser, `GET / HTTP/1.1\r\nX: ${'v'.repeat(1_100)}\r\n\r\n`);
    expect(fed.kind === 'error' && parseErrorProblem(fed.error).status).toBe(431);
  });

  it(`${MAX_FIELDS} fields are read, one more is refused 431 before the sink sees the head`, () => {
    const fields = (n: number) => Array.from({ length: n }, (_, i) => `f${i}: v\r\n`).join('');
    const ok = logged();
    expect(feed(ok.parser, `GET / HTTP/1.1\r\n${fields(MAX_FIELDS)}\r\n`).kind).toBe('more');
    expect(ok.calls[1]).toBe(`head GET / 1.1 ${MAX_FIELDS} fields keep-alive`);
    const over = logged();
    const fed = feed(over.parser, `GET / HTTP/1.1\r\n${fields(MAX_FIELDS + 1)}\r\n`);
    expect(fed.kind === 'error' && parseErrorProblem(fed.error)).toEqual({
      status: 431,
      reason: `request header fields too large: more than ${MAX_FIELDS} fields`,
    });
    expect(over.calls).toEqual(['begin']);
  });

  it('input that ends inside a body → finish() says so; after whole requests it is null', () => {
    const { parser, calls } = logged();
    feed(parser, 'POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhel');
    expect(calls.at(-1)).toBe('body hel');
    expect(parser.finish()?.code).toBe('HPE_INVALID_EOF_STATE');
    const empty = logged();
    expect(empty.parser.finish()).toBeNull();
  });

  it('an empty read is no end of input', () => {
    const { parser, calls } = logged();
    expect(parser.feed(Buffer.alloc(0))).toEqual({ kind: 'more' });
    feed(parser, 'GET / HTTP/1.1\r\n\r\n');
    expect(calls).toHaveLength(3);
  });

  it('a closed parser takes nothing more', () => {
    const { parser } = logged();
    parser.close();
    parser.close();
    expect(() => feed(parser, 'GET / HTTP/1.1\r\n\r\n')).toThrow(/feed when closed/);
  });
});

describe('the binding', () => {
  it('names every method node:http knows by llhttp’s number for it', () => {
    for (const method of NODE_METHODS) {
      const { parser, calls } = logged();
      const target = method === 'CONNECT' ? 'a.test:443' : '/';
      feed(parser, `${method} ${target} HTTP/1.1\r\n\r\n`);
      expect(calls[1]).toMatch(new RegExp(`^head ${method} `));
    }
    // The rest llhttp reads only on an RTSP line (PRI only as HTTP/2's preface, refused).
    for (const method of METHODS.filter((m) => !NODE_METHODS.includes(m) && m !== 'PRI')) {
      const { parser, calls } = logged();
      feed(parser, `${method} / RTSP/1.0\r\n\r\n`);
      expect(calls[1]).toBe(`head ${method} / 1.0 0 fields`);
    }
  });

  it('is loaded without a deprecation warning, even under --pending-deprecation', () => {
    const dist = resolve(import.meta.dirname, '../../dist/ingress/lean/request-parser.js');
    const script = `const { RequestParser } = await import(${JSON.stringify(dist)});
      const heads = [];
      const p = new RequestParser({ messageBegin() {}, head: (h) => heads.push(h.url), body() {}, end() {} }, 1024);
      p.feed(Buffer.from('GET /ok HTTP/1.1\\r\\n\\r\\n'));
      p.close();
      console.log(heads.join());`;
    const out = execFileSync(
      process.execPath,
      ['--throw-deprecation', '--pending-deprecation', '--input-type=module', '-e', script],
      { encoding: 'utf8' },
    );
    expect(out.trim()).toBe('/ok');
  });
});
