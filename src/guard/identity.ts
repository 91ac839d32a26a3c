/**
 * Who is writing (docs/design.md §4). A request is an agent's when its access key is
 * bound to an agent in the credentials config, or when it carries the agent
 * header. A key bound to agent A that names agent B is refused: per-agent keys
 * are the identity that holds (rclone and minio-js send custom headers
 * unsigned, s3cmd only on some requests — README "Clients").
 */
import { S3Error } from '../vocabulary/errors.js';

export const AGENT_NAME = /^[\x21-\x7e]{1,128}$/;

export function resolveAgent(boundAgent: string | undefined, headerValue: string | undefined): string | undefined {
  const claimed = headerValue?.trim();
  if (claimed !== undefined && claimed !== '' && !AGENT_NAME.test(claimed)) {
    throw new S3Error('InvalidArgument', 'The agent header must be 1 to 128 printable ASCII characters without spaces.');
  }
  if (boundAgent !== undefined) {
    if (claimed && claimed !== boundAgent) {
      throw new S3Error('AccessDenied', `This access key is bound to agent "${boundAgent}" and cannot act as agent "${claimed}".`);
    }
    return boundAgent;
  }
  return claimed || undefined;
}
