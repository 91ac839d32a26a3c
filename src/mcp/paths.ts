/**
 * Tool arguments that name objects and versions: a path is `bucket/key` or
 * `s3://bucket/key` (the reference filesystem server's tools take a path;
 * here the first segment is the bucket). ETags as casket shows them
 * (docs/design.md §2): 64 hex digits, quoted or not, optionally the `-1` client form
 * or a multipart `-<parts>` suffix.
 */

export class BadArgument extends Error {}

export interface ObjectPath {
  bucket: string;
  /** '' when the path names only the bucket. */
  key: string;
}

export function parsePath(path: string): ObjectPath {
  const rest = path.trim().replace(/^s3:\/\//, '').replace(/^\/+/, '');
  const slash = rest.indexOf('/');
  // Stryker disable next-line EqualityOperator: rest has lost its leading slashes, so a slash is never at 0
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  // Stryker disable next-line EqualityOperator: as above
  const key = slash < 0 ? '' : rest.slice(slash + 1);
  if (bucket === '') throw new BadArgument(`"${path}" names no bucket: paths are bucket/key (or s3://bucket/key).`);
  return { bucket, key };
}

export function requireFile(path: string): ObjectPath & { key: string } {
  const p = parsePath(path);
  if (p.key === '' || p.key.endsWith('/')) throw new BadArgument(`"${path}" names no file: paths are bucket/key (or s3://bucket/key).`);
  return p;
}

export function showPath(p: ObjectPath): string {
  return `${p.bucket}/${p.key}`;
}

const ETAG = /^"?([0-9a-f]{64}(?:-\d{1,5})?)"?$/;

/** The ETag an argument names, quoted as casket shows it; BadArgument when it is not one. */
export function parseETagArgument(value: string, name = 'expected_etag'): string {
  const m = ETAG.exec(value.trim().toLowerCase());
  if (!m) throw new BadArgument(`${name} "${value}" is not a casket ETag: it is the "etag" a read answered, 64 hex digits in quotes.`);
  return `"${m[1]}"`;
}

export function unquote(etag: string): string {
  return etag.replace(/^"|"$/g, '');
}
