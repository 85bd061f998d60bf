// The floor for replay: read the same file line by line and JSON.parse each line, nothing else.
import { createReadStream } from 'node:fs';

let rest = '';
let lines = 0;
const stream = createReadStream(process.argv[2], { encoding: 'utf8' });
for await (const chunk of stream) {
  const text = rest + chunk;
  let start = 0;
  for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
    JSON.parse(text.slice(start, nl));
    lines++;
    start = nl + 1;
  }
  rest = text.slice(start);
}
process.stdout.write(`${lines}\n`);
