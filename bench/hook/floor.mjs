// The least a Node.js hook can do: read the hook input on stdin and POST it to the bridge with
// node:http (no parsing, no mapping, no checks), exit 0 on a 200. bench/hook/run.mjs times it
// beside `trajgate check` as the floor of a hook written in Node.
//   node bench/hook/floor.mjs URL < hook-input.json
import { request } from 'node:http';

let body = '';
process.stdin.setEncoding('utf8');
for await (const chunk of process.stdin) body += chunk;
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
