import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { tempDir } from './tmp.js';

export interface GitServer {
  /** `http://127.0.0.1:PORT/repo.git`, a bare repository with one commit. */
  readonly repoUrl: string;
  readonly port: number;
  /** The text of README in its one commit. */
  readonly readme: string;
}

const GIT_ENV = { GIT_CONFIG_NOSYSTEM: '1', HOME: '/nonexistent', PATH: process.env.PATH };

/** `root/repo.git`: a bare repository whose one commit on main holds README = `readme`. */
export function oneCommitRepo(root: string, readme: string): void {
  const work = join(root, 'work');
  const git = (args: string[], cwd = root) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', ...args], {
      cwd,
      env: GIT_ENV,
    });
  git(['init', '-q', '--bare', '-b', 'main', 'repo.git']);
  git(['init', '-q', '-b', 'main', work]);
  writeFileSync(join(work, 'README'), readme);
  git(['add', 'README'], work);
  git(['commit', '-q', '-m', 'one'], work);
  git(['push', '-q', join(root, 'repo.git'), 'main'], work);
}

/**
 * A real git smart-HTTP server on loopback port 0: git's own `git http-backend` (CGI) behind
 * a node:http server, serving one bare repository with one commit (clone, ls-remote, fetch).
 */
export async function startGitServer(): Promise<GitServer> {
  const root = tempDir('trajgate-git-');
  const readme = 'served by git http-backend\n';
  oneCommitRepo(root, readme);

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://git');
    const cgi = spawn('git', ['http-backend'], {
      env: {
        ...GIT_ENV,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        REQUEST_METHOD: req.method ?? 'GET',
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
        GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
        REMOTE_ADDR: req.socket.remoteAddress ?? '',
      },
    });
    req.pipe(cgi.stdin);
    // CGI output: header lines, a blank line, the body (RFC 3875 § 6).
    let head = Buffer.alloc(0);
    let sent = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (sent) return void res.write(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) return;
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
        const [name = '', value = ''] = line.split(/:\s*(.*)/s);
        if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
        else headers[name] = value;
      }
      res.writeHead(status, headers);
      res.write(head.subarray(end + 4));
      sent = true;
    });
    cgi.on('close', () => (sent ? res.end() : res.writeHead(502).end('no CGI answer\n')));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  afterAll(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return { repoUrl: `http://127.0.0.1:${port}/repo.git`, port, readme };
}
