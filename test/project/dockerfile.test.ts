/**
 * The Dockerfile is for users (no Docker engine runs here; it was linted with
 * dockerfile-utils and its steps run by hand in a clean directory): two
 * stages, only production dependencies in the image, a non-root user, every
 * CASKET_* variable one casket reads, every file it copies present, and a
 * HEALTHCHECK whose command, run as written, passes against a ready casket
 * and fails against an address where none answers.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPTIONS } from '../../src/config.js';
import { startCasket, type RunningCasket } from '../helpers/casket.js';

const root = resolve(import.meta.dirname, '../..');
const text = readFileSync(resolve(root, 'Dockerfile'), 'utf8').replace(/\\\n\s*/g, '');
const lines = text.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
const stages = lines.reduce<string[][]>((all, l) => (l.startsWith('FROM ') ? [...all, [l]] : (all.at(-1)!.push(l), all)), []);
const final = stages.at(-1)!;

function healthcheck(): string {
  const line = final.find((l) => l.startsWith('HEALTHCHECK '))!;
  const cmd = JSON.parse(line.slice(line.indexOf('CMD ') + 4)) as string[];
  expect(cmd.slice(0, 2)).toEqual(['node', '-e']);
  return cmd[2]!;
}

describe('Dockerfile', () => {
  it('builds in one stage and runs production dependencies as a non-root user in another', () => {
    expect(stages).toHaveLength(2);
    expect(stages[0]!.join('\n')).toMatch(/RUN npx tsc -p tsconfig\.build\.json/);
    expect(final.join('\n')).toMatch(/RUN npm ci --omit=dev /);
    // Without better-sqlite3 (--omit=optional) casket needs a node:sqlite that reads text whole: Node 24 or later (src/sqlite.ts).
    if (final.join('\n').includes('--omit=optional')) expect(final[0]).toMatch(/^FROM node:(2[4-9]|[3-9]\d)\b/);
    expect(final.join('\n')).toMatch(/COPY --from=build \/app\/dist \.\/dist/);
    const user = final.filter((l) => l.startsWith('USER ')).at(-1);
    expect(user).toBeDefined();
    expect(user).not.toMatch(/USER (root|0)\b/);
  });

  it('copies only files the repo has, and sets only variables casket reads', () => {
    for (const l of lines.filter((x) => x.startsWith('COPY ') && !x.includes('--from'))) {
      for (const source of l.split(/\s+/).slice(1, -1)) expect(existsSync(resolve(root, source)), source).toBe(true);
    }
    const known = new Set(OPTIONS.map((o) => o.env));
    for (const v of text.matchAll(/\b(CASKET_[A-Z_]+)=/g)) expect(known.has(v[1]!), v[1]).toBe(true);
  });

  describe('HEALTHCHECK', () => {
    let casket: RunningCasket;
    beforeAll(async () => {
      casket = await startCasket();
    });
    afterAll(async () => casket?.stop());

    const run = (listen: string) => spawnSync(process.execPath, ['-e', healthcheck()], { env: { ...process.env, CASKET_LISTEN: listen }, encoding: 'utf8', timeout: 30_000 }).status;

    it('asks for readiness, and passes when casket is ready', () => {
      expect(healthcheck()).toContain('/_casket/ready');
      expect(run(`127.0.0.1:${casket.port}`)).toBe(0);
    });

    it('fails when nothing answers', async () => {
      const port = casket.port;
      await casket.stop();
      expect(run(`127.0.0.1:${port}`)).toBe(1);
    });
  });
});
