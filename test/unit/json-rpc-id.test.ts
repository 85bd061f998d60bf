import { describe, expect, it } from 'vitest';
import { JsonRpcScan, NO_ID } from '../../src/ingress/json-rpc-scan.js';

/**
 * Whom a response answers, read as its bytes pass (answer-gate.ts drops one that answers
 * another request): the top-level `id` as JSON.parse reads it, whatever the chunking.
 */
const read = (text: string, cut: number) => {
  const s = new JsonRpcScan();
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += cut) s.feed(bytes.subarray(i, i + cut));
  return { id: s.id, response: s.response, batch: s.batch };
};

describe('JsonRpcScan: the top-level id', () => {
  it.each([
    ['a number', '{"jsonrpc":"2.0","id":7,"result":{}}', 7],
    ['a number spelled otherwise', '{"id":7.0e0,"result":{}}', 7],
    ['a string with escapes', '{"id":"a\\"b\\u0063","result":{}}', 'a"bc'],
    ['after the result', '{"result":{"id":1,"x":[{"id":2}]},"id":"late"}', 'late'],
    ['a key spelled with an escape', '{"\\u0069d":9,"result":{}}', 9],
    ['the last of two', '{"id":1,"result":{},"id":2}', 2],
    ['null', '{"id":null,"error":{"code":1}}', null],
    ['spaces around', '{ "id" : 12 , "result" : {} }', 12],
    ['none', '{"result":{}}', NO_ID],
    ['an object', '{"id":{"a":1},"result":{}}', NO_ID],
    ['too long', `{"id":"${'x'.repeat(300)}","result":{}}`, NO_ID],
  ])('%s', (_, text, id) => {
    for (const cut of [1, 3, text.length]) expect(read(text, cut).id).toEqual(id);
  });

  it('an id inside a string or nested object is not the top-level one', () => {
    const text = '{"result":{"text":"\\"id\\":5"},"params":{"id":6}}';
    expect(read(text, 2)).toEqual({ id: NO_ID, response: true, batch: false });
  });

  it('a batch is noted and its members are not read', () => {
    expect(read('[{"id":1,"result":{}}]', 4)).toEqual({ id: NO_ID, response: false, batch: true });
  });
});
