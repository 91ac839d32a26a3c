import { describe, expect, it } from 'vitest';
import { fromUpstreamMetadataValue, toUpstreamMetadataValue } from '../../../src/backends/s3/metadata-encoding.js';

/** A value as casket holds it: the received bytes, one char each. */
const received = (text: string) => Buffer.from(text, 'utf8').toString('latin1');

describe('user metadata values to and from an upstream', () => {
  it('ASCII passes as is; anything else becomes an RFC 2047 B word of the bytes, and comes back byte-exact', () => {
    expect(toUpstreamMetadataValue('plain value, 1 = 1')).toBe('plain value, 1 = 1');
    const value = received('café ☕ 𝄞');
    const upstream = toUpstreamMetadataValue(value);
    expect(upstream).toBe(`=?UTF-8?B?${Buffer.from('café ☕ 𝄞').toString('base64')}?=`);
    expect(upstream).toMatch(/^[\x20-\x7e]*$/);
    expect(fromUpstreamMetadataValue(upstream)).toBe(value);
    // Bytes that are not UTF-8 survive too.
    expect(fromUpstreamMetadataValue(toUpstreamMetadataValue('\xe9\xff'))).toBe('\xe9\xff');
  });

  it('decodes Q words and lower-case charsets; leaves other values alone', () => {
    expect(fromUpstreamMetadataValue('=?utf-8?q?caf=C3=A9_au_lait?=')).toBe(received('café au lait'));
    expect(fromUpstreamMetadataValue('=?UTF-8?X?abc?=')).toBe('=?UTF-8?X?abc?=');
    expect(fromUpstreamMetadataValue('not encoded')).toBe('not encoded');
  });
});
