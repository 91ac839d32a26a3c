/**
 * An S3 request as casket's own doors make it (an MCP tool's, a rollback's):
 * the operation's method, bucket, key, query and headers, and the whole
 * body. s3/in-process.ts runs it; src/mcp/ and src/rollback/ speak it
 * without importing the layer that runs it.
 */
export interface S3Call {
  method: 'GET' | 'HEAD' | 'PUT' | 'DELETE';
  bucket: string;
  key?: string;
  /** Raw query string, already encoded (e.g. `list-type=2&prefix=a%2F`). */
  query?: string;
  headers?: Record<string, string>;
  body?: Buffer;
}
