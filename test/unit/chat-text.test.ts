import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { suggestApproval } from '../../src/guard/suggest.js';
import { chatLink, chatSafe, chatTarget, escapeChat } from '../../src/review/chat-text.js';
import { pageBase, sessionUrl } from '../../src/review/notices.js';

const J = '\u2060';

describe('chat text (Slack and Mattermost incoming webhooks)', () => {
  it('escapes &, < and > as Slack requires, so an agent cannot write <!channel> or a link', () => {
    expect(escapeChat('a & <b> <!channel>')).toBe('a &amp; &lt;b&gt; &lt;!channel&gt;');
    expect(chatSafe('<http://evil|click>', 100)).toBe('&lt;http[:]//evil|click&gt;');
  });

  it('keeps one line: controls, separators and bidi overrides are replaced', () => {
    const s = chatSafe('a\nb\r\u2028c\u202ed\u0000e', 100);
    expect(s).toBe('a\ufffdb\ufffd\ufffdc\ufffdd\ufffde');
  });

  it('bounds the length, saying it cut', () => {
    expect(chatSafe('x'.repeat(500), 10)).toBe(`${'x'.repeat(9)}…`);
    expect([...chatSafe('😀'.repeat(50), 10)]).toHaveLength(10);
  });

  it('no mention, no Markdown link, no link a chat server would fetch', () => {
    expect(chatSafe('@here @channel', 100)).toBe(`@${J}here @${J}channel`);
    expect(chatSafe('[x](http://evil.example/p.q)', 100)).toBe(
      `[x]${J}(http[:]//evil[.]example/p.q)`,
    );
    expect(chatTarget('GET https://api.example.com/v1/a.json', 100)).toBe(
      'GET https[:]//api[.]example[.]com/v1/a.json',
    );
    expect(chatTarget('registry.example.org:443', 100)).toBe('registry[.]example[.]org:443');
  });

  it('links are <url|label> with nothing in the URL that ends them early', () => {
    expect(chatLink('https://h/x?a=1&b=2', 'Approve once')).toBe(
      '<https://h/x?a=1&b=2|Approve once>',
    );
    expect(chatLink('https://h/a|b>c', 'A & B')).toBe('<https://h/a%7Cb%3Ec|A &amp; B>');
  });
});

describe('suggestApproval', () => {
  it.each([
    ['POST', 'http://h:8080/v1/x', 'POST http://h:8080/v1/'],
    ['GET', 'https://api.example.com/v1/models/abc?q=1', 'GET https://api.example.com/v1/models/'],
    ['GET', 'https://api.example.com/x', 'GET https://api.example.com'],
    ['PUT', 'http://[::1]:9000/a/b', 'PUT http://[::1]:9000/a/'],
    [undefined, 'http://h/a/b', 'http://h/a/'],
    ['CONNECT', 'h.example:443', 'h.example:443'],
  ])('%s %s → %s', (method, target, pattern) => {
    expect(suggestApproval({ kind: 'network', target, method })).toEqual({
      kind: 'network',
      pattern,
    });
  });

  it('other kinds approve their target alone', () => {
    expect(suggestApproval({ kind: 'write', target: '/etc/*x?' })).toEqual({
      kind: 'write',
      pattern: '/etc/\\*x\\?',
    });
  });
});

describe('page URL', () => {
  it('defaults to the admin listener; a wildcard address names this machine', () => {
    expect(pageBase(undefined, { host: '127.0.0.1', port: 8082 }).href).toBe(
      'http://127.0.0.1:8082/',
    );
    expect(pageBase(undefined, { host: '::1', port: 8082 }).href).toBe('http://[::1]:8082/');
    for (const host of ['0.0.0.0', '::'])
      expect(pageBase(undefined, { host, port: 8082 }).hostname).toBe(hostname().toLowerCase());
  });

  it('notify.pageUrl is used as a base (ending in /); a session is a route of the page', () => {
    const base = pageBase('https://t.example/review?x=1#y', { host: '0.0.0.0', port: 1 });
    expect(base.href).toBe('https://t.example/review/');
    expect(sessionUrl(base, 'a b/c')).toBe('https://t.example/review/#/session/a%20b%2Fc');
  });
});
