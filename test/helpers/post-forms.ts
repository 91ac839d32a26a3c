/**
 * Browser-form uploads (POST Object) for tests: boto3's
 * generate_presigned_post builds the form (SigV4 with signature_version
 * s3v4, its default SigV2 form without), urllib3 (botocore's own HTTP
 * library) posts it as multipart/form-data with the file last; and a raw
 * multipart writer for what no client sends (tampered fields, a body cut off).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { createInterface } from 'node:readline';
import type { Cred } from './casket.js';
import { cleanEnv, python3 } from './cli-tools.js';

/** One JSON request per stdin line: `presign` → {url, fields}; `post` → {status, headers, body}. */
const DRIVER = `
import json, sys, boto3, urllib3
from botocore.config import Config
endpoint = sys.argv[1]
http = urllib3.PoolManager()
for line in sys.stdin:
    r = json.loads(line)
    if r["op"] == "presign":
        config = Config(signature_version="s3v4") if r["v4"] else None
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", config=config,
                          aws_access_key_id=r["access_key"], aws_secret_access_key=r["secret_key"])
        out = s3.generate_presigned_post(r["bucket"], r["key"], Fields=r["fields"], Conditions=r["conditions"], ExpiresIn=r["expires"])
    else:
        fields = list(r["fields"].items()) + [("file", (r["filename"], r["content"].encode(), "application/octet-stream"))]
        res = http.request("POST", r["url"], fields=fields, redirect=False, retries=False)
        out = {"status": res.status, "headers": {k.lower(): v for k, v in res.headers.items()}, "body": res.data.decode("utf-8", "replace")}
    print(json.dumps(out), flush=True)
`;

export interface PresignedPost {
  url: string;
  fields: Record<string, string>;
}

export interface PostReply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface PresignOptions {
  /** SigV4 (signature_version s3v4); false: boto3's default SigV2 form. */
  v4?: boolean;
  fields?: Record<string, string>;
  conditions?: unknown[];
  expires?: number;
}

export interface FormClient {
  presign(cred: Cred, bucket: string, key: string, options?: PresignOptions): Promise<PresignedPost>;
  /** Posts the fields with urllib3, the file last. */
  post(form: PresignedPost, filename: string, content: string): Promise<PostReply>;
  close(): Promise<void>;
}

export function boto3Forms(endpoint: string): FormClient {
  const child = spawn(python3(), ['-c', DRIVER, endpoint], { env: cleanEnv({ AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null' }), stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const exited = new Promise<void>((r) => child.once('close', () => r()));
  const call = async (request: Record<string, unknown>): Promise<any> => {
    child.stdin.write(`${JSON.stringify(request)}\n`);
    const line = await lines.next();
    if (line.done) throw new Error(`python driver ${JSON.stringify(request)}: exited\n${stderr}`);
    return JSON.parse(line.value);
  };
  return {
    presign: (cred, bucket, key, o = {}) =>
      call({ op: 'presign', access_key: cred.accessKeyId, secret_key: cred.secretAccessKey, bucket, key, v4: o.v4 ?? true, fields: o.fields ?? null, conditions: o.conditions ?? null, expires: o.expires ?? 300 }),
    post: (form, filename, content) => call({ op: 'post', url: form.url, fields: form.fields, filename, content }),
    close: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

/** multipart/form-data (RFC 7578) of the fields in order, then the file part. */
export function multipart(fields: Record<string, string>, filename: string, content: Buffer | string): { body: Buffer; contentType: string } {
  const boundary = `----casket${randomBytes(8).toString('hex')}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`));
  parts.push(Buffer.from(content), Buffer.from(`\r\n--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

/**
 * POSTs a form with node:http. `cutAfter`: send that many bytes of the
 * body, then drop the connection (resolves status 0); with `stall`, send
 * them and wait for casket's answer without sending the rest.
 */
export function rawPost(url: string, form: { body: Buffer; contentType: string }, cutAfter?: number, stall = false): Promise<PostReply> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'POST', agent: false, headers: { 'content-type': form.contentType, 'content-length': String(form.body.length) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers as Record<string, string>, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    if (stall) {
      req.on('error', () => {});
      req.write(form.body.subarray(0, cutAfter));
      return;
    }
    if (cutAfter === undefined) {
      req.on('error', reject);
      req.end(form.body);
      return;
    }
    req.on('error', () => resolve({ status: 0, headers: {}, body: '' }));
    req.write(form.body.subarray(0, cutAfter), () => setTimeout(() => {
      req.destroy();
      resolve({ status: 0, headers: {}, body: '' });
    }, 200));
  });
}
