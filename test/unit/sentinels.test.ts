import { describe, expect, it } from 'vitest';
import { SENTINEL } from '../../src/config/credentials-schema.js';
import { SENTINEL_KEY_ID } from '../../src/config/sigv4-schema.js';
import { generatedKeyId, generatedSentinel, sentinels } from '../../src/event/sentinels.js';

const KEY = Buffer.from('installation-key-0123456789abcdef');

describe('generated sentinels', () => {
  it('are tgs_<name>_<32 hex>, in the format a configured one must have', () => {
    for (const name of ['github', 'aws-prod', 'x', 'a_b-c']) {
      const s = generatedSentinel(KEY, name);
      expect(s).toMatch(new RegExp(`^tgs_${name.replaceAll('-', '_')}_[0-9a-f]{32}$`));
      expect(s).toMatch(SENTINEL);
    }
  });

  it('are the same for the same key and name, different for another of either', () => {
    const s = generatedSentinel(KEY, 'github');
    expect(generatedSentinel(Buffer.from(KEY), 'github')).toBe(s);
    expect(generatedSentinel(Buffer.from('another-key-0123456789abcdef'), 'github')).not.toBe(s);
    const names = ['github', 'gitlab', 'a-b', 'a_b', 'github2'];
    const all = names.map((n) => generatedSentinel(KEY, n));
    expect(new Set(all).size).toBe(names.length);
    // `a-b` and `a_b` share a prefix, not their random part.
    expect(all[2]?.slice(-32)).not.toBe(all[3]?.slice(-32));
  });

  it('stand in only where none is configured; the key is read only then', () => {
    let reads = 0;
    const key = () => (reads++, KEY);
    const fixed = { name: 'fixed', sentinel: 'tgs_fixed_0123456789abcdef' };
    expect(sentinels([fixed], key)).toEqual([fixed]);
    expect(reads).toBe(0);
    expect(sentinels([fixed, { name: 'gen' }], key)).toEqual([
      fixed,
      { name: 'gen', sentinel: generatedSentinel(KEY, 'gen') },
    ]);
    expect(reads).toBe(1);
  });

  it('give a sigv4 credential a key id when none is configured, stable and apart', () => {
    const id = generatedKeyId(KEY, 'aws');
    expect(id).toMatch(/^TGS[A-Z2-7]{17}$/);
    expect(id).toMatch(SENTINEL_KEY_ID);
    expect(generatedKeyId(Buffer.from(KEY), 'aws')).toBe(id);
    expect(generatedKeyId(KEY, 'aws2')).not.toBe(id);
    expect(generatedKeyId(Buffer.from('another-key-0123456789abcdef'), 'aws')).not.toBe(id);
    const fixed = { name: 'fixed', sentinel: 'tgs_fixed_0123456789abcdef' };
    const signing = {
      ...fixed,
      sigv4: { accessKeyId: 'AKIAREAL0123456789', sentinelKeyId: 'TGSFIXED0123456789' },
    };
    let reads = 0;
    const key = () => (reads++, KEY);
    expect(sentinels([signing], key)).toEqual([signing]);
    expect(reads).toBe(0);
    const bare = { name: 'aws', sigv4: { accessKeyId: 'AKIAREAL0123456789' } };
    expect(sentinels([bare], key)).toEqual([
      {
        name: 'aws',
        sentinel: generatedSentinel(KEY, 'aws'),
        sigv4: { accessKeyId: 'AKIAREAL0123456789', sentinelKeyId: id },
      },
    ]);
    expect(reads).toBe(2);
  });
});
