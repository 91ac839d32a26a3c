/**
 * Streaming decoder for `Content-Encoding: aws-chunked` request bodies, with
 * chunk-signature and trailer-signature verification.
 *
 * Specs followed:
 * - "Signature Calculations for the Authorization Header: Transferring Payload
 *   in Multiple Chunks (Chunked Upload)",
 *   https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming.html
 * - "Signature calculations for trailing headers (chunked uploads)",
 *   https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-streaming-trailers.html
 *
 * Wire form:
 *   <hex-size>[;chunk-signature=<64hex>]\r\n<data>\r\n   (repeated)
 *   0[;chunk-signature=<64hex>]\r\n
 *   [<trailer-name>:<value>\r\n]*
 *   [x-amz-trailer-signature:<64hex>\r\n]
 *   \r\n
 *
 * Chunk n's signature is HMAC(signingKey, "AWS4-HMAC-SHA256-PAYLOAD\n<date>\n<scope>\n
 * <signature n-1>\n<sha256("")>\n<sha256(data n)>"), chained from the seed (the
 * request's own) signature; the trailer signature is HMAC(signingKey,
 * "AWS4-HMAC-SHA256-TRAILER\n<date>\n<scope>\n<final chunk signature>\n
 * <sha256 of the trailer lines, each followed by \n>").
 *
 * Data bytes are passed on as they arrive (never more than the input buffer at
 * hand is held); a chunk whose signature fails is reported when its end is
 * reached, so consumers must commit only after the stream ends clean — which
 * is the Payload contract anyway.
 *
 * Limits as MinIO's: a size line or trailer line of at most 4 KiB, a chunk of
 * at most 16 MiB, 16 KiB of trailers in all.
 *
 * Error wording: S3 answers every framing error (bad size, missing CRLF,
 * truncation) with 400 IncompleteBody "The request body terminated
 * unexpectedly"; casket appends what was wrong. A bad chunk or trailer
 * signature is 403 SignatureDoesNotMatch.
 *
 * Leniency (deliberate): the final empty line after the trailers (or after the
 * last chunk) may be missing — the body may simply end at a line boundary; and
 * extra CR/LF after the end is ignored. Chunk sizes below S3's 8 KiB minimum
 * for non-final chunks are accepted (S3 answers InvalidChunkSizeError).
 * Known gap: a bare LF line terminator inside the trailer section is accepted,
 * but a bare LF after a chunk size or chunk data is not.
 */
import { createHash, type Hash } from 'node:crypto';
import { S3Error } from '../vocabulary/errors.js';
import { hmac, signaturesEqual, type ChunkSigning } from './sigv4.js';

export const MAX_CHUNK_LINE = 4 * 1024;
export const MAX_CHUNK_SIZE = 16 * 1024 * 1024;
export const MAX_TRAILER_BYTES = 16 * 1024;
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const SIGNATURE = /^[0-9a-fA-F]{64}$/;
const TRAILER_SIGNATURE = 'x-amz-trailer-signature';

export interface AwsChunkedOptions {
  /** Verify every chunk-signature (STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]). */
  signing?: ChunkSigning;
  /** Require and verify x-amz-trailer-signature (STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER); needs `signing`. */
  signedTrailer?: boolean;
  /** Largest chunk accepted; default 16 MiB. */
  maxChunkSize?: number;
}

function malformed(detail: string): S3Error {
  return new S3Error('IncompleteBody', `The request body terminated unexpectedly (${detail})`);
}

type State = 'size-line' | 'data' | 'data-crlf' | 'trailer-line' | 'done';

/**
 * A push parser: feed it the encoded body piece by piece; it calls `onData`
 * with decoded bytes (subarrays of the input, never copies) and throws S3Error
 * on the first problem. Call end() when the input ends.
 */
export class AwsChunkedParser {
  /** Trailers received (names lowercased), complete once end() returned. */
  readonly trailers = new Map<string, string>();

