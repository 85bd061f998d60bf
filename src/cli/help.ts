/** One command's help: what `trajgate COMMAND --help` prints and usage errors quote. */
interface CommandHelp {
  /** Usage lines without the leading `usage: `. */
  readonly usage: readonly string[];
  readonly about: string;
  /** `[flags, one-line description]`. */
  readonly options: readonly (readonly [string, string])[];
  readonly example: string;
}

/** Options every operator command takes (they are clients of the admin API). */
const OPERATOR_OPTIONS = [
  ['--admin URL', 'the admin API (default: http://listen.admin of the config)'],
  ['--config FILE', "the gateway's config: admin address and token file (default: embedded)"],
  ['--json', "print the API's JSON answer instead of a table or line"],
] as const;

const COMMANDS: Record<string, CommandHelp> = {
  start: {
    usage: ['trajgate start [--config FILE]'],
    about:
      'Runs the gateway (the embedded default config without --config) and prints where each listener is. On SIGTERM or SIGINT it drains: exit 0, or 3 when something was cut at limits.drainTimeout. SIGHUP re-reads the config.',
    options: [['--config FILE', 'the YAML config (see config/trajgate.example.yaml)']],
    example: 'trajgate start --config config/trajgate.example.yaml',
  },
  replay: {
    usage: [
      'trajgate replay FILE.jsonl|- [--config FILE] [--workspace DIR] [--json] [--hook claude-code]',
    ],
    about:
      'Judges recorded events (or a journal: its rotated files first, oldest first) offline, one verdict per line; `-` reads standard input. Stops at the first bad line (exit 1).',
    options: [
      ['--config FILE', 'the policy to judge with (default: embedded)'],
      ['--workspace DIR', "the workspace, overriding the config's"],
      ['--json', 'one JSON decision per line instead of the verdict'],
      [
        '--hook claude-code',
        'the lines are Claude Code hook inputs: each PreToolUse mapped as `check --hook claude-code` maps it (bridge.name of the config for mcp__ calls) and judged, one verdict per tool call; PostToolUse and PostToolUseFailure applied as results (a failure for trajectory rules); other hook events passed over',
      ],
    ],
    example: 'trajgate replay seed.jsonl --workspace /tmp/agent-demo',
  },
  'check-config': {
    usage: ['trajgate check-config FILE'],
    about:
      'Validates a config as `start` would: prints `ok` and a summary, or every error with its file:line:col and key path (exit 1).',
    options: [],
    example: 'trajgate check-config config/trajgate.example.yaml',
  },
  check: {
    usage: [
      'trajgate check (--kind K --target T | --hook claude-code) [--bridge URL] [--config FILE] [--timeout 50s]',
    ],
    about:
      'Asks the gateway (POST /events on its bridge) whether an action may happen, for runner hooks. Exit 0: go ahead. Exit 2: refused, the reason on stderr. Every failure exits 2 with a one-line reason: the gateway unreachable or answering anything but a well-formed ALLOW, unreadable hook input, a bad config, no answer in time. Nothing exits 1 (which hooks read as "go ahead"). The agent\'s bearer token comes from $TRAJGATE_AGENT_TOKEN.',
    options: [
      [
        '--kind K --target T',
        'the action as an event (read, write, command, network, internal, …)',
      ],
      [
        '--hook claude-code',
        'a Claude Code hook input (JSON) on stdin: PreToolUse is judged; PostToolUse and PostToolUseFailure record how the call ended (exit 0 once recorded); other hook events exit 0 with nothing judged',
      ],
      ['--bridge URL', 'the bridge (default: $TRAJGATE_BRIDGE, else listen.bridge of the config)'],
      ['--config FILE', "the gateway's config (default: the embedded one)"],
      [
        '--timeout DURATION',
        'how long to wait in all, a held request included (default 50s, below the 60 s hook timeout of common runners); then exit 2',
      ],
    ],
    example: 'trajgate check --kind command --target /srv/agents/agent-1/build.sh',
  },
  ca: {
    usage: ['trajgate ca init|show [--dir certs] [--config FILE] [--force]'],
    about: 'The local CA for TLS interception (tls.intercept).',
    options: [
      ['init', 'create the CA: ca.pem and ca-key.pem (mode 0600: keep it secret)'],
      ['show', 'its path and fingerprint, and how Node.js, npm, pip, git and curl trust it'],
      [
        '--dir DIR',
        "the CA folder (default: tls.ca of the config, else certs/ in the journal's folder)",
      ],
      ['--config FILE', 'read tls.ca from this config'],
      ['--force', 'init: replace an existing CA'],
    ],
    example: 'trajgate ca init --config config/trajgate.example.yaml',
  },
  export: {
    usage: ['trajgate export --session ID --har FILE [--since TIME] [--config FILE]'],
    about:
      "Writes a session's HTTP exchanges from the journal (and captures) as a HAR 1.2 file; an unknown session exits 1.",
    options: [
      ['--session ID', 'the session'],
      ['--har FILE', 'where to write the HAR'],
      ['--since TIME', 'only exchanges from this ISO 8601 time on'],
      ['--config FILE', 'where the journal is (default: embedded, ./data/journal.jsonl)'],
    ],
    example: 'trajgate export --session agent-1 --har agent-1.har',
  },
  verify: {
    usage: ['trajgate verify [FILE…] [--config FILE]'],
    about:
      "Checks the journal's hash chain: every line's prev must be the SHA-256 of the line before it (64 zeros for a journal's first line; a later FILE continues the one before it, a rotated file's snapshot the file before it). Without FILE: the configured journal, its rotated files oldest first, then the live one. Prints `ok: N records, chain intact`, or exits 1 naming the first line that does not follow (edited, removed, inserted, a rotated file missing, cut short, or written without prev). A torn last line (a crash cut the last write short) is a warning, exit 0. Changes nothing.",
    options: [
      ['FILE…', 'journal files, oldest first (default: the configured journal, all its files)'],
      ['--config FILE', 'where the journal is (default: embedded, ./data/journal.jsonl)'],
    ],
    example: 'trajgate verify --config config/trajgate.example.yaml',
  },
  state: {
    usage: ['trajgate state rebuild --from JOURNAL… --config FILE [--force]'],
    about:
      "Fills the shared state store (state.store: redis) from the gateways' journals, merged by time: every session's counts, pause, marks and recent events, and the operators' approvals and deny patterns. The recovery when Redis came back empty: until then gateways refuse decisions (503). Refuses a store that is not empty unless --force.",
    options: [
      ['--from JOURNAL…', "each gateway's journal (its rotated files are read too)"],
      ['--config FILE', 'the config naming the store (state.redis) and the policy'],
      ['--force', 'write over a store that is not empty'],
    ],
    example:
      'trajgate state rebuild --from /data/a/journal.jsonl /data/b/journal.jsonl --config trajgate.yaml',
  },
  learn: {
    usage: ['trajgate learn --from JOURNAL… [--agent ID] [--json]'],
    about:
      "Proposes the least-privilege allow entries that would have admitted every network request the journals show allowed or approved (allowlist, approvals, approve-once) and none they show refused (denied, deny patterns, REVIEW or PAUSE never approved): METHOD scheme://host/path-prefix where the request was visible, host:port for a blind tunnel. Prints a YAML patch for the config (network.allow, or with --agent that agent's allow), each entry with its count and the first and last time seen, and the requests no entry can admit without a refused one. Reads the journals (rotated files too) and changes nothing.",
    options: [
      ['--from JOURNAL…', 'the journals (their rotated files are read too)'],
      ['--agent ID', "only this agent's session: entries for agents[].allow"],
      ['--json', 'the proposal as JSON'],
    ],
    example: 'trajgate learn --from /data/journal.jsonl --agent agent-1 > patch.yaml',
  },
  env: {
    usage: [
      'trajgate env [AGENT] [--config FILE] [--host NAME] [--format shell|compose|json] [--ca-path PATH]',
    ],
    about:
      "Prints every variable a client needs to go through this gateway as AGENT (required when agents are configured): HTTP_PROXY, HTTPS_PROXY, NO_PROXY in both cases (the proxy URL with AGENT's credentials; NO_PROXY only the bridge's host), with tls.intercept the CA for Node.js (NODE_EXTRA_CA_CERTS) and, pointing at ca-bundle.pem beside it (the system's roots plus the CA, written there if missing), SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, GIT_SSL_CAINFO, PIP_CERT, npm_config_cafile, GRPC_DEFAULT_SSL_ROOTS_FILE_PATH; JAVA_TOOL_OPTIONS (proxy host and port only: a JVM program answers the proxy's 407 with an Authenticator); GIT_SSH_COMMAND (ssh through `trajgate connect`, for git over SSH); TRAJGATE_BRIDGE and TRAJGATE_AGENT_TOKEN for `trajgate check`; the sentinel of each credential given to AGENT in its `env` variable (GITHUB_TOKEN=tgs_…, never the value; a generated one needs the key a start made beside the journal). Only AGENT's token need be set: unset, it is printed as its ${VAR} for the shell or compose to fill in (said on stderr).",
    options: [
      ['--config FILE', "the gateway's config (default: embedded)"],
      [
        '--host NAME',
        'the host agents reach the gateway at (a compose service name, a VM address) instead of the listen address; needed when that is 0.0.0.0 or ::',
      ],
      [
        '--format F',
        'shell (default: `export NAME=...` for eval), compose (an environment: mapping) or json',
      ],
      ['--json', 'the same as --format json'],
      [
        '--ca-path PATH',
        'where the agent sees the CA certificate (mount ca.pem and ca-bundle.pem there, never ca-key.pem); the bundle is expected beside it',
      ],
    ],
    example:
      'trajgate env agent-1 --config trajgate.yaml   (in sh: eval "$(trajgate env agent-1 --config trajgate.yaml)")',
  },
  doctor: {
    usage: ['trajgate doctor [--config FILE] [--agent ID] [--json]'],
    about:
      "A live self-test of the running gateway and this machine, one line per check (`ok   name: detail` or `FAIL name: why and what to do`), exit 1 if any fails: an unlisted loopback host and the admin listener are refused through the proxy; with tls.intercept, curl, git, Node and Python verify the gateway's certificate for an intercepted name with the variables `trajgate env` prints (a CONNECT and a handshake; nothing is sent on); the journal is writable and its chain verifies; the store answers; the gateway's and Redis's clocks agree with this one; the open-files limit covers limits.maxConnections; trajgate's data lies outside every workspace. Needs the admin token (as the operator commands do). Its probes go as a session of its own (from 127.84.71.68 without agents, else the agent `doctor`) whose counts it resets after each (docs/doctor.md).",
    options: [
      ['--config FILE', "the gateway's config (default: embedded)"],
      ['--agent ID', 'the agent the probes go as (default: doctor); its counts are reset'],
      ['--json', 'an array of {check, ok, detail}'],
    ],
    example: 'trajgate doctor --config trajgate.yaml',
  },
  connect: {
    usage: ['trajgate connect HOST PORT'],
    about:
      "Relays standard input and output over a CONNECT to HOST:PORT through the proxy that https_proxy (or HTTPS_PROXY) names, with its credentials: what `trajgate env AGENT` prints. For ssh's ProxyCommand (git over SSH: GIT_SSH_COMMAND, which `trajgate env` prints). The tunnel is judged as any CONNECT; a refusal exits 1 with the gateway's reason on stderr, which ssh shows. An end of input passes on as a half-close.",
    options: [
      ['HOST', 'a host name or an IP address'],
      ['PORT', '1-65535'],
    ],
    example:
      'GIT_SSH_COMMAND=\'ssh -o ProxyCommand="trajgate connect %h %p"\' git clone ssh://git@git.example.com/repo.git',
  },
  sessions: {
    usage: ['trajgate sessions [--json]'],
    about: 'Lists sessions: state (active, flagged, paused), counts, held requests.',
    options: OPERATOR_OPTIONS,
    example: 'trajgate sessions --config config/trajgate.example.yaml',
  },
  events: {
    usage: ['trajgate events SESSION [--limit N] [--before SEQ] [--json]'],
    about: "A session's latest events, newest first, with their verdicts and reasons.",
    options: [
      ['--limit N', 'how many (default 100)'],
      ['--before SEQ', 'the page before this journal seq'],
      ...OPERATOR_OPTIONS,
    ],
    example: 'trajgate events agent-1 --limit 20',
  },
  approve: {
    usage: [
      'trajgate approve SESSION PATTERN [--ttl 1h] [--kind network] [--json]',
      'trajgate approve --global PATTERN [--ttl 1h] [--kind network] [--json]',
      'trajgate approve --from SEQ [--ttl 1h] [--json]',
      'trajgate approve SESSION --once [RID…] [--json]',
    ],
    about:
      "Approves a pattern for a session (or every session with --global); its events no longer count. --from takes the session and a pattern fitted to a refused event (its method and path prefix). Prints the approval's id (for revoke). --once approves no pattern: it forwards the held requests named by RID (request id, as `trajgate approve SESSION --once` lists them) as approved, this once; the session stays paused and every other held request stays held (resume judges them again, deny answers them 403). Without RID it approves the one held request, and when several are held lists them (rid, method and target, body size) and exits 2.",
    options: [
      ['--once [RID…]', 'forward these held requests once; the session stays paused (see above)'],
      ['--global', 'approve for every session'],
      ['--from SEQ', 'the session and pattern from the event with this journal seq'],
      ['--ttl DURATION', 'expires after this long (30m, 1h, 7d; default: never)'],
      ['--kind K', 'network (default) or another kind, with a target glob as PATTERN'],
      ...OPERATOR_OPTIONS,
    ],
    example: "trajgate approve agent-1 'GET https://registry.npmjs.org/'",
  },
  revoke: {
    usage: ['trajgate revoke ID [--json]'],
    about:
      'Revokes an operator approval (a…) or deny pattern (d…) by id; tunnels it admitted close. Config entries cannot be revoked: edit the config.',
    options: OPERATOR_OPTIONS,
    example: 'trajgate revoke a42',
  },
  'deny-pattern': {
    usage: ['trajgate deny-pattern PATTERN [--session ID] [--json]'],
    about:
      'Adds a deny pattern, for one session or (without --session) every session: matching requests are refused whatever allows or approves them. Prints its id (for revoke). `trajgate block`, its old name, works until the next minor version.',
    options: [['--session ID', 'only this session'], ...OPERATOR_OPTIONS],
    example: "trajgate deny-pattern 'POST https://api.example.com/' --session agent-1",
  },
  resume: {
    usage: ['trajgate resume SESSION [--reset] [--keep-marks] [--json]'],
    about:
      'Resumes a paused session: its held requests are judged again. Its trajectory marks (earlier events policy.sequences rules remember) are cleared unless --keep-marks. --reset also zeroes its counts (on an active session too).',
    options: [
      ['--reset', "zero the session's counts"],
      ['--keep-marks', "keep the session's trajectory marks (a later event may pause again)"],
      ...OPERATOR_OPTIONS,
    ],
    example: 'trajgate resume agent-1 --reset',
  },
  deny: {
    usage: ['trajgate deny SESSION [--json]'],
    about: "Refuses a paused session's held requests (403); the session stays paused.",
    options: OPERATOR_OPTIONS,
    example: 'trajgate deny agent-1',
  },
  topup: {
    usage: ['trajgate topup SESSION BUDGET [+N] [--json]'],
    about:
      "Raises the session's limit of a budget (policy.budgets) by N in its current window; without N by the budget's own limit. N takes a byte unit for a bytesUp budget (+10MB). A session the budget paused resumes, its held requests judged again: one still past a budget pauses it again.",
    options: OPERATOR_OPTIONS,
    example: 'trajgate topup agent-1 calls +100',
  },
  credentials: {
    usage: [
      'trajgate credentials [--json]',
      'trajgate credentials revoke NAME [--json]',
      'trajgate credentials restore NAME [--json]',
    ],
    about:
      "Lists the running gateway's credentials: name, hosts, the variable `trajgate env` exports the sentinel in, the sentinel (never the value), who it is given to, revoked or not. `revoke` refuses it at once: a request carrying its sentinel to its hosts is refused (the sentinel is not swapped), every open flow that carried it closes; `restore` undoes it. Both are journaled before they take effect and kept across restarts; a reload does not undo a revoke.",
    options: OPERATOR_OPTIONS,
    example: 'trajgate credentials revoke github',
  },
  tools: {
    usage: [
      'trajgate tools [SERVER] [--json]',
      'trajgate tools approve SERVER [--digest D] [--json]',
    ],
    about:
      'Lists the tool lists pinned per MCP server (`bridge.name`, default `bridge`): digest, when and by whom pinned (`first-use`: the first list it sent), how many tools, how many lists it sent since that differ. With SERVER: each pinned tool (name, digest, the first line of its description) and each pending list with what changed. A session shown a pending list pauses at its next event (`PAUSE: tool-changed`); `approve` pins the pending list (without --digest: the only one) for every session and resumes the sessions it paused.',
    options: [
      ['--digest D', 'the pending list to pin (as `trajgate tools SERVER` lists it)'],
      ...OPERATOR_OPTIONS,
    ],
    example: 'trajgate tools approve bridge',
  },
  reload: {
    usage: ['trajgate reload [--json]'],
    about:
      'Makes the running gateway re-read its config file (as SIGHUP does). An invalid file is refused with its errors and the running config kept; changed listen addresses need a restart.',
    options: OPERATOR_OPTIONS,
    example: 'trajgate reload --config config/trajgate.example.yaml',
  },
  help: {
    usage: ['trajgate help [COMMAND]'],
    about: 'Lists the commands, or explains one (as `trajgate COMMAND --help` does).',
    options: [],
    example: 'trajgate help approve',
  },
};

