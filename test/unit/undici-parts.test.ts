import * as undici from 'undici';
import { describe, expect, it } from 'vitest';
import { Agent, errors, undici as whole } from '../../src/undici.js';

// src/undici.ts loads undici's dispatcher files directly (its index costs ~9 MB of RSS more):
// an upgrade that moves them must fail here, not in production.
describe('undici parts', () => {
  it('are the very classes and errors undici exports', () => {
    expect(Agent).toBe(undici.Agent);
    expect(errors).toBe(undici.errors);
    expect(errors.ConnectTimeoutError).toBe(undici.errors.ConnectTimeoutError);
  });

  it('loads the whole of undici on demand, with the API methods its index adds', () => {
    expect(whole().Pool).toBe(undici.Pool);
    expect(typeof whole().Pool.prototype.request).toBe('function');
  });
});
