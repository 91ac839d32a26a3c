/**
 * The docs check. A new user follows README.md and docs/getting-started.md
 * and nothing else, so:
 *
 * - every relative link in README.md and docs/*.md resolves: the file exists,
 *   and a `#anchor` names a heading of that file (GitHub's slugs);
 * - every flag casket reads (src/config.ts) is in docs/reference.md;
 * - every shell block of README.md and docs/getting-started.md runs, in
 *   order, in one bash, against the casket the guide starts — and what the
 *   guide promises is seen: an S3 client connected, a 412 for the second of
 *   two writers, an MCP client connected.
 *
 * Blocks are marked by their info string: ```sh runs; ```sh server is
 * casket itself, started in the background (the guide tells the reader to
 * start it in a terminal of its own) and awaited until ready; ```sh no-run is
 * shown but not run here (npm ci and npm test: CI has just run them; a
 * reader's placeholder such as <printed key>). Any other shell marker fails,
 * so a block cannot drop out of the check by a typo. The guide's
 * 127.0.0.1:9000 becomes a free port, and the data dir a temporary one, so
 * the check runs beside other caskets.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPTIONS } from '../../src/config.js';
import { hasCommand, need } from '../helpers/tools.js';

const ROOT = resolve(import.meta.dirname, '../..');
const GUIDES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const RUNNABLE = ['README.md', 'docs/getting-started.md'];

interface Block {
  file: string;
  line: number;
  info: string;
  text: string;
}

/** Fenced blocks, and the text outside them (where links are read). */
function parse(file: string): { blocks: Block[]; prose: Array<{ line: number; text: string }> } {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const blocks: Block[] = [];
  const prose: Array<{ line: number; text: string }> = [];
  let open: Block | undefined;
  lines.forEach((text, i) => {
    const fence = /^\s*```(.*)$/.exec(text);
    if (fence && !open) open = { file, line: i + 1, info: fence[1]!.trim(), text: '' };
    else if (fence && open) {
      blocks.push(open);
      open = undefined;
    } else if (open) open.text += `${text}\n`;
    else prose.push({ line: i + 1, text });
  });
  return { blocks, prose };
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { text } of parse(file).prose) {
    const heading = /^#{1,6}\s+(.*)$/.exec(text);
    if (!heading) continue;
    const slug = heading[1]!.trim().toLowerCase().replace(/`/g, '').replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

function relativeLinks(file: string): Array<{ line: number; target: string }> {
  const links: Array<{ line: number; target: string }> = [];
  for (const { line, text } of parse(file).prose) {
    const unquoted = text.replace(/`[^`]*`/g, '');
    for (const m of unquoted.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1]!;
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) links.push({ line, target });
    }
  }
  return links;
}

export function brokenLinks(files: string[]): string[] {
  const broken: string[] = [];
  for (const file of files) {
    for (const { line, target } of relativeLinks(file)) {
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const to = path ? join(dirname(join(ROOT, file)), decodeURIComponent(path)) : join(ROOT, file);
      if (!existsSync(to)) broken.push(`${file}:${line}: ${target}: no such file`);
      else if (anchor !== undefined && to.endsWith('.md') && !anchors(to.slice(ROOT.length + 1)).has(anchor)) {
        broken.push(`${file}:${line}: ${target}: no heading #${anchor}`);
      }
    }
  }
  return broken;
}