/** The commands, in the order `trajgate help` lists them. */
export const COMMAND_NAMES: readonly string[] = Object.keys(COMMANDS);

/** The first usage line of a command (for messages that name it). */
export function usageLine(command: string): string {
  return (COMMANDS[command] as CommandHelp).usage[0] as string;
}

/** `usage: …` for a usage error of `command`, or the overview for an unknown one. */
export function usageOf(command: string | undefined): string {
  const help = command === undefined ? undefined : COMMANDS[command];
  if (!help) return overview();
  return `usage: ${help.usage.join('\n       ')}\n(trajgate ${command} --help for more)`;
}

/** Every command's usage, for `trajgate help` and a missing or unknown command. */
export function overview(): string {
  const lines = COMMAND_NAMES.filter((c) => c !== 'help').flatMap((c) =>
    (COMMANDS[c] as CommandHelp).usage.map((u) => `  ${u}`),
  );
  return [
    'usage:',
    ...lines,
    '  (operator commands take --admin URL and --config FILE; the token comes from',
    '   TRAJGATE_ADMIN_TOKEN or the data folder)',
    '',
    'trajgate help COMMAND or trajgate COMMAND --help explains one; trajgate --version.',
  ].join('\n');
}

/** `trajgate COMMAND --help`; undefined for an unknown command. */
export function helpText(command: string): string | undefined {
  const help = COMMANDS[command];
  if (!help) return undefined;
  const width = Math.max(0, ...help.options.map(([flags]) => flags.length)) + 2;
  const lines = [`usage: ${help.usage.join('\n       ')}`, '', ...wrap(help.about, 0)];
  if (help.options.length > 0) {
    lines.push('', 'options:');
    for (const [flags, text] of help.options) {
      const [first = '', ...more] = wrap(text, width + 2, 96);
      lines.push(`  ${flags.padEnd(width)}${first.trimStart()}`, ...more);
    }
  }
  lines.push('', 'example:', `  ${help.example}`);
  return lines.join('\n');
}

/** Wraps text at `max` columns, continuation lines indented by `indent`. */
function wrap(text: string, indent: number, max = 96): string[] {
  const lines: string[] = [];
  let line = ' '.repeat(indent);
  for (const word of text.split(' ')) {
    if (line.trim() !== '' && line.length + 1 + word.length > max) {
      lines.push(line);
      line = ' '.repeat(indent);
    }
    line += (line.trim() === '' ? '' : ' ') + word;
  }
  lines.push(line);
  return lines;
}
