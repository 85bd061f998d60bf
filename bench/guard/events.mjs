// Deterministic synthetic trajectories: a mix of allowlisted and unapproved network calls,
// reads, writes and commands inside the workspace, and a few escapes, over many sessions.
export const ALLOW = ['pkg.example.com', '*.example.org:443', 'GET https://api.example.com/v1/'];

export function* syntheticEvents(count, workspace, sessions = 1000) {
  let x = 0x9e3779b9;
  const rand = () => ((x = (x * 1103515245 + 12345) >>> 0) >>> 8) / (1 << 24);
  for (let i = 0; i < count; i++) {
    const session = `agent-${Math.floor(rand() * sessions)}`;
    const r = rand();
    if (r < 0.3)
      yield { session, kind: 'network', target: `https://pkg.example.com/simple/p${i % 500}/` };
    else if (r < 0.4) yield { session, kind: 'network', target: `cdn${i % 7}.example.org:443` };
    else if (r < 0.45) yield { session, kind: 'network', target: `https://evil${i % 13}.test/x` };
    else if (r < 0.65) yield { session, kind: 'write', target: `${workspace}/src/f${i % 100}.ts` };
    else if (r < 0.75) yield { session, kind: 'command', target: workspace };
    else if (r < 0.99) yield { session, kind: 'read', target: `src/f${i % 100}.ts` };
    else yield { session, kind: 'write', target: `${workspace}/../outside/f${i % 10}` };
  }
}
