/**
 * How a PutObject body goes on the wire: the three forms S3 clients use
 * (../shared/CLIENTS.md), so the bench measures each path casket takes.
 * - signed: `x-amz-content-sha256: <hex SHA-256>` (s3cmd, boto3 over HTTP,
 *   SDK v3 with a Buffer body);
 * - unsigned: `x-amz-content-sha256: UNSIGNED-PAYLOAD` with Content-Length
 *   (rclone, minio-js over HTTPS);
 * - chunked-crc32: what SDK v3 sends for a stream body (and boto3 over HTTPS):
 *   `STREAMING-UNSIGNED-PAYLOAD-TRAILER`, `Content-Encoding: aws-chunked`,
 *   `x-amz-decoded-content-length`, `x-amz-trailer: x-amz-checksum-crc32`,
 *   body `<hex len>\r\n<data>\r\n ... 0\r\nx-amz-checksum-crc32:<b64>\r\n\r\n`
 *   in 64 KiB chunks, sent with Transfer-Encoding: chunked and no
 *   Content-Length, as the SDK does over HTTP.
 * Each encoding is built once per pooled body and cached, so sending it costs
 * the load generator a write, not a CRC or a copy per request.
 */
import * as zlib from 'node:zlib';

export const PAYLOAD_MODES = ['signed', 'unsigned', 'chunked-crc32'];
const CHUNK = 64 * 1024;

export function checkPayloadModes(modes) {
  for (const m of modes) if (!PAYLOAD_MODES.includes(m)) throw new Error(`unknown payload mode ${m} (${PAYLOAD_MODES.join(', ')})`);
  // zlib.crc32 is Node ≥ 20.15 / 22.2; the package's engines floor (20.19) has it.
  if (modes.includes('chunked-crc32') && typeof zlib.crc32 !== 'function') throw new Error(`chunked-crc32 needs zlib.crc32 (Node ≥ 20.15), this is ${process.version}`);
}

/** base64 of the big-endian CRC32 of buf: the value of x-amz-checksum-crc32. */
export function crc32Base64(buf) {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(zlib.crc32(buf) >>> 0);
  return out.toString('base64');
}

/** The aws-chunked encoding of buf with a CRC32 trailer (unsigned chunks, no chunk signatures). */
export function awsChunked(buf, chunkSize = CHUNK) {
  const parts = [];
  for (let off = 0; off < buf.length; off += chunkSize) {
    const data = buf.subarray(off, Math.min(buf.length, off + chunkSize));
    parts.push(Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`0\r\nx-amz-checksum-crc32:${crc32Base64(buf)}\r\n\r\n`));
  return Buffer.concat(parts);
}

const cache = new WeakMap();

/**
 * The request options that send `b` ({buf, hash} from the bench's body pool)
 * in `mode`: {body, payloadHash, headers (signed), chunked?}. Cached per body.
 */
export function encodePayload(b, mode) {
  let byMode = cache.get(b);
  if (!byMode) cache.set(b, (byMode = new Map()));
  let enc = byMode.get(mode);
  if (enc) return enc;
  if (mode === 'signed') enc = { body: b.buf, payloadHash: b.hash, headers: {} };
  else if (mode === 'unsigned') enc = { body: b.buf, payloadHash: 'UNSIGNED-PAYLOAD', headers: {} };
  else if (mode === 'chunked-crc32') {
    enc = {
      body: awsChunked(b.buf),
      payloadHash: 'STREAMING-UNSIGNED-PAYLOAD-TRAILER',
      chunked: true,
      headers: { 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(b.buf.length), 'x-amz-trailer': 'x-amz-checksum-crc32' },
    };
  } else if (mode === 'chunked-crc32-length') {
    // The same aws-chunked body framed with its exact Content-Length instead:
    // tried on an upstream that refuses the chunked transfer, to tell a
    // refused framing from a refused payload form (and to fall back to it).
    enc = { ...encodePayload(b, 'chunked-crc32'), chunked: false };
  } else throw new Error(`unknown payload mode ${mode}`);
  byMode.set(mode, enc);
  return enc;
}
