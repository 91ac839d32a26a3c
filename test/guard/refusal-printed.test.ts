/**
 * A refusal where it is printed rather than answered: a log line, or an
 * error that escapes to a caller outside the S3 layer (String(err), pino's
 * err.name), says it is a Refusal and why, not a bare "Error".
 */
import { describe, expect, it } from 'vitest';
import { Refusal } from '../../src/guard/refusal.js';

describe('a refusal printed', () => {
  it('reads "Refusal: <reason>"', () => {
    const refusal = new Refusal('stale-read', 'b', 'k', null, '1'.repeat(64));
    expect([refusal.name, String(refusal)]).toEqual(['Refusal', 'Refusal: stale-read']);
  });
});
