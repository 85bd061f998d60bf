// `trajgate connect HOST PORT` as CommonJS (built to dist/hook/ by tsconfig.hook.json, as
// hook-main.ts): ssh runs it once per connection as its ProxyCommand, and a CommonJS program
// starts without Node's ES module loader. bin/trajgate.cjs runs it unless --help is asked.
import { closeSync } from 'node:fs';
import { isIP, connect as tcp } from 'node:net';
import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { exitCode, TrajgateError } from '../errors.js';
import { terminalLines } from './table.js';

/** A proxy's answer head larger than this is not one. */
const HEAD_MAX = 64 * 1024;
/** How much of a refusal's body (its reason) is shown. */
const REASON_MAX = 4 * 1024;

export interface ConnectIo {
  readonly stdin: Readable;
  readonly stdout: Writable;
  readonly env: NodeJS.ProcessEnv;
  /** One line to stderr. */
  readonly err: (line: string) => void;
  /** Ends stdout for its reader (closing it: process.stdout's own end() leaves fd 1 open). */
  readonly endOut: () => void;
  readonly usage: () => Promise<string>;
}

/** A failure of this command: E_USAGE (exit 2) or E_CONNECT (exit 1), its message for stderr. */
const failed = (message: string, code: 1 | 2): TrajgateError =>
  new TrajgateError(code === 2 ? 'E_USAGE' : 'E_CONNECT', message);

/**
 * Relays stdin and stdout over `CONNECT HOST:PORT` to the proxy of `https_proxy` (or
 * `HTTPS_PROXY`), with its credentials: what `trajgate env AGENT` prints, so there is one
 * source of truth. Resolves with the exit code: 0 once both directions ended, 1 when the
 * proxy refused (its reason on stderr, which ssh shows) or the connection failed, 2 on usage.
 */
export async function connectCommand(argv: readonly string[], io: ConnectIo): Promise<number> {
  try {
    const target = targetOf(argv);
    const proxy = proxyOf(io.env);
    const socket = await open(proxy, target);
    const error = await pipeBoth(socket, io);
    if (error === null) return 0;
    io.err(`trajgate connect: ${target.authority}: the tunnel ended: ${error}`);
    return 1;
  } catch (err) {
    if (!(err instanceof TrajgateError)) throw err;
    io.err(`trajgate connect: ${err.message}`);
    if (err.code === 'E_USAGE') io.err(`usage: ${await io.usage()}`);
    return exitCode(err.code);
  }
}

interface Target {
  /** host:port as CONNECT names it (an IPv6 address in brackets, RFC 9110 § 9.3.6). */
  readonly authority: string;
}

