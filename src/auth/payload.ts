/**
 * A request body on its way in: decoded (aws-chunked removed), hashed once,
 * and checked against everything the request declared — x-amz-content-sha256,
 * Content-MD5, x-amz-checksum-* (header or trailer), x-amz-decoded-content-length
 * / Content-Length — before the stream is allowed to end.
 *
 * Specs followed:
 * - PutObject request headers, https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html
 * - "Checking object integrity", https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity.html
 * - aws-chunked: see aws-chunked.ts; SigV4 payload modes: see sigv4.ts.
 * - Content-MD5: RFC 1864.
 *
 * Contract (backends/types.ts Payload): `stream` yields the object bytes and
 * ERRORS with an S3Error — never ends — when any check fails; the failure is
 * raised from the Transform's flush, i.e. before 'end', so stream.pipeline()
 * consumers never see success. `digest()` is valid once it ended clean.
 *
 * Errors (S3 wording): literal payload hash mismatch → XAmzContentSHA256Mismatch;
 * Content-MD5 mismatch → BadDigest; checksum mismatch → BadDigest "The CRC32 you
 * specified did not match the calculated checksum."; short body, length mismatch,
 * client disconnect → IncompleteBody; malformed Content-MD5 → InvalidDigest;
 * malformed checksum value → BadDigest too (vocabulary/checksums.ts says why).
 *
 * The checksum the request carried (or the one `checksum` asks for, computed
 * when the request carried none) is part of the digest, so the backend stores
 * it with the object or part (GetObject with x-amz-checksum-mode answers it).
 * Composite multipart checksums are the backend's business.
 */
import { createHash, type Hash } from 'node:crypto';
import { finished, Transform, type Readable, type TransformCallback } from 'node:stream';
import type { Payload, PayloadDigest } from '../backends/types.js';
import { S3Error } from '../vocabulary/errors.js';
import { AwsChunkedParser } from './aws-chunked.js';
import {
  checksumAlgorithmOf,
  checksumHeaderName,
  checksumMismatch,
  checksumsEqual,
  createChecksum,
  parseBase64Digest,
  parseChecksumAlgorithmName,
  parseChecksumValue,
  type Checksum,
  type ChecksumAlgorithm,
} from '../vocabulary/checksums.js';
import {
  STREAMING_SIGNED,
  STREAMING_SIGNED_TRAILER,
  STREAMING_UNSIGNED_TRAILER,
  UNSIGNED_PAYLOAD,
  type AuthResult,
  type ChunkSigning,
  type PayloadMode,
} from './sigv4.js';

/** S3's largest single PUT (and largest part): 5 GiB. */
export const MAX_PUT_SIZE = 5 * 1024 ** 3;

export interface PayloadOptions {
  /** null: anonymous, treated as unsigned (a literal x-amz-content-sha256 is still checked). */
  auth: AuthResult | null;
  /** Lowercased request headers. */
  headers: Record<string, string>;
  /** Compute MD5 even without Content-MD5 (UploadPart needs it for the part ETag). */
  md5?: boolean;
  /** Largest body accepted; default 5 GiB. */
  maxSize?: number;
  /** Smallest body accepted (a POST policy's content-length-range): EntityTooSmall below it, at the body's end. */
  minSize?: number;
  /**
   * The checksum the body must have (an UploadPart of an upload created with
   * x-amz-checksum-algorithm): computed when the request carried none; a
   * request carrying another algorithm's is refused before its body.
   */
  checksum?: ChecksumAlgorithm;
  /**
   * x-amz-checksum-* headers describe something else than this body (the
   * object a CompleteMultipartUpload makes): not checked against it.
   */
  ignoreChecksumHeaders?: boolean;
}

/** Everything the headers say about the body, validated. */
interface PayloadPlan {
  mode: PayloadMode;
  chunked: boolean;
  chunkSigning?: ChunkSigning;
  /** Decoded length the body must have, when known. */
  expectedLength?: number;
  declaredSha256?: Buffer;
  contentMd5?: Buffer;
  /** Checksum from an x-amz-checksum-* header. */
  headerChecksum?: { algorithm: ChecksumAlgorithm; expected: Buffer };
  /** Checksum announced in x-amz-trailer, to be read from the trailers. */
  trailerChecksum?: ChecksumAlgorithm;
  /** Checksum computed (not verified: nothing declared it) for the digest. */
  computedChecksum?: ChecksumAlgorithm;
}

