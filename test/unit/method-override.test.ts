import { describe, expect, it } from 'vitest';
import { methodOverride } from '../../src/ingress/method-override.js';

describe('methodOverride: every spelling an upstream reads as an override', () => {
  it.each([
    [['X-HTTP-Method-Override', 'DELETE'], '', 'the X-HTTP-Method-Override header'],
    [['x-http-method', ''], '', 'the x-http-method header'],
    [['X_Method_Override', 'PUT'], '', 'the X_Method_Override header'],
    [['Accept', '*/*', 'X-Method-Override', 'GET'], '?a=1', 'the X-Method-Override header'],
    [[], '?_method=DELETE', 'the query parameter "_method"'],
    [[], '?a&%5F%6D%65%74%68%6F%64=DELETE', 'the query parameter "%5F%6D%65%74%68%6F%64"'],
    [[], '?%25255fmethod=1', 'the query parameter "%25255fmethod"'],
    [[], '?_method[x]=1', 'the query parameter "_method[x]"'],
    [[], '?%20_method=1', 'the query parameter "%20_method"'],
    [[], '?_method%zz&_method=1', 'the query parameter "_method"'],
  ])('%j %s → %s', (raw, search, named) => {
    expect(methodOverride(raw, search)).toBe(named);
  });

  it.each([
    [['X-Method', 'DELETE', 'X-HTTP-Method-Overrides', 'x'], ''],
    [[], ''],
    [[], '?'],
    [[], '?method=DELETE&_methods=1&x_method=1&q=_method'],
    [[], '?_method%zz=1'],
    [[], '?%5_method=1'],
  ])('%j %s → none', (raw, search) => {
    expect(methodOverride(raw, search)).toBeNull();
  });
});
