import { createRequire } from 'node:module';
import type * as Undici from 'undici';
import { lazy } from './lazy.js';

const require = createRequire(import.meta.url);

/**
 * The parts of undici the gateway uses, read from undici's own files: its index also loads
 * fetch, WebSocket, EventSource, caches and mocks, ~9 MB of RSS a gateway never uses. Only
 * `dispatch` is used on these: the index is what adds `request` and the other API methods to
 * every dispatcher (webhooks, which use them, load it: `undici()`). undici declares no
 * `exports` map and its version is pinned; test/unit/undici-parts.test.ts checks these are
 * the very objects its index exports.
 */
export const Agent = require('undici/lib/dispatcher/agent.js') as typeof Undici.Agent;
export type Agent = Undici.Agent;
export const errors = require('undici/lib/core/errors.js') as typeof Undici.errors;

/** All of undici, loaded at first use (webhook notifications). */
export const undici = lazy<typeof Undici>('undici');
