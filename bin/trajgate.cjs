#!/usr/bin/env -S node --max-semi-space-size=4 --heap-growing-percent=20 --single-threaded-gc
// A proxy's garbage dies young, and its peak RSS is mostly V8's heap. 4 MB semi-spaces (V8
// grows them to 16) halve the young generation and free the buffers it holds twice as often;
// the old generation may grow 20 % past what lived after its last collection (V8 lets it grow
// up to 4x when collecting is cheap). Together they take ~25 MB off the peak for a few % more
// GC work (bench/proxy). GC work stays on the main thread: a gateway usually gets one or two
// CPUs, and background GC threads competing with the event loop for them set its tail latency.
// This line is the one place the flags live: `npm start` and the Dockerfile run this file as a
// program, the benches read the line, and test/unit/launcher-flags.test.ts fails if a launcher
// grows flags of its own.
//
// CommonJS, so that a runner's hook (`trajgate check`, twice per tool call) starts without
// Node's ES module loader: it runs the CommonJS build of check (dist/hook/, src/cli/hook-main.ts),
// and so does ssh's ProxyCommand (`trajgate connect`, once per connection: src/cli/connect.ts).
// Every other command, check with --config and either with --help, runs the ES build
// (dist/cli/main.js).
'use strict';
const { join } = require('node:path');

const dist = join(__dirname, '..', 'dist');
/** A module of the ES build, by its path under dist/ (node:url loaded only then). */
const esm = (file) => import(require('node:url').pathToFileURL(join(dist, file)).href);
const [command, ...rest] = process.argv.slice(2);
if (command === 'check' && !rest.some((arg) => /^(--config|--help|-h)(=|$)/.test(arg)))
  require(join(dist, 'hook', 'cli', 'hook-main.js')).main(rest, esm);
else if (command === 'connect' && !rest.some((arg) => arg === '--help' || arg === '-h'))
  require(join(dist, 'hook', 'cli', 'connect.js')).main(rest, esm);
else esm('cli/main.js');
