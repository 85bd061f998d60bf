import { createRequire } from 'node:module';
import type * as Undici from 'undici';

const require = createRequire(import.meta.url);

/**
 * The parts of undici the gateway uses, read from undici's own files: its index also loads
 * fetch, WebSocket, EventSource, caches and mocks, ~9 MB of RSS a gateway never uses. undici
 * declares no `exports` map and its version is pinned; test/unit/undici-parts.test.ts checks
 * these are the very objects its index exports.
 */
export const Agent = require('undici/lib/dispatcher/agent.js') as typeof Undici.Agent;
export type Agent = Undici.Agent;
export const Pool = require('undici/lib/dispatcher/pool.js') as typeof Undici.Pool;
export type Pool = Undici.Pool;
export const errors = require('undici/lib/core/errors.js') as typeof Undici.errors;
