/**
 * A rollback that stops on something other than an S3 error (the write
 * log's store failing) answers 500 InternalError with what to do — run it
 * again — and logs the cause for the operator (src/rollback/endpoint.ts).
 * In-process (the store is made to fail from inside, as in edges.test.ts),
 * so `npm run mutate:rooms` sees it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { captureLog } from '../helpers/faults.js';
import { raw } from '../helpers/raw.js';
import { inProcessWithBucket } from './helpers.js';

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

describe('POST /_casket/rollback when the write log cannot be read', () => {
  it('answers 500 InternalError saying to run it again, and logs the cause', async () => {
    const { c } = await inProcessWithBucket('endpoint-failure', stops, ['alice']);
    const { state, log } = c.casket.services;
    const failure = new Error('state store unreachable');
    state.listWriteLog = async () => Promise.reject(failure);
    const { logged, restore } = captureLog(log, 'error');
    try {
      const res = await raw(c.url, c.admin, { method: 'POST', path: '/_casket/rollback', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ agent: 'alice', since: '2026-11-25T14:00:00Z' }) });
      expect(res.status).toBe(500);
      expect(JSON.parse(res.body)).toEqual({ error: 'InternalError', message: 'The rollback stopped; keys already restored stay restored: run it again to finish.' });
    } finally {
      restore();
    }
    expect(logged.filter(([, msg]) => msg === 'rollback failed')).toEqual([[{ err: failure }, 'rollback failed']]);
  });
});
