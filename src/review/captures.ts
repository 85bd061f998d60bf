import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CapturedExchange, CapturedPart } from '../action/capture.js';
import { errnoCode, TrajgateError } from '../errors.js';
import { systemMessage } from '../os-error.js';

/**
 * One capture file (`<dir>/<rid>.json`) as written by Capture, or null when there is none.
 * Files from before captures said their encoding hold base64 bodies of forwarded exchanges.
 */
export function readCapture(dir: string, rid: number): CapturedExchange | null {
  let text: string;
  try {
    text = readFileSync(join(dir, `${rid}.json`), 'utf8');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return null;
    throw err;
  }
  const c = JSON.parse(text) as CapturedExchange;
  return {
    ...c,
    forwarded: c.forwarded ?? true,
    request: { ...c.request, ...encoded(c.request) },
    response: c.response ? { ...c.response, ...encoded(c.response) } : null,
  };
}

function encoded(part: CapturedPart): Pick<CapturedPart, 'encoding'> {
  return { encoding: part.encoding ?? 'base64' };
}

/**
 * `GET /api/sessions/:id/captures/:rid`: the capture of one request of that session. None, or
 * one of another session, is the same 404: a capture id says nothing about other sessions.
 */
export function sessionCapture(dir: string, session: string, rid: string): CapturedExchange {
  if (!/^[1-9]\d{0,15}$/.test(rid))
    throw new TrajgateError(
      'E_BAD_FIELD',
      `capture id must be a request id (the event's rid or seq), got ${JSON.stringify(rid)}`,
    );
  let capture: CapturedExchange | null;
  try {
    capture = readCapture(dir, Number(rid));
  } catch (err) {
    throw new TrajgateError(
      'E_CAPTURE_READ',
      `capture ${rid} cannot be read: ${systemMessage(err)}`,
    );
  }
  if (capture === null || capture.session !== session)
    throw new TrajgateError(
      'E_NO_CAPTURE',
      `no capture of request ${rid} in session ${JSON.stringify(session)} (captures need capture.bodies: true; only HTTP requests the proxy judged are captured)`,
    );
  return capture;
}