  private state: State = 'size-line';
  private line: Buffer[] = [];
  private lineLength = 0;
  private remaining = 0;
  private crlfSeen = 0;
  private chunkHash: Hash | undefined;
  private chunkSignature: string | undefined;
  private previousSignature: string | undefined;
  private trailerBytes = 0;
  private trailerLines: string[] = [];
  private trailerSignature: string | undefined;
  private readonly signing: ChunkSigning | undefined;
  private readonly signedTrailer: boolean;
  private readonly maxChunkSize: number;

  constructor(options: AwsChunkedOptions = {}) {
    this.signing = options.signing;
    this.signedTrailer = options.signedTrailer ?? false;
    this.maxChunkSize = options.maxChunkSize ?? MAX_CHUNK_SIZE;
    if (this.signedTrailer && !this.signing) throw new Error('signedTrailer needs signing');
    this.previousSignature = options.signing?.seedSignature.toLowerCase();
  }

  feed(input: Buffer, onData: (bytes: Buffer) => void): void {
    let offset = 0;
    while (offset < input.length) {
      switch (this.state) {
        case 'size-line':
        case 'trailer-line': {
          const line = this.takeLine(input, offset);
          if (line === undefined) return; // need more input
          offset = line.next;
          if (this.state === 'size-line') this.onSizeLine(line.text);
          else this.onTrailerLine(line.text);
          break;
        }
        case 'data': {
          const n = Math.min(this.remaining, input.length - offset);
          const bytes = input.subarray(offset, offset + n);
          offset += n;
          this.remaining -= n;
          this.chunkHash?.update(bytes);
          onData(bytes);
          if (this.remaining === 0) this.state = 'data-crlf';
          break;
        }
        case 'data-crlf': {
          const expected = this.crlfSeen === 0 ? 0x0d : 0x0a;
          if (input[offset] !== expected) throw malformed('chunk data not followed by CRLF');
          offset++;
          if (++this.crlfSeen === 2) {
            this.crlfSeen = 0;
            this.endOfChunk();
            this.state = 'size-line';
          }
          break;
        }
        case 'done': {
          const b = input[offset];
          if (b !== 0x0d && b !== 0x0a) throw malformed('data after the final chunk');
          offset++;
          break;
        }
      }
    }
  }

  /** Call at end of input: throws when the body was cut short or the trailer signature fails. */
  end(): void {
    if (this.state === 'trailer-line' && this.lineLength === 0) {
      // Lenient: the body ended at a line boundary without the closing empty line.
      this.finishTrailers();
      this.state = 'done';
    }
    if (this.state !== 'done') throw malformed('body ended before the final chunk');
  }

  /** Collects one line (terminated by LF) across inputs. */
  private takeLine(input: Buffer, offset: number): { text: string; next: number } | undefined {
    const lf = input.indexOf(0x0a, offset);
    const end = lf < 0 ? input.length : lf;
    this.lineLength += end - offset;
    if (this.lineLength > MAX_CHUNK_LINE + 1) throw malformed('line longer than 4 KiB');
    if (this.state === 'trailer-line') {
      this.trailerBytes += end - offset + (lf < 0 ? 0 : 1);
      if (this.trailerBytes > MAX_TRAILER_BYTES) throw malformed('trailers longer than 16 KiB');
    }
    if (lf < 0) {
      this.line.push(input.subarray(offset));
      return undefined;
    }
    this.line.push(input.subarray(offset, lf));
    // At most 4 KiB: copying it costs nothing worth a special case.
    let bytes = Buffer.concat(this.line);
    this.line = [];
    this.lineLength = 0;
    if (bytes[bytes.length - 1] === 0x0d) bytes = bytes.subarray(0, -1);
    else if (this.state === 'size-line') throw malformed('chunk size line not terminated by CRLF');
    return { text: bytes.toString('latin1'), next: lf + 1 };
  }

