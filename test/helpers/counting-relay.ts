/**
 * A TCP relay in front of an upstream that counts the bytes sent to it: the
 * streamed-upload tests (test/backends/s3/streamed-*.test.ts) point casket
 * at it to see a body reach the upstream while the client is still sending.
 */
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { startCasket, type RunningCasket } from './casket.js';
import { sdk } from './clients.js';
import { tcpRelay } from './tcp-relay.js';
import { startUpstream, upstreamKindFromEnv, type Upstream } from './upstream.js';

export interface CountingRelay {
  /** The upstream, reached through the relay. */
  upstream: Upstream;
  /** Bytes casket has sent the upstream so far. */
  sent(): number;
  close(): Promise<void>;
}

export async function countingRelay(target: Upstream): Promise<CountingRelay> {
  let sent = 0;
  const relay = await tcpRelay(target, (inbound, outbound) => {
    inbound.on('data', (d: Buffer) => (sent += d.length));
    inbound.pipe(outbound).pipe(inbound);
    inbound.once('close', () => outbound.destroy());
    outbound.once('close', () => inbound.destroy());
  });
  return { ...relay, sent: () => sent };
}

/** A casket in front of a real upstream (moto, or CASKET_TEST_UPSTREAM) through a counting relay, with `bucket` made. */
export interface RelayedCasket {
  upstream: Upstream;
  relay: CountingRelay;
  casket: RunningCasket;
  /** The upstream itself, asked directly (not through casket). */
  direct: S3Client;
  /** casket, with its admin key. */
  s3: S3Client;
  stop(): Promise<void>;
}

export async function relayedCasket(bucket: string): Promise<RelayedCasket> {
  const upstream = await startUpstream(upstreamKindFromEnv() ?? 'moto');
  const relay = await countingRelay(upstream);
  const casket = await startCasket({ upstream: relay.upstream });
  const direct = new S3Client({ endpoint: upstream.url, region: upstream.region, forcePathStyle: true, requestChecksumCalculation: 'WHEN_REQUIRED', credentials: { accessKeyId: upstream.accessKey, secretAccessKey: upstream.secretKey } });
  const s3 = sdk(casket.url, casket.admin);
  const stop = async () => {
    s3.destroy();
    direct.destroy();
    await casket.stop();
    await relay.close();
    await upstream.stop();
  };
  try {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (e) {
    await stop();
    throw e;
  }
  return { upstream, relay, casket, direct, s3, stop };
}
