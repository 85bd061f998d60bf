import { resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { Config } from '../config/load.js';
import { defaultConfig, loadConfigFile } from '../config/load.js';
import { TrajgateError } from '../errors.js';
import { physicalPath } from '../event/paths.js';

/** Buffered line output with backpressure, plus an optional progress reporter. */
export interface Output {
  write(line: string): Promise<void>;
  flush(): Promise<void>;
  readonly progress: ((lines: number, bytes: number) => void) | null;
}

const FLUSH_AT = 1 << 16;

export function bufferedOutput(stdout: Writable, stderr: Writable & { isTTY?: boolean }): Output {
  let buf = '';
  let lastReport = 0;
  const flush = async (): Promise<void> => {
    if (buf === '') return;
    const chunk = buf;
    buf = '';
    if (!stdout.write(chunk)) await new Promise<void>((r) => stdout.once('drain', () => r()));
  };
  return {
    write(line) {
      buf += line + '\n';
      return buf.length >= FLUSH_AT ? flush() : Promise.resolve();
    },
    flush,
    progress: stderr.isTTY
      ? (lines, bytes) => {
          const now = Date.now();
          if (now - lastReport < 250) return;
          lastReport = now;
          stderr.write(`\r${lines.toLocaleString('en')} lines, ${(bytes / 1e6).toFixed(1)} MB`);
        }
      : null,
  };
}

/**
 * Lines of a stream with their 1-based numbers, in constant memory. A read error becomes
 * E_INPUT_READ naming the input.
 */
export async function* readLines(
  input: Readable,
  name: string,
  progress: ((lines: number, bytes: number) => void) | null,
): AsyncGenerator<{ text: string; line: number }> {
  input.setEncoding('utf8');
  let rest = '';
  let line = 0;
  let bytes = 0;
  try {
    for await (const chunk of input as AsyncIterable<string>) {
      bytes += chunk.length;
      let text = rest + chunk;
      let start = 0;
      for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
        yield { text: text.slice(start, nl), line: ++line };
        start = nl + 1;
      }
      rest = text.slice(start);
      text = '';
      progress?.(line, bytes);
    }
  } catch (err) {
    if (err instanceof TrajgateError) throw err;
    throw new TrajgateError(
      'E_INPUT_READ',
      `${name}: cannot read at line ${line + 1}: ${(err as Error).message}`,
    );
  }
  if (rest !== '') yield { text: rest, line: ++line };
}

/** The config for offline commands: a file or the embedded default, with an optional workspace. */
export function configFrom(file: string | undefined, workspace: string | undefined): Config {
  const config = file === undefined ? defaultConfig() : loadConfigFile(file);
  if (workspace === undefined) return config;
  const abs = resolve(workspace);
  return { ...config, workspace: physicalPath(abs, '/') ?? abs };
}
