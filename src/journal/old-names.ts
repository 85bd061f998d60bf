/**
 * Spellings older journals (and older gateways sharing a store) wrote, read as today's names
 * (docs/glossary.md). A journal line is never rewritten (the hash chain is over its bytes), so
 * every reader of records takes both until the next minor version:
 * - `ref` in `outcome`, `result`, `flow` and `tunnel` records: the request id, `rid` as in
 *   every other record;
 * - type `block`: an operator's deny pattern, now `deny-pattern`.
 * Changes `value` (a record just parsed) in place and answers it.
 */
export function currentNames<T>(value: T): T {
  const r = value as Record<string, unknown>;
  if (r.type === 'block') r.type = 'deny-pattern';
  if ('ref' in r && !('rid' in r)) {
    r.rid = r.ref;
    delete r.ref;
  }
  return value;
}

/**
 * A record as it is shared with other gateways (the store's rules, the bus): in the spelling
 * the previous minor version reads, so that during a rolling upgrade an older replica still
 * applies a deny pattern a newer one added (it would ignore `deny-pattern`). Every reader here
 * takes both (currentNames). Until the next minor version.
 */
export function sharedSpelling<T extends { readonly type: string }>(record: T): T {
  return record.type === 'deny-pattern' ? { ...record, type: 'block' } : record;
}
