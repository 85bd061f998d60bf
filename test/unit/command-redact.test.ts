import { describe, expect, it } from 'vitest';
import { redactCommand } from '../../src/event/command-line.js';
import { redactUserinfo, secretName } from '../../src/event/secrets.js';
import { shellWords } from '../../src/event/shell-words.js';

/**
 * Secrets in a command line are redacted by the rules that redact captured
 * headers, whatever quoting, case or spelling hides them; what only names a secret stays.
 */
const R = '[redacted]';
const SECRET = 'hunter2-s3cr3t';

describe('redactCommand: secrets go', () => {
  it.each([
    // Credential headers, however the header argument is spelt.
    [
      `curl -H 'Authorization: Bearer ${SECRET}' https://x`,
      `curl -H 'Authorization: ${R}' https://x`,
    ],
    [`curl -H "authorization:Basic ${SECRET}" x`, `curl -H "authorization:${R}" x`],
    [
      `curl --header='Proxy-Authorization: Basic ${SECRET}' x`,
      `curl --header='Proxy-Authorization: ${R}' x`,
    ],
    [`curl --header "COOKIE: sid=${SECRET}" x`, `curl --header "COOKIE: ${R}" x`],
    [`curl -H Cookie:\\ sid=${SECRET} x`, `curl -H Cookie:\\ ${R} x`],
    [`curl -HAuthorization:${SECRET} x`, `curl -HAuthorization:${R} x`],
    [`curl -H 'Set-Cookie: a=${SECRET}; Path=/' x`, `curl -H 'Set-Cookie: ${R}' x`],
    [
      `curl -H 'X-Api-Key: ${SECRET}' -H 'PRIVATE-TOKEN: ${SECRET}' x`,
      `curl -H 'X-Api-Key: ${R}' -H 'PRIVATE-TOKEN: ${R}' x`,
    ],
    [
      `curl -H 'Accept: */*' -H 'Authorization: token ${SECRET}' -H 'Authorization: token ${SECRET}'`,
      `curl -H 'Accept: */*' -H 'Authorization: ${R}' -H 'Authorization: ${R}'`,
    ],
    // Quotes that split a word, escapes, ANSI-C quoting: read as the shell reads them.
    [`curl -H Auth"oriz"ation:'Bearer ${SECRET}' x`, `curl -H Auth"oriz"ation:'${R}' x`],
    [`curl -H 'Authorization: Bearer ${SECRET}'tail x`, `curl -H 'Authorization: ${R}' x`],
    [`curl -H "Authorization: Bearer "${SECRET} x`, `curl -H "Authorization: ${R}" x`],
    [`curl -H $'Authorization: Bearer ${SECRET}\\'s' x`, `curl -H $'Authorization: ${R}' x`],
    [`curl -H $'\\x41uthorization: Bearer ${SECRET}' x`, `curl -H $'\\x41uthorization: ${R}' x`],
    // Bearer anywhere; userinfo in URLs, encoded or not.
    [`echo "Bearer ${SECRET}" | tee f`, `echo "Bearer ${R}" | tee f`],
    [`git clone https://u:${SECRET}@github.com/o/r`, `git clone https://u:${R}@github.com/o/r`],
    [`git clone https://ghp_${SECRET}@github.com/o/r`, `git clone https://${R}@github.com/o/r`],
    [`curl 'https://u:p%40${SECRET}@h/x'`, `curl 'https://${'u:'}${R}@h/x'`],
    [
      `curl 'https://h/?next=https%3A%2F%2Fu%3A${SECRET}%40evil'`,
      `curl 'https://h/?next=https%3A%2F%2Fu%3A${R}%40evil'`,
    ],
    [`curl https://u:${SECRET}@h@other/`, `curl https://u:${R}@other/`],
    // -u / --user / -U user:password, attached, clustered, with =.
    [`curl -u bob:${SECRET} x`, `curl -u bob:${R} x`],
    [`curl -ubob:${SECRET} x`, `curl -ubob:${R} x`],
    [`curl -su "bob:${SECRET}" x`, `curl -su "bob:${R}" x`],
    [`curl --user=bob:${SECRET} x`, `curl --user=bob:${R} x`],
    [
      `curl --user bob:${SECRET} --proxy-user p:${SECRET} x`,
      `curl --user bob:${R} --proxy-user p:${R} x`,
    ],
    [`curl -U p:${SECRET} x`, `curl -U p:${R} x`],
    // Names that say secret, as assignments, flags, query parameters, JSON fields.
    [`TOKEN=${SECRET} npm publish`, `TOKEN=${R} npm publish`],
    [`export GITHUB_TOKEN='${SECRET}'`, `export GITHUB_TOKEN='${R}'`],
    [
      `API_KEY=${SECRET} AWS_SECRET_ACCESS_KEY=${SECRET} ./run`,
      `API_KEY=${R} AWS_SECRET_ACCESS_KEY=${R} ./run`,
    ],
    [`T"OK"EN=${SECRET} x`, `T"OK"EN=${R} x`],
    [`mysql --password ${SECRET} db`, `mysql --password ${R} db`],
    [`mysql --password=${SECRET} --password=${SECRET}`, `mysql --password=${R} --password=${R}`],
    [`gh auth login --token=${SECRET}`, `gh auth login --token=${R}`],
    [`tool --PASSWORD "${SECRET} with spaces" next`, `tool --PASSWORD "${R}" next`],
    [`tool -secret ${SECRET}`, `tool -secret ${R}`],
    [`openssl enc -pass pass:${SECRET}`, `openssl enc -pass ${R}`],
    [`curl --oauth2-bearer ${SECRET} x`, `curl --oauth2-bearer ${R} x`],
    [
      `docker run -e DB_PASSWORD=${SECRET} --env=SESSION_SECRET=${SECRET} img`,
      `docker run -e DB_PASSWORD=${R} --env=SESSION_SECRET=${R} img`,
    ],
    [
      `curl 'https://h/v1?user=me&api_key=${SECRET}&x=1'`,
      `curl 'https://h/v1?user=me&api_key=${R}&x=1'`,
    ],
    [
      `curl -d '{"user":"me","password":"${SECRET}"}' x`,
      `curl -d '{"user":"me","password":"${R}"}' x`,
    ],
    [
      `npm config set //r.example/:_authToken=${SECRET}`,
      `npm config set //r.example/:_authToken=${R}`,
    ],
    [`printf 'password: ${SECRET}\\n' > cfg`, `printf 'password: ${R}' > cfg`],
    [`cat <<EOF > .env\nA=1\nSECRET=${SECRET}\nEOF`, `cat <<EOF > .env\nA=1\nSECRET=${R}\nEOF`],
    [`run # TOKEN=${SECRET}`, `run # TOKEN=${R}`],
    // A `$` in single quotes is a literal, maybe a password: no variable.
    [`export PASSWORD='$ecretP4ss' x`, `export PASSWORD='${R}' x`],
    [`curl -H 'Authorization: Bearer $ecret' x`, `curl -H 'Authorization: ${R}' x`],
    // Names longer than any bound on a scan.
    [`${'A'.repeat(80)}_TOKEN=${SECRET} x`, `${'A'.repeat(80)}_TOKEN=${R} x`],
    [`tool --${'a'.repeat(80)}-password ${SECRET}`, `tool --${'a'.repeat(80)}-password ${R}`],
    [
      `curl -H ${'X'.repeat(80)}-Authorization:${SECRET}`,
      `curl -H ${'X'.repeat(80)}-Authorization:${R}`,
    ],
    [`x ${'a'.repeat(80)}https://u:${SECRET}@h`, `x ${'a'.repeat(80)}https://u:${R}@h`],
    [
      `curl -d '{"${'a'.repeat(80)}_secret": "${SECRET}"}'`,
      `curl -d '{"${'a'.repeat(80)}_secret": "${R}"}'`,
    ],
  ])('%s', (line, redacted) => {
    expect(redactCommand(line)).toBe(redacted);
    expect(redactCommand(line)).not.toContain(SECRET);
    // Redacting again changes nothing.
    expect(redactCommand(redacted)).toBe(redacted);
  });
});

