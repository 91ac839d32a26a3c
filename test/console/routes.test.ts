/**
 * The console's routes (src/console/routes.ts) over plain HTTP, with casket
 * in this process so that `npm run mutate:rooms` sees them: where a visitor
 * without a session is sent, what each refused login says and answers, the
 * session cookie's attributes, which assets are served and how, the JSON
 * refusals of the API, logout, and the diff view's answers. What a browser
 * makes of them is test/console/console.test.ts.
 */
import { PutObjectCommand, CreateBucketCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';
import { consoleLogin } from './login.js';

let c: InProcessCasket;
const at = (path: string) => new URL(path, c.url);
const SECURITY = {
  'content-security-policy': "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};
const securityOf = (res: Response) => Object.fromEntries(Object.keys(SECURITY).map((h) => [h, res.headers.get(h)]));
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const postLogin = (body: string, headers: Record<string, string> = {}) =>
  fetch(at('/_casket/console/login'), { method: 'POST', redirect: 'manual', headers: { origin: c.url, 'content-type': 'application/x-www-form-urlencoded', ...headers }, body });
const alertOf = (html: string) => /<p class="message" role="alert">(.*?)<\/p>/s.exec(html)?.[1];

beforeAll(async () => {
  c = await startInProcess({ agents: ['alice'], keys: ['person'] });
});
afterAll(async () => {
  await c?.stop();
});

describe('console routes', () => {
  it('sends a visitor without a session to the login page, from either form of the console\'s path, with the security headers', async () => {
    for (const path of ['/_casket/console', '/_casket/console/']) {
      const res = await fetch(at(path), { redirect: 'manual' });
      expect(res.status, path).toBe(303);
      expect(res.headers.get('location')).toBe('/_casket/console/login');
      expect(securityOf(res), path).toEqual(SECURITY);
    }
    const login = await fetch(at('/_casket/console/login'));
    expect(login.status).toBe(200);
    expect(login.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(login.headers.get('cache-control')).toBe('no-store');
    expect(alertOf(await login.text())).toBe('<!--message-->');

    const cookie = await consoleLogin(c.url, c.admin);
    for (const path of ['/_casket/console', '/_casket/console/']) {
      const res = await fetch(at(path), { headers: { cookie } });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(securityOf(res), path).toEqual(SECURITY);
      expect(await res.text()).toContain('<script type="module"');
    }
    const again = await fetch(at('/_casket/console/login'), { headers: { cookie }, redirect: 'manual' });
    expect(again.status).toBe(303);
    expect(again.headers.get('location')).toBe('/_casket/console/');
  });

  it('says why a login was refused, and only a good one sets the session cookie', async () => {
    const refused = async (res: Response, status: number, message: string) => {
      expect(res.status).toBe(status);
      expect(res.headers.get('set-cookie')).toBeNull();
      expect(alertOf(await res.text())).toBe(message);
    };
    const admin = form({ accessKeyId: c.admin.accessKeyId, secretAccessKey: c.admin.secretAccessKey });
    await refused(await postLogin(admin, { origin: 'http://evil.example' }), 403, 'The login was not sent from this page. Reload it and try again.');
    await refused(await postLogin(form({ accessKeyId: c.keys.person!.accessKeyId, secretAccessKey: c.keys.person!.secretAccessKey })), 403, 'That credential is not an admin key: the console is for admin keys only.');
    await refused(await postLogin(form({ accessKeyId: c.admin.accessKeyId, secretAccessKey: 'wrong' })), 401, 'That access key and secret key do not match a casket credential.');
    await refused(await postLogin(form({ accessKeyId: '', secretAccessKey: '' })), 401, 'That access key and secret key do not match a casket credential.');
    // A form past 8 KiB is not read.
    await refused(await postLogin(`${admin}&pad=${'x'.repeat(8192)}`), 401, 'That access key and secret key do not match a casket credential.');

    const ok = await postLogin(admin);
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe('/_casket/console/');
    expect(ok.headers.get('cache-control')).toBe('no-store');
    const cookie = ok.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^casket_console=cks1\.[^;]+; Path=\/_casket; Max-Age=28800; HttpOnly; SameSite=Strict$/);
  });

  it('serves the stylesheet and scripts with their types, and no page or unknown name as an asset', async () => {
    const css = await fetch(at('/_casket/console/assets/console.css'));
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(css.headers.get('cache-control')).toBe('no-cache');
    expect(securityOf(css)).toEqual(SECURITY);
    expect((await css.text()).length).toBeGreaterThan(100);
    const js = await fetch(at('/_casket/console/assets/console.js'));
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    await js.arrayBuffer();
    for (const name of ['console.html', 'login.html', 'nothing.js', '..%2Fsession.ts']) {
      const res = await fetch(at(`/_casket/console/assets/${name}`));
      expect(res.status, name).toBe(404);
      await res.arrayBuffer();
    }
  });

  it('answers the API 401 without a session; logout needs the page\'s origin and ends the session', async () => {
    const anonymous = await fetch(at('/_casket/console/api/setup'));
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ error: 'AccessDenied', message: 'Log in with an admin access key.' });

    const cookie = await consoleLogin(c.url, c.admin);
    const foreign = await fetch(at('/_casket/console/logout'), { method: 'POST', redirect: 'manual', headers: { cookie, origin: 'http://evil.example' } });
    expect(foreign.status).toBe(403);
    expect(await foreign.json()).toEqual({ error: 'AccessDenied', message: 'Log out from the console page.' });
    expect((await fetch(at('/_casket/console/api/setup'), { headers: { cookie } })).status).toBe(200);
    const revoke = await fetch(at('/_casket/console/api/connected-clients/some-id/revoke'), { method: 'POST', headers: { cookie, origin: 'http://evil.example' } });
    expect(revoke.status).toBe(403);
    expect(await revoke.json()).toEqual({ error: 'AccessDenied', message: 'Revoke from the console page.' });

    const out = await fetch(at('/_casket/console/logout'), { method: 'POST', redirect: 'manual', headers: { cookie, origin: c.url } });
    expect(out.status).toBe(303);
    expect(out.headers.get('location')).toBe('/_casket/console/login');
    expect(out.headers.get('set-cookie')).toBe('casket_console=; Path=/_casket; Max-Age=0; HttpOnly; SameSite=Strict');
    // The old cookie is refused from now on, though its signature still holds.
    expect((await fetch(at('/_casket/console/api/setup'), { headers: { cookie } })).status).toBe(401);
  });

  it('answers the diff view as /_casket/diff does: the unified diff with its versions, or the S3 error', async () => {
    const alice = sdk(c.url, c.agents.alice!, { agentHeader: 'alice' });
    await sdk(c.url, c.admin).send(new CreateBucketCommand({ Bucket: 'routes' }));
    const v1 = (await alice.send(new PutObjectCommand({ Bucket: 'routes', Key: 'n.txt', Body: 'one\ntwo\n', IfNoneMatch: '*' }))).ETag!;
    const v2 = (await alice.send(new PutObjectCommand({ Bucket: 'routes', Key: 'n.txt', Body: 'one\nthree\n', IfMatch: v1 }))).ETag!;
    alice.destroy();
    const cookie = await consoleLogin(c.url, c.admin);
    const diff = await fetch(at(`/_casket/console/api/diff?${new URLSearchParams({ bucket: 'routes', key: 'n.txt', from: v1 })}`), { headers: { cookie } });
    expect(diff.status).toBe(200);
    expect(diff.headers.get('content-type')).toMatch(/^text\/x-diff|^text\/plain/);
    expect(diff.headers.get('x-casket-diff-from')).toBe(v1);
    expect(diff.headers.get('x-casket-diff-to')).toBe(v2);
    expect(await diff.text()).toContain('-two\n+three\n');

    const missing = await fetch(at('/_casket/console/api/diff?bucket=routes&key=n.txt'), { headers: { cookie } });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toEqual({ error: 'InvalidArgument', message: 'The query parameter from is required.' });
  });
});