  private onSizeLine(text: string): void {
    const [sizeText, ...extensions] = text.split(';');
    const hex = sizeText!.trim();
    if (!/^[0-9a-fA-F]{1,16}$/.test(hex)) throw malformed(`invalid chunk size "${hex.slice(0, 32)}"`);
    const size = parseInt(hex, 16);
    if (size > this.maxChunkSize) throw malformed(`chunk of ${size} bytes exceeds the ${this.maxChunkSize}-byte limit`);

    this.chunkSignature = undefined;
    // chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS value ] ), RFC 9112 §7.1.1;
    // extensions other than chunk-signature are ignored, as that section asks.
    for (const extension of extensions) {
      const [name, ...value] = extension.split('=');
      if (name!.trim().toLowerCase() === 'chunk-signature') this.chunkSignature = value.join('=').trim();
    }
    if (this.signing) {
      if (this.chunkSignature === undefined || !SIGNATURE.test(this.chunkSignature)) {
        throw new S3Error('SignatureDoesNotMatch', 'Missing or malformed chunk-signature in a signed aws-chunked body.');
      }
      this.chunkHash = createHash('sha256');
    }

    if (size === 0) {
      this.endOfChunk();
      this.state = 'trailer-line';
    } else {
      this.remaining = size;
      this.state = 'data';
    }
  }

  private endOfChunk(): void {
    if (!this.signing || !this.chunkHash) return;
    const { signingKey, amzDate, scope } = this.signing;
    const stringToSign = [
      'AWS4-HMAC-SHA256-PAYLOAD',
      amzDate,
      scope,
      this.previousSignature,
      EMPTY_SHA256,
      this.chunkHash.digest('hex'),
    ].join('\n');
    const expected = hmac(signingKey, stringToSign).toString('hex');
    this.chunkHash = undefined;
    // chunkHash is set only after chunkSignature passed SIGNATURE (onSizeLine).
    if (!signaturesEqual(expected, this.chunkSignature!)) {
      throw new S3Error('SignatureDoesNotMatch', {
        message: 'The chunk signature we calculated does not match the signature you provided.',
        fields: { StringToSign: stringToSign, SignatureProvided: this.chunkSignature },
      });
    }
    this.previousSignature = expected;
  }

  private onTrailerLine(text: string): void {
    if (text === '') {
      this.finishTrailers();
      this.state = 'done';
      return;
    }
    const colon = text.indexOf(':');
    const name = text.slice(0, Math.max(colon, 0)).trim().toLowerCase(); // no colon: no name
    if (name === '' || /\s/.test(name)) throw malformed('malformed trailing header');
    const value = text.slice(colon + 1).trim();
    if (name === TRAILER_SIGNATURE) {
      if (this.trailerSignature !== undefined) throw malformed('repeated x-amz-trailer-signature');
      this.trailerSignature = value;
      return;
    }
    if (this.trailerSignature !== undefined) throw malformed('trailing header after x-amz-trailer-signature');
    if (this.trailers.has(name)) throw malformed(`repeated trailing header ${name}`);
    this.trailers.set(name, value);
    this.trailerLines.push(`${text.trimEnd()}\n`);
  }

  private finishTrailers(): void {
    if (!this.signedTrailer || !this.signing) return;
    if (this.trailerSignature === undefined || !SIGNATURE.test(this.trailerSignature)) {
      throw new S3Error('SignatureDoesNotMatch', 'Missing or malformed x-amz-trailer-signature in a signed aws-chunked body.');
    }
    const { signingKey, amzDate, scope } = this.signing;
    const trailerHash = createHash('sha256').update(this.trailerLines.join(''), 'latin1').digest('hex');
    const stringToSign = ['AWS4-HMAC-SHA256-TRAILER', amzDate, scope, this.previousSignature, trailerHash].join('\n');
    const expected = hmac(signingKey, stringToSign).toString('hex');
    if (!signaturesEqual(expected, this.trailerSignature)) {
      throw new S3Error('SignatureDoesNotMatch', {
        message: 'The trailer signature we calculated does not match the signature you provided.',
        fields: { StringToSign: stringToSign, SignatureProvided: this.trailerSignature },
      });
    }
  }
}