describe('the docs', () => {
  it('README fits on a screen or five: at most 250 lines', () => {
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length).toBeLessThanOrEqual(250);
  });

  it("the README's test command is the one CI runs", () => {
    const setUp = parse('README.md').blocks.find((b) => b.info.startsWith('sh'))!;
    const command = /^(npm test)\b/m.exec(setUp.text)?.[1];
    expect(command).toBe('npm test');
    expect(readFileSync(join(ROOT, '.ci/run'), 'utf8')).toMatch(new RegExp(`^${command}$`, 'm'));
  });

  it('every relative link in README.md and docs/*.md resolves, file and #anchor', () => {
    expect(brokenLinks(GUIDES)).toEqual([]);
  });

  it('every flag casket reads is in docs/reference.md', () => {
    const reference = readFileSync(join(ROOT, 'docs/reference.md'), 'utf8');
    expect(OPTIONS.filter((o) => !reference.includes(`\`${o.flag}\``) || !reference.includes(o.env)).map((o) => o.flag)).toEqual([]);
  });

  it('operating.md names the bucket and key the upstream probe makes, as the source makes them', () => {
    const probe = readFileSync(join(ROOT, 'src/backends/s3/capabilities.ts'), 'utf8');
    const operating = readFileSync(join(ROOT, 'docs/operating.md'), 'utf8');
    const made = [...probe.matchAll(/`(\.?casket-probe[-/])\$\{/g)].map((m) => m[1]!);
    expect(made.sort()).toEqual(['.casket-probe/', 'casket-probe-']);
    for (const prefix of made) expect(operating, prefix).toContain(`\`${prefix}<`);
    expect(operating).toMatch(/## Upstream permissions[\s\S]*s3:CreateBucket[\s\S]*s3:DeleteBucket/);
  });

  it("every line of security.md's threat model names a test that exists", () => {
    const security = readFileSync(join(ROOT, 'docs/security.md'), 'utf8');
    const table = security.slice(security.indexOf('## Threat model'), security.indexOf('## How each way in holds'));
    const rows = table.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| asset') && !l.startsWith('|---'));
    expect(rows.length).toBeGreaterThan(30);
    const missing = rows.flatMap((row) => {
      const cell = row.split(' | ').at(-1)!.replace(/ \|$/, '');
      const m = /^`([^`]+\.test\.ts)` › (.+)$/.exec(cell);
      if (!m) return [`no test named: ${row}`];
      const file = join(ROOT, m[1]!);
      if (!existsSync(file)) return [`no such file: ${m[1]}`];
      // The name as the test file spells it (quotes in names are escaped there: compare without them).
      const plain = (t: string) => t.replace(/\\'/g, "'").replace(/[\u2018\u2019]/g, "'");
      return plain(readFileSync(file, 'utf8')).includes(plain(m[2]!)) ? [] : [`${m[1]} has no test named like: ${m[2]}`];
    });
    expect(missing).toEqual([]);
  });

  it('every shell block in README.md and getting-started is marked sh, sh server or sh no-run', () => {
    const shells = RUNNABLE.flatMap((f) => parse(f).blocks).filter((b) => /^(sh|bash|shell|console)\b/.test(b.info));
    expect(shells.filter((b) => !['sh', 'sh server', 'sh no-run'].includes(b.info)).map((b) => `${b.file}:${b.line}: ${b.info}`)).toEqual([]);
    expect(shells.filter((b) => b.info === 'sh server')).toHaveLength(1);
  });

  describe('following README.md and getting-started, command by command', () => {
    let dataDir = '';
    let server: ChildProcess | undefined;
    beforeAll(() => {
      dataDir = mkdtempSync(join(tmpdir(), 'casket-docs-'));
    });
    afterAll(() => {
      // npm start execs node in its own process group (detached): end that group, by its id.
      if (server?.pid) {
        try {
          process.kill(-server.pid, 'SIGTERM');
        } catch {}
      }
      rmSync(dataDir, { recursive: true, force: true });
    });

    it('connects an S3 client, sees a conflict (412) and connects an MCP client', async () => {
      if (!need('aws (the AWS CLI)', hasCommand('aws')) || !need('curl', hasCommand('curl'))) return;
      const port = await freePort();
      const local = (text: string) => text.replaceAll('127.0.0.1:9000', `127.0.0.1:${port}`);
      const blocks = RUNNABLE.flatMap((f) => parse(f).blocks);
      const env = { ...process.env, CASKET_LISTEN: `127.0.0.1:${port}`, CASKET_DATA_DIR: dataDir, AWS_CONFIG_FILE: join(dataDir, 'aws-config'), MCP_REMOTE_CONFIG_DIR: join(dataDir, 'mcp-auth') };

      const start = blocks.find((b) => b.info === 'sh server')!;
      server = spawn('bash', ['-c', local(start.text)], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      await new Promise<void>((ready, fail) => {
        let out = '';
        const timer = setTimeout(() => fail(new Error(`${start.file}:${start.line}: casket not ready in 60 s\n${out}`)), 60_000);
        server!.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('"casket is ready"')) {
            clearTimeout(timer);
            ready();
          }
        });
        server!.stderr!.on('data', (d: Buffer) => (out += d.toString()));
        server!.on('exit', (code) => fail(new Error(`${start.file}:${start.line}: exited ${code}\n${out}`)));
      });

      const script = blocks
        .filter((b) => b.info === 'sh')
        .map((b) => `echo '@@ ${b.file}:${b.line}'\n${local(b.text)}`)
        .join('\n');
      const run = spawnSync('bash', ['-euo', 'pipefail', '-c', script], { cwd: ROOT, env, encoding: 'utf8', timeout: 90_000 });
      const transcript = `${run.stdout}\n${run.stderr}`;
      expect(run.status, transcript).toBe(0);
      expect(transcript).toContain('make_bucket: notes');
      expect(transcript).toMatch(/^200$/m);
      expect(transcript).toMatch(/^412$/m);
      expect(transcript).toContain('<Code>PreconditionFailed</Code>');
      expect(transcript).toContain('Connected successfully');
    }, 150_000);
  });
});

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createServer();
    probe.once('error', fail);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => done(port));
    });
  });
}