describe('redactCommand: what shows no secret stays', () => {
  it.each([
    'npm test',
    'grep token file.txt',
    'grep -ri "password" src/',
    'echo $TOKEN',
    'curl -H "Authorization: Bearer $TOKEN" https://api.example.com/',
    'curl -H "Authorization: Bearer ${GH_TOKEN}" -u "$USER:$PASS" x',
    'TOKEN=$TOKEN ./deploy',
    'cat ~/.npmrc | grep -c _authToken=',
    'git push -u origin main',
    'sort -u names.txt',
    'ls -la && git status',
    'docker login --password-stdin -u bob registry.example.com',
    'kubectl --token-file=/var/run/token get pods',
    'llm --max-tokens 100 "hello"',
    'ssh -p 2222 git@github.com',
    'curl https://example.com/a:b@c',
    'node -e "console.log(process.env.API_KEY ? 1 : 0)"',
    `printf 'it'"'"'s fine'`,
  ])('%s', (line) => {
    expect(redactCommand(line)).toBe(line);
  });

  it('a long line of names and separators is read in linear time', () => {
    // 170 KB: about 0.3 s on a loaded machine; a scan from each character to the end of its
    // word (an unbounded pattern) took 12 s on the 100 KB word alone.
    const line = `${'token=&'.repeat(5_000)} ${'a-'.repeat(50_000)}: x ${'"k":'.repeat(5_000)}`;
    const start = performance.now();
    redactCommand(line);
    expect(performance.now() - start).toBeLessThan(3_000);
  });
});

describe('the rules shared with captures', () => {
  it.each([
    ['http://u:p@h/x', `http://u:${R}@h/x`],
    ['http://token@h/', `http://${R}@h/`],
    ['http://h/x?u=a@b', 'http://h/x?u=a@b'],
    ['http://u:@h/', 'http://u:@h/'],
  ])('redactUserinfo(%s)', (url, redacted) => {
    expect(redactUserinfo(url)).toBe(redacted);
  });

  it.each([
    ['TOKEN', true],
    ['github_token', true],
    ['apiKey', true],
    ['X-Auth-Token', true],
    ['Proxy-Authorization', true],
    ['client_secret', true],
    ['DB_PASSWORD', true],
    ['passwd', true],
    ['key', true],
    ['TOKEN_FILE', false],
    ['password-stdin', false],
    ['tokens', false],
    ['keyboard', false],
    ['PWD', false],
    ['user', false],
  ])('secretName(%s) is %s', (name, secret) => {
    expect(secretName(name)).toBe(secret);
  });

  it('shell words: quotes removed, each character placed where it was written', () => {
    const words = shellWords(`a'b c'"d\\"e"\\ f`);
    expect(words.tokens.map((t) => t?.text)).toEqual(['ab cd"e f']);
    expect([...words.from.slice(0, 3)]).toEqual([0, 2, 3]);
    expect([...words.quote.slice(0, 6)]).toEqual([0, 1, 1, 1, 2, 2]);
    expect(shellWords('a; b').tokens.map((t) => t?.text ?? null)).toEqual(['a', null, 'b']);
  });
});
