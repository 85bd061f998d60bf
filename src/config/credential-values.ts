import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { osError } from '../os-error.js';
import type { RawCredential } from './credentials-schema.js';
import { MIN_VALUE, sentinelOverlap } from './credentials-schema.js';
import { keyPath } from './issues.js';
import type { Problem } from './problems.js';
import type { WithSentinels } from '../event/sentinels.js';

/** A configured credential with its sentinels, as the gateway runs it. */
export type ArmedCredential = WithSentinels<Credential>;

/** A credential with its value read: `valueFile` (made absolute) says where it came from. */
export type Credential = Omit<RawCredential, 'value' | 'valueFile'> & {
  readonly value: string;
  readonly valueFile?: string;
};

/**
 * Reads each `valueFile` (relative to the config's folder) and checks the values against the
 * sentinels. Problems name the key and the file, never the value.
 */
export function credentialValues(
  raw: readonly RawCredential[],
  baseDir: string,
  report: (problem: Problem) => void,
): Credential[] {
  return raw.map((c, i) => {
    const at = (key: string, text: string) => {
      const path = ['credentials', i, key];
      report({ path, text: `${keyPath(path, { credentials: raw })}: ${text}` });
    };
    const { value, valueFile, ...rest } = c;
    const file = valueFile === undefined ? undefined : resolve(baseDir, valueFile);
    const read = file === undefined ? (value ?? '') : fileValue(file, (t) => at('valueFile', t));
    if (file !== undefined && read !== '' && read.length < MIN_VALUE)
      at('valueFile', `holds fewer than ${MIN_VALUE} characters`);
    // An inline value's overlap is the schema's to report.
    const overlap = file === undefined ? null : sentinelOverlap(c.sentinel, read);
    if (overlap !== null) at('sentinel', overlap);
    return file === undefined
      ? { ...rest, value: read }
      : { ...rest, value: read, valueFile: file };
  });
}

/** The file's text less one trailing newline (`echo token > file`); '' when it failed. */
function fileValue(file: string, fail: (text: string) => void): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    fail(
      osError('E_CONFIG_READ', err, { op: 'read', what: "the credential's value", path: file })
        .message,
    );
    return '';
  }
  const value = text.replace(/\r?\n$/, '');
  if (value === '') fail(`${file} is empty`);
  return value;
}
