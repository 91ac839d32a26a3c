/**
 * One guarded PutObject commit of a body, through the one write path
 * (s3/write.ts): PutObject's own write, and the two writes of a merge
 * (s3/merge-write.ts) — the edit as sent, then the merged content.
 */
import type { ObjectInfo, PartChecksum, Payload } from '../backends/types.js';
import type { WriteConditions } from '../guard/preconditions.js';
import { requireKey, type RequestContext, type Services } from './context.js';
import { metadataFrom, objectHeadersFrom } from './object-headers.js';
import { guardedWrite } from './write.js';

export interface PutVersion {
  body(): Payload;
  conditions: WriteConditions;
  declaredSha256?: string;
  contentLength?: number;
  /** The x-amz-checksum-* the request declared for this body, kept with the object. */
  declaredChecksum?: PartChecksum;
  /** The body is in casket already (a merge): nothing to wait for, no early refusal. */
  buffered?: boolean;
  /** false: the agent rules were applied to the edit this merge carries (GuardedWrite.agentRules). */
  agentRules?: false;
  /** The operation the write log and events name: PutObject unless a form upload (PostObject). */
  operation?: 'PutObject' | 'PostObject';
}

export async function putVersion(ctx: RequestContext, services: Services, v: PutVersion): Promise<ObjectInfo> {
  const { bucket, key } = requireKey(ctx);
  const headers = objectHeadersFrom(ctx.headers, services.backend.forward !== undefined);
  const metadata = metadataFrom(ctx.headers);
  const declared = v.declaredSha256;
  const length = v.contentLength;
  const expectsContinue = ctx.headers.expect?.toLowerCase() === '100-continue';
  return guardedWrite({
    ctx,
    services,
    bucket,
    key,
    operation: v.operation ?? 'PutObject',
    conditions: v.conditions,
    ...(declared !== undefined && { declaredSha256: declared }),
    bodyComing: v.buffered === true || !expectsContinue,
    early: v.buffered !== true && expectsContinue,
    ...(v.agentRules === false && { agentRules: false as const }),
    commit: (permit) =>
      services.backend.putObject(bucket, key, v.body(), {
        ...permit,
        headers,
        metadata,
        ...(ctx.agent !== undefined && { writer: ctx.agent }),
        // Known before the body: an upstream backend can stream it through.
        ...(declared !== undefined && { declaredSha256: declared }),
        ...(length !== undefined && { contentLength: length }),
        ...(v.declaredChecksum !== undefined && { declaredChecksum: v.declaredChecksum }),
      }),
    written: (info) => info,
    landed: (current) => current!,
  });
}

