/**
 * The notification configuration (`--notifications FILE`,
 * src/events/notifications.ts) as its author meets it: the settings a file
 * leaves out take their defaults, a target's events default to the object
 * changes, and every mistake is refused with a message naming the file and
 * the place in it — never the secret. casket refuses to start (or keeps its
 * old targets on a reload) on any of these; webhooks.test.ts drives the
 * file through a spawned casket.
 */
import { describe, expect, it } from 'vitest';
import { NO_NOTIFICATIONS, NotificationsError, parseNotifications } from '../../src/events/notifications.js';

const SECRET = 'a-secret-of-sixteen+';
const hook = (extra: Record<string, unknown> = {}) => ({ url: 'https://ci.example.com/casket?token=x', secret: SECRET, ...extra });
const refusal = (doc: unknown): string => {
  try {
    parseNotifications(doc, 'hooks.json');
  } catch (e) {
    expect(e).toBeInstanceOf(NotificationsError);
    return (e as Error).message;
  }
  throw new Error('accepted');
};

describe('a notifications file', () => {
  it('takes the defaults for what it leaves out: the object changes only, named by the URL without its query', () => {
    // Strict: a setting left out is absent, not present as undefined.
    expect(parseNotifications({ webhooks: [hook()] }, 'hooks.json')).toStrictEqual({
      webhooks: [{ name: 'https://ci.example.com/casket', url: 'https://ci.example.com/casket?token=x', secret: SECRET, events: ['s3:'] }],
      timeoutMs: 5000,
      attempts: 8,
      backoffMs: 1000,
      maxBackoffMs: 60_000,
    });
    expect(NO_NOTIFICATIONS).toEqual({ webhooks: [], timeoutMs: 5000, attempts: 8, backoffMs: 1000, maxBackoffMs: 60_000 });
    expect(parseNotifications({ webhooks: [] }, 'hooks.json')).toEqual(NO_NOTIFICATIONS);
  });

  it('keeps what it sets: name, buckets, prefix, events and each setting', () => {
    const doc = { webhooks: [hook({ name: 'ci', buckets: ['docs', 'logs'], prefix: 'reports/', events: ['s3:ObjectCreated:*', 'casket:WriteRefused'] }), { url: 'http://127.0.0.1:9/x', secret: SECRET, prefix: '' }], timeoutMs: 1, attempts: 2, backoffMs: 3, maxBackoffMs: 4 };
    expect(parseNotifications(doc, 'hooks.json')).toEqual({
      webhooks: [
        { name: 'ci', url: 'https://ci.example.com/casket?token=x', secret: SECRET, buckets: ['docs', 'logs'], prefix: 'reports/', events: ['s3:ObjectCreated:*', 'casket:WriteRefused'] },
        // An empty prefix is no prefix.
        { name: 'http://127.0.0.1:9/x', url: 'http://127.0.0.1:9/x', secret: SECRET, events: ['s3:'] },
      ],
      timeoutMs: 1,
      attempts: 2,
      backoffMs: 3,
      maxBackoffMs: 4,
    });
  });

  it('is refused, naming the file and the place, for each kind of mistake', () => {
    const cases: Array<[unknown, string]> = [
      [null, 'hooks.json: expected {"webhooks": [...]}'],
      [[hook()], 'hooks.json: expected {"webhooks": [...]}'],
      ['webhooks', 'hooks.json: expected {"webhooks": [...]}'],
      [{}, 'hooks.json: expected {"webhooks": [...]}'],
      [{ webhooks: hook() }, 'hooks.json: expected {"webhooks": [...]}'],
      [{ webhooks: [], retries: 3 }, 'hooks.json: unknown setting "retries" (known: webhooks, timeoutMs, attempts, backoffMs, maxBackoffMs)'],
      [{ webhooks: [null] }, 'hooks.json: webhooks[0] must be an object'],
      [{ webhooks: [hook(), 'https://x.example'] }, 'hooks.json: webhooks[1] must be an object'],
      [{ webhooks: [hook({ headers: {} })] }, 'hooks.json: webhooks[0]: unknown field "headers"'],
      [{ webhooks: [hook({ url: 'ftp://x.example/' })] }, 'hooks.json: webhooks[0].url must be an http or https URL'],
      [{ webhooks: [hook({ url: 'not a url' })] }, 'hooks.json: webhooks[0].url must be an http or https URL'],
      // Only http: and https: themselves, not a scheme that ends like one.
      [{ webhooks: [hook({ url: 'git+https://x.example/' })] }, 'hooks.json: webhooks[0].url must be an http or https URL'],
      [{ webhooks: [hook({ url: 'https+x://x.example/' })] }, 'hooks.json: webhooks[0].url must be an http or https URL'],
      [{ webhooks: [hook({ url: 7 })] }, 'hooks.json: webhooks[0].url must be an http or https URL'],
      [{ webhooks: [hook({ secret: 'fifteen-chars!!' })] }, 'hooks.json: webhooks[0].secret must be a string of at least 16 characters'],
      [{ webhooks: [hook({ secret: 1234567890123456 })] }, 'hooks.json: webhooks[0].secret must be a string of at least 16 characters'],
      [{ webhooks: [hook({ name: '' })] }, 'hooks.json: webhooks[0].name must be a non-empty string'],
      [{ webhooks: [hook({ name: 3 })] }, 'hooks.json: webhooks[0].name must be a non-empty string'],
      [{ webhooks: [hook({ name: 'ci' }), hook({ name: 'ci', url: 'https://other.example/' })] }, 'hooks.json: webhooks[1]: name "ci" is used twice'],
      // Two targets at one URL need names: the default name is the URL without its query.
      [{ webhooks: [hook(), hook({ url: 'https://ci.example.com/casket?token=y' })] }, 'hooks.json: webhooks[1]: name "https://ci.example.com/casket" is used twice'],
      [{ webhooks: [hook({ prefix: 1 })] }, 'hooks.json: webhooks[0].prefix must be a string'],
      [{ webhooks: [hook({ buckets: 'docs' })] }, 'hooks.json: webhooks[0].buckets must be a list of non-empty strings'],
      [{ webhooks: [hook({ buckets: ['docs', ''] })] }, 'hooks.json: webhooks[0].buckets must be a list of non-empty strings'],
      [{ webhooks: [hook({ events: ['s3:', 5] })] }, 'hooks.json: webhooks[0].events must be a list of non-empty strings'],
      [{ webhooks: [], timeoutMs: 0 }, 'hooks.json: "timeoutMs" must be a positive integer'],
      [{ webhooks: [], attempts: 1.5 }, 'hooks.json: "attempts" must be a positive integer'],
      [{ webhooks: [], backoffMs: '1000' }, 'hooks.json: "backoffMs" must be a positive integer'],
      [{ webhooks: [], maxBackoffMs: -1 }, 'hooks.json: "maxBackoffMs" must be a positive integer'],
    ];
    for (const [doc, message] of cases) expect(refusal(doc), JSON.stringify(doc)).toBe(message);
  });

  it('names no secret in any refusal', () => {
    for (const doc of [{ webhooks: [hook({ url: 'ftp://x/' })] }, { webhooks: [hook({ extra: 1 })] }, { webhooks: [hook(), hook()] }]) expect(refusal(doc)).not.toContain(SECRET);
  });

  it('takes the least values that are allowed: a secret of 16 characters, a setting of 1', () => {
    const parsed = parseNotifications({ webhooks: [hook({ secret: 'sixteen-chars!!!' })], attempts: 1 }, 'hooks.json');
    expect(parsed.webhooks[0]!.secret).toBe('sixteen-chars!!!');
    expect(parsed.attempts).toBe(1);
  });
});
