/**
 * The body of a POST Object request (https://docs.aws.amazon.com/AmazonS3/latest/API/RESTObjectPOST.html):
 * multipart/form-data (RFC 7578), streamed with busboy — never buffered whole.
 * The fields come first; the part named `file` is the object and must be
 * the last field ("Any fields below it are ignored"). The form is read up
 * to the file and handed over with the file part still streaming, so the
 * signature, the policy and the guard all decide before the object's bytes
 * are read.
 *
 * Clients send fields either as plain parts or as parts with a filename
 * (Python's `requests` with `files=` names every part after itself, as
 * ceph/s3-tests do): any part not named `file` is a field either way.
 *
 * Limits: the fields before the file total at most 20 KB
 * (MaxPostPreDataLengthExceeded, as AWS answers); a body that is not
 * multipart/form-data is 412 PreconditionFailed with AWS's own condition
 * text; a form without a file part is 400 InvalidArgument.
 */
import type { IncomingMessage } from 'node:http';
import { finished, type Readable } from 'node:stream';
import busboy from 'busboy';
import { S3Error } from '../vocabulary/errors.js';

/** Fields before the file, names and values together (AWS: 20 KB). */
export const MAX_PRE_DATA = 20 * 1024;

export interface PostForm {
  /** Field names lowercased (AWS matches them case-insensitively); values as sent, UTF-8 text. The first of a repeated field counts. */
  fields: Map<string, string>;
  /** The file part's filename (its last path segment), for `${filename}` in the key. */
  filename: string;
  /** The file part's bytes, with backpressure; errors (IncompleteBody) when the request breaks off before the part ends. */
  file: Readable;
  /**
   * Lets the rest of the request go — the file part once the write is
   * done or refused, the closing boundary, fields after the file — reading
   * at most `maxBytes` more, so a small form keeps its connection and a
   * large refused one is closed instead of received.
   */
  discard(maxBytes: number): Promise<void>;
}

function notMultipart(): S3Error {
  return new S3Error('PreconditionFailed', { fields: { Condition: 'Bucket POST must be of the enclosure-type multipart/form-data' } });
}

function tooLarge(): S3Error {
  return new S3Error('MaxPostPreDataLengthExceeded', { fields: { MaxPostPreDataLength: MAX_PRE_DATA } });
}

export function readPostForm(body: Readable, contentType: string | undefined): Promise<PostForm> {
  return new Promise<PostForm>((resolve, reject) => {
    if (contentType === undefined || !/^multipart\/form-data\s*;/i.test(contentType)) {
      reject(notMultipart());
      return;
    }
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: { 'content-type': contentType }, limits: { fieldSize: MAX_PRE_DATA, fieldNameSize: MAX_PRE_DATA } });
    } catch {
      reject(notMultipart());
      return;
    }
    const fields = new Map<string, string>();
    const pending: Promise<void>[] = [];
    let preData = 0;
    let settled = false;
    let file: Readable | undefined;
    let parsed = false;
    const fail = (e: unknown) => {
      if (settled) return;
      settled = true;
      reject(e);
    };
    const addField = (name: string, value: string) => {
      preData += Buffer.byteLength(name) + Buffer.byteLength(value);
      if (preData > MAX_PRE_DATA) return fail(tooLarge());
      const lower = name.toLowerCase();
      if (!fields.has(lower)) fields.set(lower, value);
    };
    parser.on('field', (name, value, info) => {
      if (file || settled) return;
      if (info.valueTruncated || info.nameTruncated) return fail(tooLarge());
      addField(name, value);
    });
    parser.on('file', (name, stream, info) => {
      // A part fails when the request breaks off (brokeOff below); its
      // reader, if any, hears it through its own listener. One that nobody
      // reads (a refused upload, a part after the file) must not take the
      // process down with an unheard 'error'.
      stream.on('error', () => {});
      if (file || settled) {
        stream.resume();
        return;
      }
      if (name.toLowerCase() !== 'file') {
        // A field sent as a file part (requests' files=): read it as text, within the same limit.
        const chunks: Buffer[] = [];
        let size = 0;
        pending.push(
          new Promise<void>((done) => {
            stream.on('data', (chunk: Buffer) => {
              size += chunk.length;
              if (size + preData > MAX_PRE_DATA) {
                fail(tooLarge());
                stream.resume();
                return;
              }
              chunks.push(chunk);
            });
            stream.on('end', () => {
              addField(name, Buffer.concat(chunks).toString('utf8'));
              done();
            });
            stream.on('error', () => done());
          }),
        );
        return;
      }
      file = stream;
      // The fields before the file are complete once their parts ended.
      void Promise.all(pending).then(() => {
        if (settled) {
          stream.resume();
          return;
        }
        settled = true;
        resolve({ fields, filename: info.filename ?? '', file: stream, discard });
      });
    });
    parser.on('error', (e) => {
      const err = new S3Error('MalformedPOSTRequest', { fields: { Cause: (e as Error).message } });
      if (!settled) return fail(err);
      if (file && !file.readableEnded) file.destroy(err);
    });
    parser.on('close', () => {
      parsed = true;
      if (!file) fail(new S3Error('InvalidArgument', { message: 'POST requires exactly one file upload per request.', fields: { ArgumentName: 'file', ArgumentValue: '0' } }));
    });
    // A request that breaks off (client gone, body timeout) never ends the
    // parser: the file part errors instead, so its payload fails
    // IncompleteBody and nothing is committed (auth/payload.ts).
    const brokeOff = () => {
      const err = new S3Error('IncompleteBody', 'The request ended before the form did.');
      if (!settled) fail(err);
      else if (file && !file.readableEnded) file.destroy(err);
    };
    finished(body, { writable: false }, (error) => {
      if (error || !body.readableEnded) brokeOff();
    });
    // The body timeout answers first and then closes the socket
    // (body-timeout.ts): Node no longer aborts a request whose answer is
    // out, so the socket's close is the only word the body gets.
    const socket = (body as Partial<IncomingMessage>).socket;
    const socketClosed = () => {
      if (body.readableEnded) return;
      brokeOff();
      // Ends everything still waiting on the body (discard below, the handler).
      body.destroy();
    };
    socket?.once('close', socketClosed);
    body.once('end', () => socket?.off('close', socketClosed));

    function discard(maxBytes: number): Promise<void> {
      return new Promise<void>((done) => {
        if (parsed || body.readableEnded || body.destroyed) return done();
        let read = 0;
        const stop = () => {
          body.off('data', count);
          parser.off('close', stop);
          body.off('close', stop);
          done();
        };
        const count = (chunk: Buffer) => {
          read += chunk.length;
          // Stryker disable next-line EqualityOperator: one byte either way of a bound
          if (read > maxBytes) {
            body.unpipe(parser);
            body.pause();
            stop();
          }
        };
        body.on('data', count);
        parser.once('close', stop);
        body.once('close', stop);
        if (file && !file.readableEnded) file.resume();
      });
    }

    body.pipe(parser);
  });
}
