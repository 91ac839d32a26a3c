/**
 * GetBucketVersioning and PutBucketVersioning
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetBucketVersioning.html,
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketVersioning.html),
 * kept by the embedded store (docs/design.md §10). A bucket that never had
 * versioning answers an empty configuration (no Status); once set it is
 * Enabled or Suspended, never unversioned again. A body that is not a
 * `<VersioningConfiguration>` document is MalformedXML; a Status other than
 * Enabled / Suspended is IllegalVersioningConfigurationException. MFA delete
 * is not implemented (it needs an MFA device casket does not have).
 *
 * In front of an upstream the upstream keeps versioning: both are forwarded
 * as they are (operations/unmodeled.ts).
 */
import type { VersioningStatus } from '../../backends/types.js';
import { S3Error } from '../../vocabulary/errors.js';
import { readXmlBody } from '../../vocabulary/xml.js';
import type { Handler } from '../context.js';
import { requireBucket } from '../context.js';
import { emptyResponse, xmlResponse } from '../respond.js';
import { Unmodeled } from './unmodeled.js';

const STATUSES: readonly string[] = ['Enabled', 'Suspended'] satisfies VersioningStatus[];

export const GetBucketVersioning: Handler = async (ctx, services) => {
  const { backend } = services;
  if (!backend.getBucketVersioning) return Unmodeled(ctx, services);
  const status = await backend.getBucketVersioning(requireBucket(ctx));
  return xmlResponse('VersioningConfiguration', status !== undefined ? { Status: status } : {});
};

export const PutBucketVersioning: Handler = async (ctx, services) => {
  const { backend } = services;
  if (!backend.putBucketVersioning) return Unmodeled(ctx, services);
  const bucket = requireBucket(ctx);
  await backend.headBucket(bucket);
  const doc = await readXmlBody(ctx.payload().stream);
  const config = doc.VersioningConfiguration;
  if (config === undefined || (config !== '' && (typeof config !== 'object' || config === null))) throw new S3Error('MalformedXML');
  const { Status: status, MfaDelete: mfaDelete } = (config === '' ? {} : config) as { Status?: unknown; MfaDelete?: unknown };
  if (mfaDelete !== undefined && mfaDelete !== 'Disabled') throw new S3Error('NotImplemented', 'casket does not implement MFA delete.');
  // Status is optional in the schema: a configuration without it changes nothing.
  if (status === undefined) return emptyResponse(200);
  if (typeof status !== 'string' || !STATUSES.includes(status)) throw new S3Error('IllegalVersioningConfigurationException');
  await backend.putBucketVersioning(bucket, status as VersioningStatus);
  return emptyResponse(200);
};
