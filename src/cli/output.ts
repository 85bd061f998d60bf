import type { Writable } from 'node:stream';

/** Buffered line output with backpressure, plus an optional progress reporter. */
export interface Output {
  /** Queues a line; call `flush` now and then (it waits for a slow reader). */
  write(line: string): void;
  flush(): Promise<void>;
  readonly progress: ((lines: number, bytes: number) => void) | null;
}

export function bufferedOutput(stdout: Writable, stderr: Writable & { isTTY?: boolean }): Output {
  let buf = '';
  let lastReport = 0;
  return {
    write(line) {
      buf += line + '\n';
    },
    async flush() {
      if (buf === '') return;
      const chunk = buf;
      buf = '';
      if (!stdout.write(chunk)) await new Promise<void>((r) => stdout.once('drain', () => r()));
    },
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
