/**
 * User metadata values on their way to and from an upstream, kept ASCII.
 *
 * casket holds a metadata value as the bytes the client sent (Node's latin1
 * strings: one char per byte), and answers them back byte-exact. Upstreams
 * disagree on non-ASCII header bytes under SigV4: Ceph RGW signs the raw
 * bytes, moto (like AWS, whose SDKs fail on it) decodes them as ISO-8859-1
 * and signs their UTF-8 — so no signature over non-ASCII bytes satisfies both.
 * casket therefore sends a non-ASCII value upstream as an RFC 2047 encoded
 * word (`=?UTF-8?B?<base64 of the bytes>?=`), the form AWS documents for
 * non-ASCII metadata ("Working with object metadata",
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html),
 * and decodes such a word (B or Q) read back from the upstream.
 *
 * Known gap: a value that a client itself sent as an encoded word is also
 * decoded on its way back through the s3 backend (AWS decodes those on
 * input as well).
 */

// eslint-disable-next-line no-control-regex
const PLAIN = /^[\x20-\x7e\t]*$/;
const ENCODED_WORD = /^=\?utf-8\?([bq])\?([^?]*)\?=$/i;

/** A metadata value (byte string) as an ASCII header value for the upstream. */
export function toUpstreamMetadataValue(value: string): string {
  return PLAIN.test(value) ? value : `=?UTF-8?B?${Buffer.from(value, 'latin1').toString('base64')}?=`;
}

/** A metadata value read from the upstream, back to the byte string the client sent. */
export function fromUpstreamMetadataValue(value: string): string {
  const m = ENCODED_WORD.exec(value.trim());
  if (!m) return value;
  const text = m[2]!;
  if (m[1]!.toLowerCase() === 'b') return Buffer.from(text, 'base64').toString('latin1');
  // Q: '_' is a space, =XX a byte (RFC 2047 §4.2).
  return text.replace(/_/g, ' ').replace(/=([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}
