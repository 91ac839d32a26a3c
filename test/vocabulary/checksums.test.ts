import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { Crc32c as AwsCrc32c } from '@aws-crypto/crc32c';
import { Crc64Nvme as AwsCrc64Nvme } from '@aws-sdk/crc64-nvme';
import {
  CHECKSUM_ALGORITHMS,
  checksumAlgorithmOf,
  checksumMismatch,
  checksumOf,
  combineCrc,
  combineCrcs,
  compositeChecksum,
  createChecksum,
  parseBase64Digest,
  parseChecksumValue,
  type ChecksumAlgorithm,
} from '../../src/vocabulary/checksums.js';

function digestOf(algorithm: ChecksumAlgorithm, ...parts: Buffer[]): Buffer {
  const c = createChecksum(algorithm);
  for (const p of parts) c.update(p);
  return c.digest();
}

describe('checksums', () => {
  // Published check values ("123456789") from the CRC catalogue
  // (reveng.sourceforge.io/crc-catalogue: CRC-32/ISO-HDLC, CRC-32/ISCSI, CRC-64/NVME)
  // and FIPS 180 digests.
  const check = Buffer.from('123456789');
  it.each([
    ['crc32', 'cbf43926'],
    ['crc32c', 'e3069283'],
    ['crc64nvme', 'ae8b14860a799888'],
    ['sha1', 'f7c3bc1d808e04732adf679965ccc34ca7ae3441'],
    ['sha256', '15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225'],
  ] as const)('%s of "123456789" is the catalogue check value', (algorithm, hex) => {
    expect(digestOf(algorithm, check).toString('hex')).toBe(hex);
  });

  it('crc32 of "hello world" is 0x0d4a1185, sent as DUoRhQ==', () => {
    const d = digestOf('crc32', Buffer.from('hello world'));
    expect(d.toString('hex')).toBe('0d4a1185');
    expect(d.toString('base64')).toBe('DUoRhQ==');
  });

  it('the AWS chunked-trailer example: crc32c of 66560 "a" is sOO8/Q==', () => {
    expect(digestOf('crc32c', Buffer.alloc(66560, 'a')).toString('base64')).toBe('sOO8/Q==');
  });

  it('incremental updates at odd boundaries equal one-shot, for every algorithm', () => {
    const data = randomBytes(10_007);
    for (const algorithm of CHECKSUM_ALGORITHMS) {
      const whole = digestOf(algorithm, data);
      for (const cut of [0, 1, 3, 7, 8, 9, 4096, 10_000]) {
        expect(digestOf(algorithm, data.subarray(0, cut), data.subarray(cut)).equals(whole)).toBe(true);
      }
    }
  });

  it('crc32c and crc64nvme agree with the AWS packages on random data', async () => {
    for (const size of [0, 1, 7, 8, 9, 63, 1000, 65_537]) {
      const data = randomBytes(size);
      const c32 = new AwsCrc32c().update(data).digest();
      expect(digestOf('crc32c', data).readUInt32BE()).toBe(c32);
      const c64 = new AwsCrc64Nvme();
      c64.update(data);
      expect(digestOf('crc64nvme', data).equals(Buffer.from(await c64.digest()))).toBe(true);
    }
  });

  it('parses value-header names and ignores the non-value x-amz-checksum-* headers', () => {
    expect(checksumAlgorithmOf('X-Amz-Checksum-CRC64NVME')).toBe('crc64nvme');
    expect(checksumAlgorithmOf('x-amz-checksum-sha256')).toBe('sha256');
    expect(checksumAlgorithmOf('x-amz-checksum-type')).toBeUndefined();
    expect(checksumAlgorithmOf('x-amz-checksum-mode')).toBeUndefined();
    expect(checksumAlgorithmOf('x-amz-checksum-algorithm')).toBeUndefined();
    expect(checksumAlgorithmOf('content-md5')).toBeUndefined();
  });

  it('accepts only canonical base64 of the right length; anything else is BadDigest, a value no body can match', () => {
    expect(parseChecksumValue('crc32', 'DUoRhQ==').toString('hex')).toBe('0d4a1185');
    // Unpadded, over-padded, trailing junk, non-zero pad bits, not base64, 6 bytes, empty, 3 bytes.
    for (const bad of ['DUoRhQ', 'DUoRhQ=', 'DUoRhQ==x', 'DUoRhR==', '!!!!!!!!', 'AAAAAAAA', '', 'nope']) {
      expect(() => parseChecksumValue('crc32', bad), `value ${JSON.stringify(bad)}`).toThrow(expect.objectContaining({ name: 'S3Error', code: 'BadDigest', message: 'The CRC32 you specified did not match the calculated checksum.' }));
    }
    expect(() => parseChecksumValue('sha256', 'bad')).toThrow(expect.objectContaining({ code: 'BadDigest', message: 'The SHA256 you specified did not match the calculated checksum.' }));
    expect(parseBase64Digest('XrY7u+Ae7tCTyyK7j1rNww==', 16)?.toString('hex')).toBe('5eb63bbbe01eeed093cb22bb8f5acdc3');
    expect(parseBase64Digest('XrY7u+Ae7tCTyyK7j1rNww', 16)).toBeUndefined();
  });

  it('mismatch uses S3 wording', () => {
    const e = checksumMismatch('crc64nvme');
    expect(e.code).toBe('BadDigest');
    expect(e.message).toBe('The CRC64NVME you specified did not match the calculated checksum.');
  });

  it.each(['crc32', 'crc32c', 'crc64nvme'] as const)('%s of A then B combines from CRC(A), CRC(B) and |B|', (algorithm) => {
    for (const [la, lb] of [[0, 5], [5, 0], [1000, 12345], [7, 1], [3 * 1024 * 1024 + 3, 17]] as const) {
      const a = randomBytes(la);
      const b = randomBytes(lb);
      const whole = checksumOf(algorithm, Buffer.concat([a, b]));
      expect(combineCrc(algorithm, checksumOf(algorithm, a), checksumOf(algorithm, b), lb)).toEqual(whole);
      expect(combineCrcs(algorithm, [[checksumOf(algorithm, a), la], [checksumOf(algorithm, b), lb]])).toEqual(whole);
    }
  });

  it('combines 10,000 parts of one size quickly (CompleteMultipartUpload runs it on the event loop)', () => {
    const part = randomBytes(64);
    const crc = checksumOf('crc64nvme', part);
    const started = performance.now();
    const combined = combineCrcs('crc64nvme', Array.from({ length: 10_000 }, () => [crc, part.length] as const));
    const ms = performance.now() - started;
    expect(combined).toEqual(checksumOf('crc64nvme', Buffer.concat(Array.from({ length: 10_000 }, () => part))));
    console.log(`combineCrcs: 10,000 crc64nvme parts in ${ms.toFixed(1)} ms`);
  });

  it('a composite checksum is the checksum of the part checksums, -N', () => {
    const parts = [Buffer.from('part one'), Buffer.from('part two')];
    const digests = parts.map((p) => checksumOf('sha256', p));
    expect(compositeChecksum('sha256', digests)).toBe(`${checksumOf('sha256', Buffer.concat(digests)).toString('base64')}-2`);
  });
});
