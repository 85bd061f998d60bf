import { z } from 'zod';

/** A field-name is a token (RFC 9110 § 5.1, § 5.6.2). */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A field-value: visible characters, spaces and tabs, no CR, LF or NUL (RFC 9110 § 5.5). */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** What the exporter sets itself, per request. */
const OWN_HEADERS = new Set(['content-type', 'content-length', 'content-encoding', 'host']);

/**
 * Where the collector's OTLP/HTTP receiver is: its base URL, to which the signal's path
 * (`/v1/traces`, `/v1/logs`) is added. Credentials go in `headers`, never in the URL: the
 * endpoint is printed at start and in messages, the headers never are.
 */
const endpoint = z
  .url({ protocol: /^https?$/, message: 'expected an http:// or https:// URL' })
  .superRefine((text, ctx) => {
    const url = new URL(text);
    if (url.username !== '' || url.password !== '')
      ctx.addIssue({
        code: 'custom',
        message: 'must not carry credentials: put them in telemetry.otlp.headers (${VAR} allowed)',
      });
    if (url.search !== '' || url.hash !== '')
      ctx.addIssue({
        code: 'custom',
        message: 'must not have a query or fragment: /v1/traces and /v1/logs are added to it',
      });
  })
  .transform((text) => text.replace(/\/+$/, ''));

const headers = z.record(z.string(), z.string()).superRefine((given, ctx) => {
  for (const [name, value] of Object.entries(given)) {
    const at = (message: string) => ctx.addIssue({ code: 'custom', path: [name], message });
    if (!TOKEN.test(name))
      at("is not a header name (a token: letters, digits and !#$%&'*+.^_`|~-)");
    else if (OWN_HEADERS.has(name.toLowerCase())) at('is set by the exporter itself');
    // The value is not quoted back: it is usually a secret.
    if (!FIELD_VALUE.test(value)) at('has a value with a control character (CR, LF or NUL)');
  }
});

/** `telemetry.otlp`: OpenTelemetry export of the journal (src/telemetry/); off when absent. */
export const telemetrySchema = z
  .strictObject({
    otlp: z.strictObject({ endpoint, headers: headers.default({}) }).optional(),
  })
  .prefault({});

export type Otlp = NonNullable<z.output<typeof telemetrySchema>['otlp']>;
