// The person in front of the browser for scripts/mcp-inspector-oauth.sh: opens the
// authorization URL the Inspector printed in headless Chromium (playwright-core,
// the repo's dependency, never a downloaded browser), logs in on casket's page with
// a key and secret, and answers the consent screen (allow, or deny with
// CASKET_CONSENT=deny to see the script fail). Exits non-zero, saying where it
// stopped, if any page is not the one expected.
//   usage: CASKET_KEY=.. CASKET_SECRET=.. node scripts/mcp-inspector-oauth-browser.mjs <url>
import { chromium } from 'playwright-core';

const [url] = process.argv.slice(2);
const decision = process.env.CASKET_CONSENT === 'deny' ? 'deny' : 'allow';
const browser = await chromium.launch({ executablePath: process.env.CASKET_TEST_CHROMIUM || '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(url);
  console.log(`login page: ${await page.textContent('h1')}`);
  await page.fill('#accessKeyId', process.env.CASKET_KEY ?? '');
  await page.fill('#secretAccessKey', process.env.CASKET_SECRET ?? '');
  await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
  console.log(`consent page: ${await page.textContent('h1')}`);
  if ((await page.$(`button[value=${decision}]`)) === null) throw new Error(`no ${decision} button; the page said: ${(await page.textContent('main'))?.trim()}`);
  // The Inspector's own callback listener (127.0.0.1) is where casket sends the browser back.
  await Promise.all([page.waitForURL((u) => u.origin !== new URL(url).origin), page.click(`button[value=${decision}]`)]);
  console.log(`sent back to: ${page.url().replace(/code=[^&]+/, 'code=…')}`);
} catch (e) {
  console.error(`browser: ${e.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
