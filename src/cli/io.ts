import { resolve } from 'node:path';
import type { Readable } from 'node:stream';
import type { Config } from '../config/load.js';
import { loadOperatorConfig } from '../config/operator-config.js';
import { TrajgateError } from '../errors.js';
import { osMessage } from '../os-error.js';
import { physicalPath } from '../event/paths.js';

/**
 * The lines of a stream in batches (one per chunk read), in constant memory; `first` is the
 * 1-based number of the batch's first line. A read error becomes E_INPUT_READ naming the input.
 */
export async function* readLines(
  input: Readable,
  name: string,
  progress: ((lines: number, bytes: number) => void) | null,
): AsyncGenerator<{ lines: string[]; first: number }> {
  input.setEncoding('utf8');
  let rest = '';
  let line = 0;
  let bytes = 0;
  try {
    for await (const chunk of input as AsyncIterable<string>) {
      bytes += chunk.length;
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() as string;
      yield { lines, first: line + 1 };
      line += lines.length;
      progress?.(line, bytes);
    }
  } catch (err) {
    if (err instanceof TrajgateError) throw err;
    throw new TrajgateError(
      'E_INPUT_READ',
      `${name}:${line + 1}: ${osMessage(err, { op: 'read', path: name })}`,
    );
  }
  if (rest !== '') yield { lines: [rest], first: line + 1 };
}

/** The config for offline commands: a file or the embedded default, with an optional workspace. */
export function configFrom(file: string | undefined, workspace: string | undefined): Config {
  const config = loadOperatorConfig(file);
  if (workspace === undefined) return config;
  const abs = resolve(workspace);
  return { ...config, workspace: physicalPath(abs, '/') ?? abs };
}
