import { createServer } from 'node:http';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll } from 'vitest';

/** One attribute as OTLP/JSON writes it: `{ key, value: { stringValue | intValue | … } }`. */
interface KeyValue {
  readonly key: string;
  readonly value: Record<string, unknown>;
}

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  readonly startTimeUnixNano: string;
  readonly endTimeUnixNano: string;
  readonly attributes: Record<string, unknown>;
  readonly events: { name: string; attributes: Record<string, unknown> }[];
  readonly links: { traceId: string; spanId: string }[];
  readonly status: { code?: number };
}

export interface ReceivedLog {
  readonly body: unknown;
  readonly severityText: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly attributes: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** `http://127.0.0.1:PORT` (the OTLP/HTTP base the exporter adds /v1/… to). */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  readonly logs: ReceivedLog[];
  /** Every byte received, bodies and headers, for the secret checks. */
  readonly raw: Buffer[];
  /** The headers of each export request. */
  readonly headers: IncomingHttpHeaders[];
  /** Export requests received and left unanswered (`hang`). */
  readonly hanging: ServerResponse[];
  close(): Promise<void>;
}

/** An attribute's value as JSON gives it (intValue is a string in OTLP/JSON: a number here). */
function valueOf(v: Record<string, unknown>): unknown {
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('boolValue' in v) return v.boolValue;
  if ('arrayValue' in v)
    return ((v.arrayValue as { values?: Record<string, unknown>[] }).values ?? []).map(valueOf);
  return v;
}

const attributes = (list: KeyValue[] | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));

/**
 * A local OTLP/HTTP receiver on loopback port 0: `/v1/traces` and `/v1/logs`, JSON bodies
 * decoded into spans and log records. `hang: true` reads each export and never answers (a
 * collector that stopped responding).
 */
export async function startOtlpReceiver(options: { hang?: boolean } = {}): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const logs: ReceivedLog[] = [];
  const raw: Buffer[] = [];
  const headers: IncomingHttpHeaders[] = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      raw.push(Buffer.from(JSON.stringify(req.headers)), body);
      headers.push(req.headers);
      if (options.hang) {
        hanging.push(res);
        return;
      }
      const json = JSON.parse(body.toString('utf8') || '{}');
      if (req.url === '/v1/traces') spans.push(...decodeSpans(json));
      else if (req.url === '/v1/logs') logs.push(...decodeLogs(json));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  afterAll(close);
  return { url: `http://127.0.0.1:${port}`, spans, logs, raw, headers, hanging, close };
}

/** A loopback port that refuses connections (a server opened there, then closed). */
export async function refusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

function decodeSpans(json: any): ReceivedSpan[] {
  return (json.resourceSpans ?? []).flatMap((rs: any) =>
    (rs.scopeSpans ?? []).flatMap((ss: any) =>
      (ss.spans ?? []).map((s: any): ReceivedSpan => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        startTimeUnixNano: String(s.startTimeUnixNano),
        endTimeUnixNano: String(s.endTimeUnixNano),
        attributes: attributes(s.attributes),
        events: (s.events ?? []).map((e: any) => ({
          name: e.name,
          attributes: attributes(e.attributes),
        })),
        links: (s.links ?? []).map((l: any) => ({ traceId: l.traceId, spanId: l.spanId })),
        status: s.status ?? {},
      })),
    ),
  );
}

function decodeLogs(json: any): ReceivedLog[] {
  return (json.resourceLogs ?? []).flatMap((rl: any) =>
    (rl.scopeLogs ?? []).flatMap((sl: any) =>
      (sl.logRecords ?? []).map((l: any): ReceivedLog => ({
        body: l.body?.stringValue,
        severityText: l.severityText,
        traceId: l.traceId ?? '',
        spanId: l.spanId ?? '',
        attributes: attributes(l.attributes),
      })),
    ),
  );
}
