import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll } from 'vitest';
import type { EventRecord, JournalRecord, TunnelRecord } from '../../src/journal/records.js';
import { runCliAsync } from './cli.js';
import { readRecords } from './gateway.js';
import { roundTrip, startTcpServer } from './raw.js';
import { waitFor } from './wait.js';
import type { TcpServer } from './raw.js';

/** An echo server that keeps its sockets (to push bytes from the upstream side) and what it got. */
export interface HeldEcho {
  readonly server: TcpServer;
  readonly authority: string;
  readonly sockets: Socket[];
  /** Every byte received, all connections, in order (latin1). */
  received: string;
}

export async function startHeldEcho(): Promise<HeldEcho> {
  const echo: HeldEcho = { server: undefined as never, authority: '', sockets: [], received: '' };
  const server = await startTcpServer((socket) => {
    echo.sockets.push(socket);
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      echo.received += d;
      socket.write(d);
    });
  });
  return Object.assign(echo, { server, authority: `127.0.0.1:${server.port}` });
}

/** Waits `ms` and says what arrived meanwhile: for asserting that nothing does. */
export async function quietFor(socket: Socket, ms: number): Promise<string> {
  return (await roundTrip(socket, '', () => false, ms)).got;
}

/** A `Proxy-Authorization` value for agent `id` (RFC 7617 Basic). */
export const proxyBasic = (id: string, token: string): string =>
  `Basic ${Buffer.from(`${id}:${token}`).toString('base64')}`;

/** The `tunnel` and `flow` records of a journal. */
export const flowRecords = (records: JournalRecord[]): TunnelRecord[] =>
  records.filter((r): r is TunnelRecord => r.type === 'tunnel' || r.type === 'flow');

export const eventsOf = (records: JournalRecord[], session: string): EventRecord[] =>
  records.filter((r): r is EventRecord => r.type === 'event' && r.session === session);

/** An HTTP upstream that shows request bodies as they arrive, and answers 200 at their end. */
export interface StreamingUpstream {
  readonly port: number;
  /** Body bytes so far, one entry per request in arrival order. */
  readonly bodies: string[];
  /** Resolves with what arrives next on request `i` within `ms`, or '' (asserting quiet). */
  next(i: number, ms: number): Promise<string>;
  /** How request `i` ended: its whole body read, or closed before its end. */
  ended(i: number): Promise<'whole' | 'cut short'>;
}

export async function startStreamingUpstream(): Promise<StreamingUpstream> {
  const bodies: string[] = [];
  const endings: Promise<'whole' | 'cut short'>[] = [];
  const listeners = new Set<(i: number, chunk: string) => void>();
  const server = createServer((req, res) => {
    const i = bodies.push('') - 1;
    endings[i] = new Promise((resolve) => {
      req.once('end', () => resolve('whole'));
      req.once('close', () => resolve(req.complete ? 'whole' : 'cut short'));
    });
    req.setEncoding('latin1');
    req.on('data', (chunk: string) => {
      bodies[i] += chunk;
      for (const l of listeners) l(i, chunk);
    });
    req.on('end', () => res.end(`got ${bodies[i]?.length} bytes\n`));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  afterAll(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return {
    port: (server.address() as AddressInfo).port,
    bodies,
    next: (i, ms) =>
      new Promise((resolve) => {
        const done = (got: string) => {
          clearTimeout(timer);
          listeners.delete(listener);
          resolve(got);
        };
        const listener = (at: number, chunk: string) => at === i && done(chunk);
        const timer = setTimeout(() => done(''), ms);
        listeners.add(listener);
      }),
    ended: async (i) => {
      await waitFor(() => endings[i] !== undefined);
      return endings[i] as Promise<'whole' | 'cut short'>;
    },
  };
}

/** One HTTP/1.1 chunk (RFC 9112 § 7.1). */
export const chunk = (text: string): string => `${text.length.toString(16)}\r\n${text}\r\n`;

/**
 * Each event record's verdict and boundary, as journaled (`live`) and as `trajgate replay
 * --config config` of the journal decides them again (`again`).
 */
export async function replayVerdicts(
  journal: string,
  config: string,
): Promise<{ live: unknown[][]; again: unknown[][] }> {
  const records = readRecords(journal).filter((r): r is EventRecord => r.type === 'event');
  const live = records.filter((e) => e.held !== true).map((e) => [e.verdict, e.boundary]);
  const r = await runCliAsync(['replay', journal, '--json', '--config', config]);
  if (r.stderr !== '') throw new Error(`replay failed: ${r.stderr}`);
  const lines = r.stdout.trim().split('\n');
  const again = lines.map((l) => JSON.parse(l) as EventRecord).map((d) => [d.verdict, d.boundary]);
  return { live, again };
}