function targetOf(argv: readonly string[]): Target {
  if (argv.length !== 2) throw failed('expected HOST PORT', 2);
  const [host, portText] = argv as [string, string];
  if (!/^\d{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535)
    throw failed(`port ${JSON.stringify(portText)}: expected a number 1-65535`, 2);
  const bare = /^\[(.*)\]$/.exec(host)?.[1] ?? host;
  // Anything that could end the request line or split the authority is no host.
  if (
    bare === '' ||
    /[\s/@?#[\]\u0000-\u001f\u007f]/.test(bare) ||
    (bare.includes(':') && isIP(bare) !== 6)
  )
    throw failed(`host ${JSON.stringify(host)}: expected a host name or an IP address`, 2);
  return { authority: bare.includes(':') ? `[${bare}]:${portText}` : `${bare}:${portText}` };
}

interface Proxy {
  readonly host: string;
  readonly port: number;
  /** `Basic …` for the URL's user:password, or null without. */
  readonly authorization: string | null;
  /** The URL without its credentials, for messages. */
  readonly shown: string;
}

function proxyOf(env: NodeJS.ProcessEnv): Proxy {
  const name = env.https_proxy ? 'https_proxy' : env.HTTPS_PROXY ? 'HTTPS_PROXY' : null;
  if (name === null)
    throw failed(
      'no proxy: set https_proxy or HTTPS_PROXY to the gateway (eval "$(trajgate env AGENT)")',
      1,
    );
  let url: URL;
  try {
    url = new URL(env[name] as string);
  } catch {
    throw failed(`${name} is not a URL`, 1);
  }
  const shown = `${url.protocol}//${url.host}`;
  if (url.protocol !== 'http:')
    throw failed(`${name} (${shown}): expected an http:// proxy URL`, 1);
  const user = decodeURIComponent(url.username);
  const authorization =
    user === '' && url.password === ''
      ? null
      : `Basic ${Buffer.from(`${user}:${decodeURIComponent(url.password)}`).toString('base64')}`;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return { host, port: url.port === '' ? 80 : Number(url.port), authorization, shown };
}

/** Opens the tunnel: resolves with the socket once the proxy answered 2xx. */
function open(proxy: Proxy, { authority }: Target): Promise<Socket> {
  return new Promise((resolve, reject) => {
    // Half-open: the server's end of stream must not end what stdin still sends.
    const socket = tcp({ host: proxy.host, port: proxy.port, noDelay: true, allowHalfOpen: true });
    let got = Buffer.alloc(0);
    const fail = (why: string) => {
      socket.destroy();
      reject(failed(`${authority} through ${proxy.shown}: ${why}`, 1));
    };
    socket.on('error', (err) => fail(err.message));
    socket.on('end', () => answered(true));
    socket.on('data', (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      answered(false);
    });
    const answered = (ended: boolean) => {
      const at = got.indexOf('\r\n\r\n');
      if (at === -1) {
        if (ended) fail('the proxy closed the connection without an answer');
        else if (got.length > HEAD_MAX) fail(`the proxy's answer is over ${HEAD_MAX} bytes`);
        return;
      }
      const head = got.toString('latin1', 0, at);
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      if (status === null) return fail("the proxy's answer is not HTTP/1.1");
      const code = Number(status[1]);
      const rest = got.subarray(at + 4);
      if (code >= 200 && code < 300) {
        socket.removeAllListeners('data').removeAllListeners('end').removeAllListeners('error');
        socket.pause();
        if (rest.length > 0) socket.unshift(rest);
        return resolve(socket);
      }
      // A refusal's body is its reason (action/respond.ts): read whole, or up to REASON_MAX.
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? Infinity);
      if (!ended && rest.length < Math.min(length, REASON_MAX)) return;
      const reason = rest.toString('utf8', 0, Math.min(rest.length, REASON_MAX)).trim();
      fail(`refused (${code})${reason === '' ? '' : `: ${terminalLines(reason)}`}`);
    };
    socket.write(
      `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n` +
        (proxy.authorization === null ? '' : `Proxy-Authorization: ${proxy.authorization}\r\n`) +
        '\r\n',
    );
  });
}

/**
 * stdin up, the tunnel down to stdout. An end of either passes on as a half-close (git's
 * `ssh` ends its input when it is done sending; the server still answers). Resolves once the
 * tunnel closed: null, or why it failed (a deny resets it).
 */
function pipeBoth(socket: Socket, { stdin, stdout, endOut }: ConnectIo): Promise<string | null> {
  return new Promise((resolve) => {
    let error: string | null = null;
    socket.on('error', (err) => (error ??= err.message));
    stdin.on('error', () => socket.destroy());
    stdout.on('error', () => socket.destroy());
    stdin.pipe(socket);
    socket.pipe(stdout, { end: false });
    socket.once('end', endOut);
    socket.once('close', () => {
      stdin.unpipe(socket);
      stdin.destroy();
      resolve(error);
    });
    socket.resume();
  });
}

/** bin/trajgate.cjs's entry; the usage text comes from the ES build through `esm`. */
export function main(argv: string[], esm: (file: string) => Promise<unknown>): void {
  const err = (line: string) => process.stderr.write(terminalLines(line) + '\n');
  void connectCommand(argv, {
    stdin: process.stdin,
    stdout: process.stdout,
    // Closed once what was written before is out (write callbacks come in order).
    endOut: () => process.stdout.write('', () => closeSync(1)),
    env: process.env,
    err,
    usage: async () =>
      ((await esm('cli/help.js')) as { usageLine(command: string): string }).usageLine('connect'),
  }).then((code) => {
    process.exitCode = code;
  });
}
