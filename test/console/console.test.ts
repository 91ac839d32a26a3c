/**
 * The operator console (docs/design.md §9) in a real browser: Debian's
 * chromium driven by playwright-core against casket started in-process, with
 * two agents writing through the AWS SDK. An operator logs in with an admin
 * key, sees a refusal arrive live, reads a diff both ways, moves by keyboard
 * and logs out; a non-admin key is refused; every page carries the CSP.
 *
 * CASKET_CONSOLE_SCREENSHOTS=1 also writes docs/console/*.png (the README's
 * pictures) at 1280×800 and on a phone's width.
 */
import { GetObjectCommand, PutObjectCommand, S3Client, CreateBucketCommand } from '@aws-sdk/client-s3';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes, failure, sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { haveChromium, launch } from './browser.js';

const SHOTS = process.env.CASKET_CONSOLE_SCREENSHOTS === '1' ? resolve(import.meta.dirname, '../../docs/console') : undefined;
const BUCKET = 'console-bucket';
const KEY = 'notes/plan.md';

describe.skipIf(!haveChromium())('console in a browser', () => {
  let c: InProcessCasket;
  let browser: Browser;
  let alice: S3Client;
  let bob: S3Client;
  /** The version bob read; alice has written over it since. */
  let bobRead: string;

  async function shot(page: Page, name: string, fullPage = false): Promise<void> {
    if (!SHOTS) return;
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage });
  }

  /** What the browser reported blocked by the Content-Security-Policy, on every page of every test. */
  const violations: string[] = [];

  async function loggedIn(viewport = { width: 1280, height: 800 }): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) violations.push(message.text());
    });
    await page.goto(`${c.url}/_casket/console`);
    await page.fill('#accessKeyId', c.admin.accessKeyId);
    await page.fill('#secretAccessKey', c.admin.secretAccessKey);
    await Promise.all([page.waitForURL(/\/_casket\/console\/$/), page.click('button[type=submit]')]);
    return { context, page };
  }

  beforeAll(async () => {
    c = await startInProcess({ agents: ['alice', 'bob'], keys: ['person'] });
    browser = await launch();
    alice = sdk(c.url, c.agents.alice!, { agentHeader: 'alice' });
    bob = sdk(c.url, c.agents.bob!, { agentHeader: 'bob' });
    await sdk(c.url, c.admin).send(new CreateBucketCommand({ Bucket: BUCKET }));
    // alice writes two versions; bob read the first and is one version behind.
    const v1 = await alice.send(new PutObjectCommand({ Bucket: BUCKET, Key: KEY, Body: '# Plan\n\n- read the issue\n- write the code\n', IfNoneMatch: '*' }));
    bobRead = v1.ETag!;
    await bytes((await bob.send(new GetObjectCommand({ Bucket: BUCKET, Key: KEY }))).Body);
    await alice.send(new PutObjectCommand({ Bucket: BUCKET, Key: KEY, Body: '# Plan\n\n- read the issue\n- write the tests\n- write the code\n', IfMatch: v1.ETag! }));
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await c?.stop();
  });

  it('sends a Content-Security-Policy that allows no inline script or style, on every console page', async () => {
    for (const path of ['/_casket/console/login', '/_casket/console/assets/console.js', '/_casket/console/api/setup']) {
      const res = await fetch(`${c.url}${path}`);
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp, path).toContain("default-src 'self'");
      expect(csp, path).toContain("script-src 'self'");
      expect(csp, path).not.toContain('unsafe-inline');
      expect(res.headers.get('x-frame-options'), path).toBe('DENY');
    }
    const html = await (await fetch(`${c.url}/_casket/console/login`)).text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=/);
  });

  it('refuses a non-admin key and a wrong secret, and sets no cookie', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    for (const [cred, message] of [
      [c.keys.person!, /not an admin key/],
      [c.agents.alice!, /not an admin key/],
      [{ accessKeyId: c.admin.accessKeyId, secretAccessKey: `${c.admin.secretAccessKey}x` }, /do not match/],
    ] as const) {
      await page.goto(`${c.url}/_casket/console/login`);
      await page.fill('#accessKeyId', cred.accessKeyId);
      await page.fill('#secretAccessKey', cred.secretAccessKey);
      const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.click('button[type=submit]')]);
      expect([401, 403]).toContain(response.status());
      await expect.poll(() => page.textContent('.message')).toMatch(message);
      expect(await context.cookies()).toEqual([]);
    }
    // The views' JSON answers no one without a session.
    expect((await fetch(`${c.url}/_casket/console/api/activity`)).status).toBe(401);
    await context.close();
  });

  it('refuses a login or logout POSTed from another origin (CSRF)', async () => {
    const body = new URLSearchParams({ accessKeyId: c.admin.accessKeyId, secretAccessKey: c.admin.secretAccessKey });
    const foreign = await fetch(`${c.url}/_casket/console/login`, { method: 'POST', body, redirect: 'manual', headers: { origin: 'http://evil.example' } });
    expect(foreign.status).toBe(403);
    expect(foreign.headers.get('set-cookie')).toBeNull();
    const same = await fetch(`${c.url}/_casket/console/login`, { method: 'POST', body, redirect: 'manual', headers: { origin: c.url } });
    expect(same.status).toBe(303);
    const cookie = same.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Path=\/_casket;/);
    expect(cookie).not.toContain(c.admin.secretAccessKey);
  });

  it('logs in, shows a refusal live within a few seconds, with the write log below', async () => {
    const { context, page } = await loggedIn();
    await page.waitForSelector('.status[data-state="live"]', { timeout: 10_000 });
    expect(await page.textContent('main')).toContain(KEY);
    // bob writes over the version he read; alice has written since: 412.
    const refused = await failure(bob.send(new PutObjectCommand({ Bucket: BUCKET, Key: KEY, Body: '# Plan\n\n- nothing\n', IfMatch: bobRead })));
    expect(refused.status).toBe(412);
    const row = page.locator('#live-rows tr.row-refused').first();
    const started = Date.now();
    await row.waitFor({ timeout: 10_000 });
    console.log(`the refusal showed in the live view ${Date.now() - started} ms after the 412`);
    expect(await row.textContent()).toContain('bob');
    expect(await row.textContent()).toContain(KEY);
    await shot(page, 'activity');
    await context.close();
  });

  it('opens the object and reads the diff, unified and side by side', async () => {
    const { context, page } = await loggedIn();
    await page.goto(`${c.url}/_casket/console/#/object?${new URLSearchParams({ bucket: BUCKET, key: KEY })}`);
    const unified = page.locator('pre.diff-unified');
    await unified.waitFor({ timeout: 10_000 });
    expect(await page.locator('pre.diff-unified .d-add').allTextContents()).toContain('+- write the tests\n');
    // bob's refusal (the test before) replayed from the event log.
    const refusal = page.locator('#object-refusals tbody tr').first();
    await expect.poll(() => refusal.textContent(), { timeout: 10_000 }).toContain('bob');
    expect(await refusal.textContent()).toContain('412');
    await shot(page, 'object', true);
    await page.click('button[data-mode="side by side"]');
    const split = page.locator('table.diff-split');
    await split.waitFor();
    expect(await split.locator('td.d-add').allTextContents()).toContain('- write the tests');
    await context.close();
  });

  it('shows an agent\'s stamps and the setup without any secret', async () => {
    const { context, page } = await loggedIn();
    const minted = { accessKeyId: 'ASIACONSOLETEST', secretAccessKey: 'sts-secret-never-shown', sessionToken: 'sts-token-never-shown', agent: 'bob', sessionName: 'nightly-run', expiresAt: Date.now() + 3600_000, issuedBy: c.admin.accessKeyId, policies: [] };
    await c.casket.services.state.putSession(minted);
    await page.goto(`${c.url}/_casket/console/#/agents/bob`);
    await page.waitForSelector('text=Read stamps: what it last read');
    // bob read the first version; alice wrote since: stale.
    expect(await page.locator('.badge-stale').count()).toBeGreaterThan(0);
    await page.waitForSelector('text=nightly-run');
    // bob's refusal (an earlier test) replayed from the event log.
    await expect.poll(() => page.locator('#agent-refusals tbody tr').first().textContent(), { timeout: 10_000 }).toContain('412');
    expect(await page.content()).not.toContain(minted.secretAccessKey);
    expect(await page.content()).not.toContain(minted.sessionToken);
    await shot(page, 'agent');
    await page.goto(`${c.url}/_casket/console/#/agents`);
    await page.waitForSelector('text=alice');
    await shot(page, 'agents');
    await page.goto(`${c.url}/_casket/console/#/setup`);
    await page.waitForSelector('text=Metrics at a glance');
    const text = (await page.textContent('body')) ?? '';
    expect(text).toContain(c.agents.alice!.accessKeyId);
    for (const secret of [c.admin, c.agents.alice!, c.agents.bob!, c.keys.person!].map((k) => k.secretAccessKey)) expect(text).not.toContain(secret);
    expect(await page.content()).not.toContain(c.admin.secretAccessKey);
    await shot(page, 'setup', true);
    // Nor in the JSON behind the views, shown or not.
    const secrets = [c.admin, c.agents.alice!, c.agents.bob!, c.keys.person!].map((k) => k.secretAccessKey).concat(minted.secretAccessKey, minted.sessionToken);
    for (const path of ['agents', 'agents/bob', 'setup', 'activity', `object?bucket=${BUCKET}&key=${encodeURIComponent(KEY)}`]) {
      const res = await page.request.get(`${c.url}/_casket/console/api/${path}`);
      expect(res.status(), path).toBe(200);
      const text = await res.text();
      for (const secret of secrets) expect(text, path).not.toContain(secret);
    }
    await context.close();
  });

  it('works by keyboard: skip link, views by Tab and Enter, focus visible', async () => {
    const { context, page } = await loggedIn();
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Skip to the view');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Agents');
    const outline = await page.evaluate('getComputedStyle(document.activeElement).outlineStyle');
    expect(outline).not.toBe('none');
    await page.keyboard.press('Enter');
    await page.waitForSelector('h1:text("Agents")');
    expect(await page.getAttribute('nav a[data-view="agents"]', 'aria-current')).toBe('page');
    await context.close();
  });

  it('is readable on a phone: nothing wider than the screen but the tables, which scroll in their own box', async () => {
    const { context, page } = await loggedIn({ width: 390, height: 844 });
    await page.waitForSelector('#live');
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await shot(page, 'phone');
    await context.close();
  });

  it('logs out: the cookie is gone and the console asks for a login again', async () => {
    const { context, page } = await loggedIn();
    await Promise.all([page.waitForURL(/\/login$/), page.click('.logout button')]);
    expect((await context.cookies()).filter((k) => k.name === 'casket_console')).toEqual([]);
    await page.goto(`${c.url}/_casket/console/`);
    expect(page.url()).toMatch(/\/_casket\/console\/login$/);
    await context.close();
  });

  it('ran every view above without the browser blocking anything under the CSP (no inline script or style)', () => {
    expect(violations).toEqual([]);
  });
});
