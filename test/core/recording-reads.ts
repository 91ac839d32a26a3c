/**
 * An in-process casket with one agent (alice) and a bucket, whose state
 * store records reads through `wrap`: the read-then-write tests slow or hold
 * the record of a read to send a write before it lands.
 */
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import type { StateStore } from '../../src/state/types.js';
import { sdk } from '../helpers/clients.js';
import { startInProcess, type InProcessCasket } from '../helpers/in-process.js';

export interface RecordingReads {
  casket: InProcessCasket;
  admin: S3Client;
  alice: S3Client;
  stop(): Promise<void>;
}

export async function startRecordingReads(bucket: string, wrap: (recordRead: StateStore['recordRead']) => StateStore['recordRead']): Promise<RecordingReads> {
  const casket = await startInProcess({ agents: ['alice'] });
  const admin = sdk(casket.url, casket.admin);
  const alice = sdk(casket.url, casket.agents.alice!);
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  const state = casket.casket.services.state;
  state.recordRead = wrap(state.recordRead.bind(state));
  return {
    casket,
    admin,
    alice,
    async stop() {
      for (const c of [admin, alice]) c.destroy();
      await casket.stop();
    },
  };
}