/**
 * Throws early — before any body byte is read — for what the headers alone
 * show to be wrong. createPayload calls it too.
 */
export function validatePayloadHeaders(headers: Record<string, string>, auth: AuthResult | null, maxSize: number = MAX_PUT_SIZE): void {
  planPayload(headers, auth, maxSize);
}

function planPayload(headers: Record<string, string>, auth: AuthResult | null, maxSize: number, options: Pick<PayloadOptions, 'checksum' | 'ignoreChecksumHeaders'> = {}): PayloadPlan {
  const mode = auth?.payloadMode ?? anonymousMode(headers['x-amz-content-sha256']);
  const awsChunkedEncoding = headers['content-encoding']?.split(',').some((e) => e.trim().toLowerCase() === 'aws-chunked') ?? false;
  // A STREAMING-* payload is aws-chunked; so is an UNSIGNED-PAYLOAD one that
  // says so in Content-Encoding (the SDK for Java v2 sends that). A literal
  // SHA-256 signs the body as sent: `Content-Encoding: aws-chunked` beside it
  // frames nothing, and is only dropped from the stored Content-Encoding, as
  // AWS does (ceph/s3-tests test_object_content_encoding_aws_chunked).
  const chunked = mode.startsWith('streaming-') || (mode !== 'literal' && awsChunkedEncoding);
  const plan: PayloadPlan = { mode, chunked };
  if (auth?.chunkSigning) plan.chunkSigning = auth.chunkSigning;

  // Lengths.
  const lengthHeader = chunked ? 'x-amz-decoded-content-length' : 'content-length';
  const lengthText = headers[lengthHeader];
  if (lengthText !== undefined) {
    if (!/^\d+$/.test(lengthText.trim())) throw new S3Error('InvalidArgument', `Invalid ${lengthHeader} header.`);
    // Number() ignores the same surrounding whitespace as trim().
    plan.expectedLength = Number(lengthText);
  } else if (chunked) {
    throw new S3Error('MissingContentLength', 'You must provide the x-amz-decoded-content-length header with an aws-chunked body.');
  }
  if (plan.expectedLength !== undefined && plan.expectedLength > maxSize) {
    throw new S3Error('EntityTooLarge', { fields: { ProposedSize: plan.expectedLength, MaxSizeAllowed: maxSize } });
  }

  // Declared SHA-256 (literal payload mode).
  const declared = auth ? auth.declaredSha256 : literalHash(headers['x-amz-content-sha256']);
  if (declared !== undefined) plan.declaredSha256 = Buffer.from(declared, 'hex');

  // Content-MD5.
  const md5 = headers['content-md5'];
  if (md5 !== undefined) {
    const parsed = parseBase64Digest(md5, 16);
    if (!parsed) throw new S3Error('InvalidDigest');
    plan.contentMd5 = parsed;
  }

  // x-amz-checksum-<alg> headers: at most one.
  const checksumHeaders = options.ignoreChecksumHeaders ? [] : Object.keys(headers).filter((name) => checksumAlgorithmOf(name) !== undefined);
  if (checksumHeaders.length > 1) {
    throw new S3Error('InvalidRequest', 'Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.');
  }
  if (checksumHeaders.length === 1) {
    const algorithm = checksumAlgorithmOf(checksumHeaders[0]!)!;
    plan.headerChecksum = { algorithm, expected: parseChecksumValue(algorithm, headers[checksumHeaders[0]!]!) };
  }

  // x-amz-trailer: the checksum that will follow the body.
  const trailer = headers['x-amz-trailer'];
  if (trailer !== undefined && trailer.trim() !== '') {
    // checksumAlgorithmOf reads header names in any case.
    const names = trailer.split(',').map((n) => n.trim()).filter((n) => n !== '');
    const algorithms = names.map((n) => checksumAlgorithmOf(n));
    if (algorithms.some((a) => a === undefined)) {
      throw new S3Error('InvalidRequest', 'The value specified in the x-amz-trailer header is not supported');
    }
    if (algorithms.length > 1 || plan.headerChecksum) {
      throw new S3Error('InvalidRequest', 'Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.');
    }
    if (!chunked) throw new S3Error('InvalidRequest', 'x-amz-trailer is only allowed with an aws-chunked body.');
    plan.trailerChecksum = algorithms[0]!;
  }
  // A *-TRAILER mode without x-amz-trailer: trailers that arrive are parsed
  // (and signed ones verified) but no checksum is checked against them.

  // x-amz-sdk-checksum-algorithm must agree with the value actually sent.
  const sdkAlgorithm = headers['x-amz-sdk-checksum-algorithm'];
  const sent = plan.headerChecksum?.algorithm ?? plan.trailerChecksum;
  if (sdkAlgorithm !== undefined && sent !== undefined && parseChecksumAlgorithmName(sdkAlgorithm) !== sent) {
    throw new S3Error('InvalidRequest', 'Value for x-amz-sdk-checksum-algorithm header is invalid.');
  }
  // "When you send this header, there must be a corresponding x-amz-checksum-
  // algorithm or x-amz-trailer header sent. Otherwise, Amazon S3 fails the
  // request with the HTTP status code 400 Bad Request" (API_PutObject,
  // ChecksumAlgorithm). CompleteMultipartUpload's checksum headers describe
  // the object, not its XML body: not a checksum of this body to look for.
  if (sdkAlgorithm !== undefined && sent === undefined && !options.ignoreChecksumHeaders) {
    throw new S3Error('InvalidRequest', 'x-amz-sdk-checksum-algorithm specified, but no corresponding x-amz-checksum-* or x-amz-trailer headers were found.');
  }
  if (options.checksum !== undefined) {
    if (sent !== undefined && sent !== options.checksum) {
      throw new S3Error('InvalidRequest', `Checksum Type mismatch occurred, expected checksum Type: ${options.checksum}, actual checksum Type: ${sent}`);
    }
    // Only a fallback: the checksum sent, when there is one, is that same algorithm.
    plan.computedChecksum = options.checksum;
  }
  return plan;
}

