/**
 * Tool arguments that name objects and versions (src/mcp/paths.ts), without
 * a casket: the bucket and key a path names — a key read or written that is
 * not the one the model named is another file changed — and the ETags a
 * model passes back as expected_etag, the condition of its write.
 */
import { describe, expect, it } from 'vitest';
import { BadArgument, parseETagArgument, parsePath, requireFile, showPath, unquote } from '../../src/mcp/paths.js';

const HEX = 'a'.repeat(32) + '0123456789abcdef'.repeat(2);

describe('parsePath', () => {
  const cases: Array<[string, { bucket: string; key: string }]> = [
    ['docs/plan.md', { bucket: 'docs', key: 'plan.md' }],
    ['s3://docs/plan.md', { bucket: 'docs', key: 'plan.md' }],
    ['/docs/plan.md', { bucket: 'docs', key: 'plan.md' }],
    ['///docs/plan.md', { bucket: 'docs', key: 'plan.md' }],
    ['s3:///docs/plan.md', { bucket: 'docs', key: 'plan.md' }],
    ['  docs/plan.md\n', { bucket: 'docs', key: 'plan.md' }],
    ['docs', { bucket: 'docs', key: '' }],
    ['docs/', { bucket: 'docs', key: '' }],
    // Only the front is the path's form: a key keeps its own slashes, and s3:// inside it, as S3 does.
    ['docs/a/b/c.md', { bucket: 'docs', key: 'a/b/c.md' }],
    ['docs//twice', { bucket: 'docs', key: '/twice' }],
    ['docs/s3://x', { bucket: 'docs', key: 's3://x' }],
    ['docs/dir/', { bucket: 'docs', key: 'dir/' }],
  ];
  it.each(cases)('%j names %j', (path, named) => {
    expect(parsePath(path)).toEqual(named);
  });

  it('refuses a path with no bucket, quoting it', () => {
    for (const path of ['', '  ', '/', 's3://', 's3:///']) expect(() => parsePath(path)).toThrow(new BadArgument(`"${path}" names no bucket: paths are bucket/key (or s3://bucket/key).`));
  });
});

describe('requireFile', () => {
  it('takes a path that names a file', () => {
    expect(requireFile('s3://docs/a/plan.md')).toEqual({ bucket: 'docs', key: 'a/plan.md' });
  });

  it('refuses a bucket alone or a folder, quoting the path', () => {
    for (const path of ['docs', 'docs/', 'docs/a/']) expect(() => requireFile(path)).toThrow(new BadArgument(`"${path}" names no file: paths are bucket/key (or s3://bucket/key).`));
    expect(() => requireFile('')).toThrow(/names no bucket/);
  });
});

describe('showPath', () => {
  it('writes bucket/key, as parsePath reads it back', () => {
    expect(showPath({ bucket: 'docs', key: 'a/plan.md' })).toBe('docs/a/plan.md');
    expect(parsePath(showPath({ bucket: 'docs', key: 'a/plan.md' }))).toEqual({ bucket: 'docs', key: 'a/plan.md' });
  });
});

describe('parseETagArgument', () => {
  it('takes an ETag as a read answered it, quoted or not, in any case, and answers it quoted', () => {
    for (const given of [`"${HEX}"`, HEX, HEX.toUpperCase(), ` "${HEX}" `, `"${HEX}`, `${HEX}"`]) expect(parseETagArgument(given)).toBe(`"${HEX}"`);
  });

  it('takes the client form and a multipart ETag (-<parts>, up to 10,000 parts)', () => {
    for (const suffix of ['-1', '-2', '-10000', '-99999']) expect(parseETagArgument(`"${HEX}${suffix}"`)).toBe(`"${HEX}${suffix}"`);
  });

  it('refuses what is not a casket ETag, naming the argument', () => {
    for (const bad of ['', '""', '*', HEX.slice(1), `${HEX}0`, `x${HEX}`, `${HEX}x`, `${HEX.slice(1)}g`, `${HEX}-`, `${HEX}-123456`, `${HEX}-x`, `${HEX}--1`, `""${HEX}""`, `${HEX.slice(32)}`, 'd41d8cd98f00b204e9800998ecf8427e']) {
      expect(() => parseETagArgument(bad), bad).toThrow(new BadArgument(`expected_etag "${bad}" is not a casket ETag: it is the "etag" a read answered, 64 hex digits in quotes.`));
    }
    expect(() => parseETagArgument('nope', 'version_etag')).toThrow(new BadArgument('version_etag "nope" is not a casket ETag: it is the "etag" a read answered, 64 hex digits in quotes.'));
  });
});

describe('unquote', () => {
  it('takes off the quotes around an ETag, and nothing else', () => {
    expect(unquote(`"${HEX}"`)).toBe(HEX);
    expect(unquote(`"${HEX}-2"`)).toBe(`${HEX}-2`);
    expect(unquote(HEX)).toBe(HEX);
    expect(unquote('"a"b"')).toBe('a"b');
    expect(unquote('a"')).toBe('a');
    expect(unquote('"a')).toBe('a');
  });
});
