/**
 * The console's write log groups a changeset's entries (issue 39): one
 * heading naming the changeset and how many of its entries the page holds,
 * its rows under it; a single write beside it stays a row of its own. In
 * Debian's Chromium, against an in-process casket.
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commit } from '../helpers/changeset.js';
import { sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { haveChromium, launch } from './browser.js';
import { consoleLogin } from './login.js';

describe.skipIf(!haveChromium())('console: a changeset in the write log', () => {
  let c: InProcessCasket;
  let browser: Browser;
  let cookie: string;

  beforeAll(async () => {
    c = await startInProcess();
    cookie = await consoleLogin(c.url, c.admin);
    browser = await launch();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await c?.stop();
  });

  it('shows its entries under one heading with its id, and a single write apart', async () => {
    const s3 = sdk(c.url, c.admin);
    await s3.send(new CreateBucketCommand({ Bucket: 'grouped' }));
    await s3.send(new PutObjectCommand({ Bucket: 'grouped', Key: 'before.txt', Body: 'single' }));
    const r = await commit(c.url, c.admin, 'grouped', ['a', 'b', 'c'].map((n) => ({ key: `set/${n}.txt`, body: n, 'if-none-match': '*' })));
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    const id = r.json.changeset!;
    await s3.send(new PutObjectCommand({ Bucket: 'grouped', Key: 'after.txt', Body: 'single' }));
    s3.destroy();

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const [name, value] = cookie.split('=') as [string, string];
    await context.addCookies([{ name, value, url: `${c.url}/_casket` }]);
    const tab = await context.newPage();
    await tab.goto(`${c.url}/_casket/console/#/activity`);
    await tab.waitForSelector('text=page 1');
    const rows = await tab.locator('.page tbody tr').evaluateAll((trs) => trs.map((tr) => ({ head: tr.classList.contains('changeset-head'), changeset: tr.getAttribute('data-changeset'), text: tr.textContent ?? '' })));
    await context.close();
    // Newest first: after.txt, then the changeset's heading and its three rows (applied at once: in any order), then before.txt.
    const shown = rows.map((row) => (row.head ? `head ${row.changeset}` : `${/(after|before|set\/[abc])\.txt/.exec(row.text)?.[1]} ${row.changeset ?? '-'}`));
    expect([shown[0], shown[1], ...shown.slice(2, 5).sort(), ...shown.slice(5)]).toEqual(['after -', `head ${id}`, `set/a ${id}`, `set/b ${id}`, `set/c ${id}`, 'before -']);
    expect(rows[1]!.text).toContain(`Changeset ${id.slice(0, 8)} · 3 entries on this page, landed together`);
  });
});
