/**
 * The changeset examples in docs/agents.md, run as a reader would paste them
 * (boto3's signer with requests; the AWS SDK v3's @smithy/signature-v4 with
 * fetch), against a real casket: only the endpoint and the ETag placeholder
 * are filled in. An example that drifts from the endpoint fails here.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCasket, type RunningCasket } from '../helpers/casket.js';
import { bytes, sdk } from '../helpers/clients.js';

const root = resolve(import.meta.dirname, '../..');
const section = (() => {
  const text = readFileSync(resolve(root, 'docs/agents.md'), 'utf8');
  const start = text.indexOf('## Changesets');
  return text.slice(start, text.indexOf('\n## ', start + 1));
})();
const block = (lang: string): string => {
  const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(section);
  if (!m) throw new Error(`docs/agents.md's changesets section has no ${lang} block`);
  return m[1]!;
};

let casket: RunningCasket;
const bucket = 'work'; // the examples' own bucket

beforeAll(async () => {
  casket = await startCasket();
  await sdk(casket.url, casket.admin).send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(async () => casket?.stop());

const text = async (key: string) => (await bytes((await sdk(casket.url, casket.admin).send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body)).toString();

/** Fresh a.txt (its ETag in the example), no b.txt: the example then lands both. */
async function prepared(code: string): Promise<string> {
  const s3 = sdk(casket.url, casket.admin);
  const { ETag } = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'a.txt', Body: `old a ${Date.now()}` }));
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'b.txt' }));
  return code.replaceAll('http://127.0.0.1:9000', casket.url).replaceAll('"<etag>"', ETag!);
}

const credentials = () => ({ ...process.env, AWS_ACCESS_KEY_ID: casket.admin.accessKeyId, AWS_SECRET_ACCESS_KEY: casket.admin.secretAccessKey, AWS_DEFAULT_REGION: 'us-east-1' });

describe('the changeset examples in docs/agents.md', () => {
  it('Python (boto3 signer, requests): both files land', async () => {
    const run = spawnSync('python3', ['-c', await prepared(block('python'))], { env: credentials(), encoding: 'utf8', timeout: 60_000 });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain("'landed'");
    expect([await text('a.txt'), await text('b.txt')]).toEqual(['new a', 'new b']);
  });

  it('JavaScript (SDK v3 signer, fetch): both files land', async () => {
    // Beside package.json, so the import resolves in this checkout's node_modules.
    const file = resolve(root, `.docs-example-${process.pid}.mjs`);
    writeFileSync(file, await prepared(block('js')));
    try {
      const run = spawnSync(process.execPath, [file], { env: credentials(), encoding: 'utf8', timeout: 60_000 });
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/^200 .*"landed"/);
    } finally {
      rmSync(file, { force: true });
    }
    expect([await text('a.txt'), await text('b.txt')]).toEqual(['new a', 'new b']);
  });
});