function literalHash(value: string | undefined): string | undefined {
  const v = value?.trim();
  return v !== undefined && /^[0-9a-fA-F]{64}$/.test(v) ? v : undefined;
}

/** Payload mode of an anonymous request: what it declares, but nothing signed can be verified. */
function anonymousMode(value: string | undefined): PayloadMode {
  switch (value?.trim()) {
    case undefined:
    case UNSIGNED_PAYLOAD:
      return 'unsigned';
    case STREAMING_SIGNED:
    case STREAMING_SIGNED_TRAILER:
      throw new S3Error('AccessDenied', 'A signed streaming payload needs a signed request.');
    case STREAMING_UNSIGNED_TRAILER:
      return 'streaming-unsigned-trailer';
  }
  return literalHash(value) !== undefined ? 'literal' : 'unsigned';
}

/**
 * Wraps a request body (e.g. Node's IncomingMessage) into a verifying
 * Payload. Throws synchronously for header problems (as validatePayloadHeaders).
 * The source is piped with backpressure; if the consumer destroys
 * payload.stream early, the source is unpiped and left paused — the HTTP layer
 * decides whether to drain it or close the connection.
 */
export function createPayload(source: Readable, options: PayloadOptions): Payload {
  const plan = planPayload(options.headers, options.auth, options.maxSize ?? MAX_PUT_SIZE, options);
  const stream = new VerifyingStream(plan, options.md5 === true || plan.contentMd5 !== undefined, options.maxSize ?? MAX_PUT_SIZE, options.minSize ?? 0);

  // A source that errors or closes before its end (client disconnected) is an incomplete body.
  finished(source, { writable: false }, (error) => {
    if (error && !stream.destroyed) {
      source.unpipe(stream);
      stream.destroy(new S3Error('IncompleteBody', { message: S3_INCOMPLETE, fields: { Cause: error.message } }));
    }
  });
  // A payload.stream destroyed early (closed or errored) is unpiped by pipe()
  // itself, which pauses the source when it has no other destination.
  source.pipe(stream);

  return {
    stream,
    digest: () => stream.result(),
  };
}

const S3_INCOMPLETE = 'You did not provide the number of bytes specified by the Content-Length HTTP header.';

