import { execFile } from 'node:child_process';

export interface CurlResult {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly exitCode: number;
  readonly stderr: string;
}

/**
 * Runs the real curl asynchronously (the gateway under test runs in this process, so a
 * blocking spawn would deadlock it). Returns the final status, headers and body.
 */
export function curl(args: string[], timeoutMs = 60_000): Promise<CurlResult> {
  return new Promise((resolve) => {
    execFile(
      'curl',
      ['-sS', '-i', '--noproxy', '', '--max-time', String(timeoutMs / 1000), ...args],
      { encoding: 'utf8', timeout: timeoutMs + 2_000 },
      (err, stdout, stderr) => {
        const exitCode = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        // With -i and a proxy tunnel, curl prints the CONNECT response first: keep the last head.
        const parts = stdout.split(/\r\n\r\n/);
        let i = 0;
        while (
          i + 1 < parts.length &&
          /^HTTP\/[\d.]+ (1\d\d|200 Connection established)/i.test(parts[i] as string)
        )
          i++;
        const head = parts[i] ?? '';
        const body = parts.slice(i + 1).join('\r\n\r\n');
        const [statusLine = '', ...lines] = head.split('\r\n');
        const headers: Record<string, string> = {};
        for (const line of lines) {
          const colon = line.indexOf(':');
          if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
        }
        const status = Number(/^HTTP\/[\d.]+ (\d{3})/.exec(statusLine)?.[1] ?? 0);
        resolve({ status, headers, body, exitCode, stderr });
      },
    );
  });
}
