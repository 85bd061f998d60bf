// The least a Node.js hook can do: read the hook input on stdin and POST it to the bridge with
// node:http (no parsing, no mapping, no checks), exit 0 on a 200. CommonJS, as the least Node
// starts with (no ES module loader). bench/hook/run.mjs times it beside `trajgate check` as the
// floor of a hook written in Node.
//   node bench/hook/floor.cjs URL < hook-input.json
'use strict';
const { request } = require('node:http');

let body = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => (body += chunk));
process.stdin.on('end', () => {
  const input = JSON.parse(body);
  const event = JSON.stringify({
    kind: 'read',
    target: input.tool_input.file_path,
    call: input.tool_use_id,
  });
  const req = request(new URL('/events', process.argv[2]), {
    method: 'POST',
    agent: false,
    headers: {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(event),
      authorization: `Bearer ${process.env.TRAJGATE_AGENT_TOKEN}`,
    },
  });
  req.on('response', (res) => {
    res.resume();
    res.on('end', () => (process.exitCode = res.statusCode === 200 ? 0 : 2));
  });
  req.end(event);
});