class VerifyingStream extends Transform {
  private readonly sha256: Hash = createHash('sha256');
  private readonly md5: Hash | undefined;
  private readonly checksum: Checksum | undefined;
  private readonly checksumAlgorithm: ChecksumAlgorithm | undefined;
  private readonly parser: AwsChunkedParser | undefined;
  private size = 0;
  private done: PayloadDigest | undefined;
  private readonly accept = (bytes: Buffer): void => {
    this.size += bytes.length;
    if (this.plan.expectedLength !== undefined && this.size > this.plan.expectedLength) {
      throw new S3Error('IncompleteBody', this.plan.chunked ? 'The decoded body is longer than x-amz-decoded-content-length.' : 'The body is longer than Content-Length.');
    }
    if (this.size > this.maxSize) throw new S3Error('EntityTooLarge', { fields: { MaxSizeAllowed: this.maxSize } });
    this.sha256.update(bytes);
    this.md5?.update(bytes);
    this.checksum?.update(bytes);
    this.push(bytes);
  };

  constructor(
    private readonly plan: PayloadPlan,
    computeMd5: boolean,
    private readonly maxSize: number,
    private readonly minSize: number,
  ) {
    super();
    if (computeMd5) this.md5 = createHash('md5');
    this.checksumAlgorithm = plan.headerChecksum?.algorithm ?? plan.trailerChecksum ?? plan.computedChecksum;
    // SHA-256 is computed anyway: an x-amz-checksum-sha256 reuses it.
    if (
      this.checksumAlgorithm !== undefined &&
      // Stryker disable next-line ConditionalExpression: a sha256 Checksum would compute the digest this.sha256 already has; only the hashing twice differs
      this.checksumAlgorithm !== 'sha256'
    ) {
      this.checksum = createChecksum(this.checksumAlgorithm);
    }
    if (plan.chunked) {
      // sigv4 gives chunkSigning with both streaming-signed modes, and only with them.
      this.parser = new AwsChunkedParser({ signing: plan.chunkSigning, signedTrailer: plan.mode === 'streaming-signed-trailer' });
    }
  }

  result(): PayloadDigest {
    if (!this.done) throw new Error('payload digest read before the body ended clean');
    return this.done;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      if (this.parser) this.parser.feed(chunk, this.accept);
      else this.accept(chunk);
      callback();
    } catch (error) {
      callback(error as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    try {
      this.verify();
      callback();
    } catch (error) {
      callback(error as Error);
    }
  }

  private verify(): void {
    const { plan } = this;
    this.parser?.end();
    if (plan.expectedLength !== undefined && this.size !== plan.expectedLength) {
      throw new S3Error('IncompleteBody', {
        message: plan.chunked
          ? 'The decoded body length does not match x-amz-decoded-content-length.'
          : S3_INCOMPLETE,
        fields: { ExpectedLength: plan.expectedLength, ReceivedLength: this.size },
      });
    }
    if (this.size < this.minSize) throw new S3Error('EntityTooSmall', { fields: { ProposedSize: this.size, MinSizeAllowed: this.minSize } });
    const sha256 = this.sha256.digest();
    if (plan.declaredSha256 && !sha256.equals(plan.declaredSha256)) {
      throw new S3Error('XAmzContentSHA256Mismatch', {
        fields: { ClientComputedContentSHA256: plan.declaredSha256.toString('hex'), S3ComputedContentSHA256: sha256.toString('hex') },
      });
    }
    const md5 = this.md5?.digest();
    if (plan.contentMd5 && md5 && !md5.equals(plan.contentMd5)) {
      throw new S3Error('BadDigest', 'The Content-MD5 you specified did not match what we received.');
    }
    let checksum: PayloadDigest['checksum'];
    if (this.checksumAlgorithm !== undefined) {
      const algorithm = this.checksumAlgorithm;
      const actual = algorithm === 'sha256' ? sha256 : this.checksum!.digest();
      checksum = { algorithm, value: actual };
      let expected = plan.headerChecksum?.expected;
      if (!expected && plan.trailerChecksum !== undefined) {
        const value = this.parser?.trailers.get(checksumHeaderName(algorithm));
        if (value === undefined) {
          throw new S3Error('IncompleteBody', `The request body terminated unexpectedly (missing trailing header ${checksumHeaderName(algorithm)}).`);
        }
        expected = parseChecksumValue(algorithm, value);
      }
      if (expected && !checksumsEqual(actual, expected)) throw checksumMismatch(algorithm);
    }
    this.done = { sha256, size: this.size, ...(md5 && { md5 }), ...(checksum && { checksum }) };
  }
}
