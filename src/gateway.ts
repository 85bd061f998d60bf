import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { Egress } from './action/egress.js';
import type { Lookup } from './action/egress.js';
import { Forwarder } from './action/forward.js';
import type { HostPort } from './config/formats.js';
import type { Config } from './config/load.js';
import { TrajgateError } from './errors.js';
import { compilePolicy } from './guard/compile.js';
import { Guard } from './guard/guard.js';
import { openJournal } from './journal/open.js';
import type { JournalWriter } from './journal/writer.js';
import { Identity } from './ingress/identity.js';
import { createProxyServer } from './ingress/proxy.js';
import { Pipeline } from './pipeline.js';
import { Sessions } from './review/sessions.js';

export interface RunningGateway {
  readonly config: Config;
  readonly guard: Guard;
  readonly journal: JournalWriter;
  readonly sessions: Sessions;
  readonly pipeline: Pipeline;
  /** Where the proxy listens (the real port when the config said 0). */
  readonly proxy: HostPort;
  /** Records read back from the journal at start. */
  readonly restored: number;
  /** Stops accepting, lets in-flight requests finish up to `limits.drainTimeout`, syncs the journal. */
  stop(): Promise<void>;
}

export interface GatewayOptions {
  readonly log: Logger;
  /** Name resolution for egress (tests resolve names to loopback without a resolver). */
  readonly lookup?: Lookup;
}

/** Builds the data path from a config, rebuilds state from the journal, and starts listening. */
export async function startGateway(
  config: Config,
  options: GatewayOptions,
): Promise<RunningGateway> {
  const { log } = options;
  const guard = new Guard(compilePolicy(config));
  const { writer: journal, restored } = openJournal(config.journal, guard, {
    fsyncMs: config.journalFsync,
    warn: (m) => log.warn(m),
  });
  const sessions = new Sessions(guard, journal, config.policy.holdTimeout);
  const egress = new Egress({
    allowPrivate: config.network.allowPrivate,
    timeoutMs: config.limits.connectTimeout,
    ...(options.lookup ? { lookup: options.lookup } : {}),
  });
  for (const l of Object.values(config.listen)) if (l.port !== 0) egress.addOwnPort(l.port);
  const pipeline = new Pipeline(config, guard, journal, sessions, egress);
  const forwarder = new Forwarder(config.limits);
  const server = createProxyServer({
    pipeline,
    identity: new Identity(config.agents),
    forwarder,
    limits: config.limits,
    log,
    tunnels: new Map(),
  });
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  let proxy: HostPort;
  try {
    proxy = await listen(server, config.listen.proxy);
  } catch (err) {
    journal.close();
    throw err;
  }
  egress.addOwnPort(proxy.port);
  return {
    config,
    guard,
    journal,
    sessions,
    pipeline,
    proxy,
    restored,
    async stop() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      sessions.shutdown();
      const deadline = new AbortController();
      const drained = await Promise.race([
        closed.then(() => true),
        sleep(config.limits.drainTimeout, false, { signal: deadline.signal }).catch(() => true),
      ]);
      deadline.abort();
      if (!drained) {
        log.warn(
          `stop: ${sockets.size} connection(s) still open after ${config.limits.drainTimeout} ms; closing them`,
        );
        for (const socket of sockets) socket.destroy();
        await closed;
      }
      await forwarder.close();
      journal.close();
    },
  };
}

function listen(server: Server, at: HostPort): Promise<HostPort> {
  return new Promise((resolve, reject) => {
    server.once('error', (err: Error & { code?: string }) => {
      const why = err.code === 'EADDRINUSE' ? 'address already in use' : err.message;
      reject(new TrajgateError('E_LISTEN', `cannot listen on ${at.host}:${at.port}: ${why}`));
    });
    server.listen(at.port, at.host, () => {
      const address = server.address() as AddressInfo;
      resolve({ host: at.host, port: address.port });
    });
  });
}
