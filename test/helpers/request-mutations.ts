import {
  BASES,
  BYTES,
  CHUNKED,
  CODINGS,
  COLONS,
  DATA_ENDS,
  EOLS,
  EXT_BYTES,
  EXTENSIONS,
  FINALS,
  HELLO,
  HOST,
  JOINS,
  LAST,
  LENGTHS,
  METHODS,
  NAMES,
  SIZES,
  TARGETS,
  TRAILERS,
  VALUES,
  VERSIONS,
} from './request-pieces.js';

/**
 * A generated corpus of HTTP/1.1 requests for the lean parser's differential test: request
 * lines, field names and values, line endings, Content-Length and Transfer-Encoding framing
 * (RFC 9112 § 6), chunk sizes and extensions (§ 7.1), trailers, pipelining, upgrades, heads
 * around the size limit, cut-off input and byte mutations. Deterministic: the same seed gives
 * the same list, each case named by its family and what it varies.
 */
export interface GeneratedRequest {
  readonly name: string;
  readonly bytes: Buffer;
}

/** mulberry32: a small seeded generator, so a failing case can be named and replayed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** About 3,000 requests for a parser configured with `headerBytes` (limits.headerBytes). */
export function generatedRequests(seed: number, headerBytes: number): GeneratedRequest[] {
  const next = seededRandom(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  // By bytes: a pick that repeats an earlier case adds nothing.
  const out = new Map<string, GeneratedRequest>();
  const add = (name: string, text: string) => {
    if (!out.has(text)) out.set(text, { name, bytes: Buffer.from(text, 'latin1') });
  };
  const show = (s: string) => JSON.stringify(s);

  for (let i = 0; i < 400; i++) {
    const [m, t, v, sp] = [pick(METHODS), pick(TARGETS), pick(VERSIONS), pick([' ', '  ', '\t'])];
    const line = v === '' ? `${m}${sp}${t}` : `${m}${sp}${t}${sp}${v}`;
    add(`line ${show(line)}`, `${line}\r\n${HOST}Content-Length: 0\r\n\r\n`);
  }
  for (let i = 0; i < 400; i++) {
    const field = `${pick(NAMES)}${pick(COLONS)}${pick(VALUES)}`;
    add(`field ${show(field)}`, `GET / HTTP/1.1\r\n${HOST}${field}\r\nX-B: b\r\n\r\n`);
  }
  for (const [b, base] of BASES.entries()) {
    const ends = [...base.matchAll(/\r\n/g)].map((m) => m.index);
    for (const at of ends) {
      for (const eol of EOLS) {
        add(`eol base ${b} @${at} ${show(eol)}`, base.slice(0, at) + eol + base.slice(at + 2));
      }
    }
  }
  for (const cl of LENGTHS) {
    for (const body of ['hello', 'hel', 'helloGET / HTTP/1.1\r\n\r\n']) {
      const head = `POST / HTTP/1.1\r\n${HOST}`;
      add(`CL ${show(cl)} body ${show(body)}`, `${head}Content-Length: ${cl}\r\n\r\n${body}`);
    }
    add(
      `CL 5 and ${show(cl)}`,
      `POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: ${cl}\r\n\r\nhello`,
    );
    add(
      `CL ${show(cl)} then TE`,
      `POST / HTTP/1.1\r\nContent-Length: ${cl}\r\n${CHUNKED}\r\n${HELLO}`,
    );
    add(
      `TE then CL ${show(cl)}`,
      `POST / HTTP/1.1\r\n${CHUNKED}Content-Length: ${cl}\r\n\r\n${HELLO}`,
    );
  }
  for (const te of CODINGS) {
    for (const version of ['1.1', '1.0']) {
      const head = `POST / HTTP/${version}\r\n${HOST}`;
      add(`TE ${show(te)} HTTP/${version}`, `${head}Transfer-Encoding: ${te}\r\n\r\n${HELLO}`);
      const two = `Transfer-Encoding: gzip\r\nTransfer-Encoding: ${te}\r\n`;
      add(`TE gzip + ${show(te)} HTTP/${version}`, `${head}${two}\r\n${HELLO}`);
    }
  }
  for (let i = 0; i < 400; i++) {
    const ext = next() < 0.2 ? `;a=${pick(EXT_BYTES)}` : pick(EXTENSIONS);
    const chunk = `${pick(SIZES)}${ext}${pick(['\r\n', '\r\n', '\n'])}hello${pick(DATA_ENDS)}`;
    const last = `${pick(LAST)}\r\n${pick(TRAILERS)}${pick(FINALS)}`;
    add(`chunk ${show(chunk + last)}`, `POST / HTTP/1.1\r\n${HOST}${CHUNKED}\r\n${chunk}${last}`);
  }
  for (let i = 0; i < 300; i++) {
    const n = 2 + Math.floor(next() * 3);
    const parts = Array.from({ length: n }, () => Math.floor(next() * BASES.length));
    const join = pick(JOINS);
    add(`pipeline ${parts.join('+')} joined ${show(join)}`, parts.map((p) => BASES[p]).join(join));
  }
  for (const upgrade of upgrades()) add(`upgrade ${show(upgrade)}`, upgrade);
  for (const [name, text] of oversized(headerBytes)) add(name, text);
  for (const expect of ['100-continue', '100-Continue', 'foo', '']) {
    for (const version of ['1.1', '1.0']) {
      const head = `PUT / HTTP/${version}\r\n${HOST}Expect: ${expect}\r\nContent-Length: 2\r\n\r\nhi`;
      add(`expect ${show(expect)} HTTP/${version}`, head);
    }
  }
  for (let i = 0; i < 200; i++) {
    const base = pick(BASES);
    const at = Math.floor(next() * base.length);
    add(`cut ${BASES.indexOf(base)} @${at}`, base.slice(0, at));
  }
  for (let i = 0; i < 800; i++) {
    const base = pick(BASES);
    const at = Math.floor(next() * base.length);
    const byte = pick(BYTES);
    const how = pick(['insert', 'replace', 'delete'] as const);
    const after = how === 'insert' ? at : at + 1;
    const put = how === 'delete' ? '' : byte;
    add(
      `${how} ${BASES.indexOf(base)} @${at} ${show(put)}`,
      base.slice(0, at) + put + base.slice(after),
    );
  }
  return [...out.values()];
}

/** CONNECT and Upgrade in the forms a client might send, each with bytes after the head. */
function upgrades(): string[] {
  const after = 'after-the-head';
  return [
    `CONNECT a.test:443 HTTP/1.1\r\n\r\n${after}`,
    `CONNECT a.test:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello${after}`,
    `CONNECT a.test:443 HTTP/1.0\r\n\r\n${after}`,
    `CONNECT http://a.test/ HTTP/1.1\r\n\r\n${after}`,
    `CONNECT / HTTP/1.1\r\n\r\n${after}`,
    `CONNECT a.test:443 HTTP/1.1\r\n${CHUNKED}\r\n${HELLO}${after}`,
    `GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n${after}`,
    `GET / HTTP/1.1\r\nUpgrade: websocket\r\n\r\n${after}`,
    `GET / HTTP/1.1\r\nConnection: keep-alive, Upgrade\r\nUpgrade: h2c\r\n\r\n${after}`,
    `GET / HTTP/1.0\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n${after}`,
    `POST / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: x\r\nContent-Length: 5\r\n\r\nhello${after}`,
    `POST / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: x\r\n${CHUNKED}\r\n${HELLO}${after}`,
    `GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade:\r\n\r\n${after}`,
    `GET / HTTP/1.1\r\nConnection: close, Upgrade\r\nUpgrade: websocket\r\n\r\n${after}`,
    `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n${after}`,
  ];
}

/** Heads at and around `headerBytes`, and field counts around node:http's 1,000. */
function oversized(headerBytes: number): [string, string][] {
  const cases: [string, string][] = [];
  const line = 'GET / HTTP/1.1\r\n';
  for (const delta of [-40, -20, -2, -1, 0, 1, 2, 20]) {
    const pad = headerBytes + delta - line.length - 'X: \r\n\r\n'.length;
    cases.push([
      `head of ${headerBytes}${delta >= 0 ? '+' : ''}${delta} bytes`,
      `${line}X: ${'v'.repeat(pad)}\r\n\r\n`,
    ]);
    cases.push([
      `target of ${headerBytes}${delta >= 0 ? '+' : ''}${delta} bytes`,
      `GET /${'t'.repeat(headerBytes + delta)} HTTP/1.1\r\n\r\n`,
    ]);
  }
  for (const n of [31, 32, 33, 64, 999, 1000, 1001, 1100]) {
    const fields = Array.from({ length: n }, (_, i) => `f${i}: v\r\n`).join('');
    cases.push([`${n} header fields`, `GET / HTTP/1.1\r\n${fields}\r\n`]);
    cases.push([
      `${n} trailer fields`,
      `POST / HTTP/1.1\r\n${CHUNKED}\r\n5\r\nhello\r\n0\r\n${fields}\r\n`,
    ]);
  }
  return cases;
}
