/**
 * The console with a long write log: 100,000 entries on the default SQLite
 * state store. Its views page the log with a cursor (state/types.ts
 * WriteLogQuery.before), so page 1 and page 100 cost the same and the page
 * never holds the whole log. The figures are printed for the README.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { haveChromium, launch } from './browser.js';

const ENTRIES = 100_000;
/** The house rule (README, Tests): no wall-clock bound under 10 s; the figures are printed, and "never all loaded" is checked by what the store is asked. */
const PAGE_BUDGET_MS = 10_000;

type Page = { writes: Array<{ key: string; at: string }>; next: string | null };

describe.skipIf(!haveChromium())('console paging over 100,000 write-log entries (SQLite)', () => {
  let c: InProcessCasket;
  let browser: Browser;
  let cookie: string;
  /** The largest page the console asked the state store for. */
  let largestAsk = 0;

  const page = async (query: Record<string, string>): Promise<{ body: Page; ms: number; bytes: number }> => {
    const started = performance.now();
    const res = await fetch(`${c.url}/_casket/console/api/activity?${new URLSearchParams(query)}`, { headers: { cookie } });
    const text = await res.text();
    expect(res.status).toBe(200);
    return { body: JSON.parse(text) as Page, ms: performance.now() - started, bytes: text.length };
  };

  beforeAll(async () => {
    c = await startInProcess({ flags: { state: 'sqlite' } });
    const t0 = Date.now() - ENTRIES;
    // Appended in one turn: the SQLite store writes them in one transaction.
    for (let i = 0; i < ENTRIES; i++) {
      void c.casket.services.state.appendWriteLog({ at: new Date(t0 + i), bucket: 'big', key: `dir${i % 10}/k${i}`, operation: 'PutObject', agent: `agent-${i % 7}`, newETag: i.toString(16).padStart(64, '0') });
    }
    const state = c.casket.services.state;
    const list = state.listWriteLog.bind(state);
    state.listWriteLog = async (q) => {
      largestAsk = Math.max(largestAsk, q.limit);
      return list(q);
    };
    const login = await fetch(`${c.url}/_casket/console/login`, { method: 'POST', redirect: 'manual', headers: { origin: c.url }, body: new URLSearchParams({ accessKeyId: c.admin.accessKeyId, secretAccessKey: c.admin.secretAccessKey }) });
    cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
    browser = await launch();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await c?.stop();
  });

  it('answers page 1 and page 100 quickly, 50 rows each, newest first, no row twice', async () => {
    await page({ limit: '50' }); // warm: the first query also flushes the appended entries
    const first = await page({ limit: '50' });
    expect(first.body.writes).toHaveLength(50);
    expect(first.body.writes[0]!.key).toBe(`dir${(ENTRIES - 1) % 10}/k${ENTRIES - 1}`);
    let cursor = first.body.next!;
    const seen = new Set(first.body.writes.map((w) => w.key));
    let deep = first;
    for (let n = 2; n <= 100; n++) {
      deep = await page({ limit: '50', before: cursor });
      for (const w of deep.body.writes) seen.add(w.key);
      cursor = deep.body.next!;
    }
    expect(seen.size).toBe(100 * 50);
    expect(deep.body.writes.at(-1)!.key).toBe(`dir${(ENTRIES - 5000) % 10}/k${ENTRIES - 5000}`);
    const filtered = await page({ limit: '50', agent: 'agent-3', prefix: 'dir4/' });
    expect(filtered.body.writes.length).toBe(50);
    console.log(`100,000 entries: page 1 ${first.ms.toFixed(1)} ms (${first.bytes} bytes), page 100 ${deep.ms.toFixed(1)} ms, agent+prefix filter ${filtered.ms.toFixed(1)} ms`);
    // Never the whole log: each view asks the store for one page.
    expect(largestAsk).toBe(50);
    expect(first.bytes).toBeLessThan(20_000);
    expect(first.ms).toBeLessThan(PAGE_BUDGET_MS);
    expect(deep.ms).toBeLessThan(PAGE_BUDGET_MS);
  });

  it('shows one page in the browser, and the next on Older', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const [name, value] = cookie.split('=') as [string, string];
    await context.addCookies([{ name, value, url: `${c.url}/_casket` }]);
    const tab = await context.newPage();
    await tab.goto(`${c.url}/_casket/console/#/activity`);
    const rows = tab.locator('.page tbody tr');
    await tab.waitForSelector('text=page 1');
    expect(await rows.count()).toBe(50);
    expect(await rows.first().textContent()).toContain(`k${ENTRIES - 1}`);
    await tab.click('#older');
    await tab.waitForSelector('text=page 2');
    expect(await rows.first().textContent()).toContain(`k${ENTRIES - 51}`);
    await context.close();
  });
});
