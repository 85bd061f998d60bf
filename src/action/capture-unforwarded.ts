import type { AgentRequest } from '../http/agent-message.js';
import type { Capture } from './capture.js';
import { expectsContinue, hasBody } from './headers.js';

/**
 * Reads into `capture` up to `maxBytes` of the body of a request that is not forwarded
 * (refused, or held and then refused): what the agent tried to send is what a reviewer most
 * needs. Bounded three ways: it stops at `maxBytes`, after `timeoutMs` in all (limits.bodyTimeout),
 * and when the client leaves. A body the agent holds back until `100 Continue` is not invited.
 * Nothing read here goes anywhere but the capture; what is left unread stays unread, so the
 * refusal closes the connection (see sendRefusal). Never rejects.
 */
export function readUnforwarded(
  req: AgentRequest,
  capture: Capture,
  maxBytes: number,
  timeoutMs: number,
): Promise<void> {
  if (maxBytes <= 0 || req.readableEnded || !hasBody(req) || expectsContinue(req)) {
    if (!req.complete && hasBody(req)) capture.requestCut();
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    let read = 0;
    const timer = setTimeout(() => done(), timeoutMs);
    const data = (chunk: Buffer) => {
      capture.request(chunk);
      read += chunk.length;
      if (read >= maxBytes) done();
    };
    const done = () => {
      clearTimeout(timer);
      req.off('data', data);
      req.off('end', done);
      req.off('close', done);
      req.off('error', done);
      req.pause();
      if (!req.complete) capture.requestCut();
      resolve();
    };
    req.on('data', data);
    req.once('end', done);
    req.once('close', done);
    req.once('error', done);
  });
}
