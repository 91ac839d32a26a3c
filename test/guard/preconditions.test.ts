import { describe, expect, it } from 'vitest';
import { evaluateRead, evaluateWrite, type ReadConditions, type WriteConditions } from '../../src/guard/preconditions.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const T = new Date('2026-01-01T12:00:00.000Z');
const before = new Date('2026-01-01T11:00:00Z');
const after = new Date('2026-01-01T13:00:00Z');
const current = { etag: A, lastModified: T };

describe('evaluateRead: RFC 9110 §13.2.2 as S3 applies it', () => {
  const table: Array<[string, ReadConditions, ReturnType<typeof evaluateRead>]> = [
    ['no conditions', {}, 'ok'],
    ['If-Match current', { ifMatch: [A] }, 'ok'],
    ['If-Match current in the -1 form', { ifMatch: [`${A}-1`] }, 'ok'],
    ['If-Match other', { ifMatch: [B] }, 'precondition-failed'],
    ['If-Match list containing current', { ifMatch: [B, A] }, 'ok'],
    ['If-Match *', { ifMatch: '*' }, 'ok'],
    ['If-None-Match current', { ifNoneMatch: [A] }, 'not-modified'],
    ['If-None-Match other', { ifNoneMatch: [B] }, 'ok'],
    ['If-None-Match *', { ifNoneMatch: '*' }, 'not-modified'],
    ['If-Modified-Since before', { ifModifiedSince: before }, 'ok'],
    ['If-Modified-Since after', { ifModifiedSince: after }, 'not-modified'],
    ['If-Modified-Since same second', { ifModifiedSince: new Date('2026-01-01T12:00:00.900Z') }, 'not-modified'],
    ['If-Unmodified-Since after', { ifUnmodifiedSince: after }, 'ok'],
    ['If-Unmodified-Since before', { ifUnmodifiedSince: before }, 'precondition-failed'],
    ['If-Unmodified-Since same second', { ifUnmodifiedSince: new Date('2026-01-01T12:00:00.900Z') }, 'ok'],
    // S3: If-Match true and If-Unmodified-Since false → 200.
    ['If-Match true + If-Unmodified-Since false', { ifMatch: [A], ifUnmodifiedSince: before }, 'ok'],
    // S3: If-None-Match false and If-Modified-Since true → 304.
    ['If-None-Match false + If-Modified-Since true', { ifNoneMatch: [A], ifModifiedSince: before }, 'not-modified'],
    ['If-None-Match true + If-Modified-Since false', { ifNoneMatch: [B], ifModifiedSince: after }, 'ok'],
    ['If-Match false + If-None-Match false', { ifMatch: [B], ifNoneMatch: [A] }, 'precondition-failed'],
  ];
  it.each(table)('%s', (_name, conditions, expected) => {
    expect(evaluateRead(current, conditions)).toBe(expected);
  });
});

describe('evaluateWrite: S3 conditional writes', () => {
  const table: Array<[string, typeof current | null, WriteConditions, string]> = [
    ['unconditional, exists', current, {}, 'ok:none'],
    ['unconditional, missing', null, {}, 'ok:none'],
    ['If-Match current', current, { ifMatch: [A] }, 'ok:if-match'],
    ['If-Match -1 form', current, { ifMatch: [`${A}-1`] }, 'ok:if-match'],
    ['If-Match other', current, { ifMatch: [B] }, 'precondition-failed'],
    ['If-Match on missing key', null, { ifMatch: [A] }, 'no-such-key'],
    ['If-Match * exists', current, { ifMatch: '*' }, 'ok:if-match'],
    ['If-Match * missing', null, { ifMatch: '*' }, 'no-such-key'],
    ['If-None-Match * missing', null, { ifNoneMatch: '*' }, 'ok:if-none-match'],
    ['If-None-Match * exists', current, { ifNoneMatch: '*' }, 'precondition-failed'],
    // Honoured as Ceph RGW and MinIO do (AWS answers 501; docs/design.md §3).
    ['If-None-Match the current ETag', current, { ifNoneMatch: [A] }, 'precondition-failed'],
    ['If-None-Match the current ETag, -1 form', current, { ifNoneMatch: [`${A}-1`] }, 'precondition-failed'],
    ['If-None-Match another ETag', current, { ifNoneMatch: [B] }, 'ok:if-none-match'],
    ['If-None-Match a list naming the current ETag', current, { ifNoneMatch: [B, A] }, 'precondition-failed'],
    ['If-None-Match an ETag, missing', null, { ifNoneMatch: [B] }, 'ok:if-none-match'],
  ];
  const sized = { ...current, size: 10 };
  const deletes: Array<[string, typeof sized | null, WriteConditions, string]> = [
    ['x-amz-if-match-size equal', sized, { ifMatchSize: 10 }, 'ok:none'],
    ['x-amz-if-match-size other', sized, { ifMatchSize: 11 }, 'precondition-failed:x-amz-if-match-size'],
    ['x-amz-if-match-size, missing key (204 as AWS)', null, { ifMatchSize: 11 }, 'ok:none'],
    ['x-amz-if-match-last-modified-time, same second', sized, { ifMatchLastModifiedTime: new Date(T.getTime() + 999) }, 'ok:none'],
    ['x-amz-if-match-last-modified-time other', sized, { ifMatchLastModifiedTime: before }, 'precondition-failed:x-amz-if-match-last-modified-time'],
    ['x-amz-if-match-last-modified-time, missing key', null, { ifMatchLastModifiedTime: before }, 'ok:none'],
    ['If-Match current and size other', sized, { ifMatch: [A], ifMatchSize: 3 }, 'precondition-failed:x-amz-if-match-size'],
    ['If-Match and size, missing key', null, { ifMatch: [A], ifMatchSize: 3 }, 'no-such-key:If-Match'],
  ];
  it.each(deletes)('%s', (_name, cur, conditions, expected) => {
    const v = evaluateWrite(cur, conditions);
    expect(v.ok ? `ok:${v.condition.type}` : `${v.failure}:${v.condition}`).toBe(expected);
  });
  it.each(table)('%s', (_name, cur, conditions, expected) => {
    const v = evaluateWrite(cur, conditions);
    expect(v.ok ? `ok:${v.condition.type}` : v.failure).toBe(expected);
  });

  it('If-None-Match with ETags commits under those ETags, both forms, not as create-only', () => {
    const v = evaluateWrite(current, { ifNoneMatch: [`${B}-1`] });
    expect(v.ok && v.condition).toEqual({ type: 'if-none-match', etags: [`${B}-1`, B] });
  });

  it('expands the -1 form to both stored forms for the atomic commit', () => {
    const v = evaluateWrite(current, { ifMatch: [`${A}-1`] });
    expect(v.ok && v.condition).toEqual({ type: 'if-match', etags: [`${A}-1`, A] });
  });
});
