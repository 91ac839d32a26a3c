/**
 * One error type, one table. Codes, statuses and default messages follow
 * https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html#ErrorCodeList
 * verbatim; casket's own additions (PreconditionRequired) use the HTTP name
 * of RFC 6585 §3. The XML rendering lives in s3/respond.ts.
 */

export const S3_ERRORS = {
  AccessDenied: [403, 'Access Denied'],
  AuthorizationHeaderMalformed: [400, 'The authorization header is malformed.'],
  AuthorizationQueryParametersError: [400, 'Error parsing the X-Amz-Credential parameter.'],
  // CORS preflights (https://docs.aws.amazon.com/AmazonS3/latest/API/RESTOPTIONSobject.html).
  AccessForbidden: [403, 'CORSResponse: This CORS request is not allowed.'],
  BadRequest: [400, 'Insufficient information. Origin request header needed.'],
  BadDigest: [400, 'The Content-MD5 or checksum value that you specified did not match what the server received.'],
  BucketAlreadyExists: [409, 'The requested bucket name is not available.'],
  BucketAlreadyOwnedByYou: [409, 'Your previous request to create the named bucket succeeded and you already own it.'],
  BucketNotEmpty: [409, 'The bucket that you tried to delete is not empty.'],
  EntityTooLarge: [400, 'Your proposed upload exceeds the maximum allowed object size.'],
  EntityTooSmall: [400, 'Your proposed upload is smaller than the minimum allowed object size.'],
  // 403, as README's STS section documents; AWS's table says 400.
  ExpiredToken: [403, 'The provided token has expired.'],
  IllegalVersioningConfigurationException: [400, 'The versioning configuration specified in the request is invalid.'],
  IncompleteBody: [400, 'You did not provide the number of bytes specified by the Content-Length HTTP header.'],
  InternalError: [500, 'We encountered an internal error. Please try again.'],
  InvalidAccessKeyId: [403, 'The AWS access key ID that you provided does not exist in our records.'],
  InvalidArgument: [400, 'Invalid Argument'],
  InvalidBucketName: [400, 'The specified bucket is not valid.'],
  InvalidDigest: [400, 'The Content-MD5 or checksum value that you specified is not valid.'],
  // POST Object: a policy that is not a valid document (RESTObjectPOST, ErrorResponses).
  InvalidPolicyDocument: [400, 'The content of the form does not meet the conditions specified in the policy document.'],
  InvalidPart: [400, 'One or more of the specified parts could not be found. The part might not have been uploaded, or the specified ETag might not have matched the part\'s ETag.'],
  InvalidPartOrder: [400, 'The list of parts was not in ascending order. The parts list must be specified in order by part number.'],
  InvalidPartNumber: [400, 'The requested partnumber is not satisfiable'],
  InvalidRange: [416, 'The requested range is not satisfiable'],
  InvalidRequest: [400, 'Invalid Request'],
  InvalidToken: [400, 'The provided token is malformed or otherwise invalid.'],
  InvalidURI: [400, "Couldn't parse the specified URI."],
  KeyTooLongError: [400, 'Your key is too long.'],
  // POST Object (RESTObjectPOST): a body that is not multipart/form-data, fields before the file over 20 KB.
  MalformedPOSTRequest: [400, 'The body of your POST request is not well-formed multipart/form-data.'],
  MaxPostPreDataLengthExceeded: [400, 'Your POST request fields preceding the upload file were too large.'],
  MalformedXML: [400, 'The XML you provided was not well-formed or did not validate against our published schema.'],
  MetadataTooLarge: [400, 'Your metadata headers exceed the maximum allowed metadata size.'],
  MethodNotAllowed: [405, 'The specified method is not allowed against this resource.'],
  MissingContentLength: [411, 'You must provide the Content-Length HTTP header.'],
  MissingSecurityHeader: [400, 'Your request is missing a required header.'],
  NoSuchBucket: [404, 'The specified bucket does not exist.'],
  NoSuchBucketPolicy: [404, 'The bucket policy does not exist.'],
  NoSuchCORSConfiguration: [404, 'The CORS configuration does not exist.'],
  NoSuchKey: [404, 'The specified key does not exist.'],
  NoSuchVersion: [404, 'The version ID specified in the request does not match an existing version.'],
  NoSuchUpload: [404, 'The specified upload does not exist. The upload ID might be invalid, or the multipart upload might have been aborted or completed.'],
  NoSuchLifecycleConfiguration: [404, 'The lifecycle configuration does not exist.'],
  NoSuchTagSet: [404, 'The TagSet does not exist.'],
  NoSuchWebsiteConfiguration: [404, 'The specified bucket does not have a website configuration.'],
  NotImplemented: [501, 'A header or query you provided implies functionality that is not implemented.'],
  NotModified: [304, 'Not Modified'],
  PreconditionFailed: [412, 'At least one of the preconditions that you specified did not hold.'],
  PreconditionRequired: [428, 'This write must be conditional: send If-Match with the ETag you read, or If-None-Match: * to create.'],
  RequestTimeTooSkewed: [403, 'The difference between the request time and the server\'s time is too large.'],
  RequestTimeout: [400, 'Your socket connection to the server was not read from or written to within the timeout period.'],
  ServiceUnavailable: [503, 'Service is unable to handle request.'],
  SignatureDoesNotMatch: [403, 'The request signature we calculated does not match the signature you provided. Check your key and signing method.'],
  SlowDown: [503, 'Please reduce your request rate.'],
  XAmzContentSHA256Mismatch: [400, 'The provided \'x-amz-content-sha256\' header does not match what was computed.'],
} as const satisfies Record<string, readonly [number, string]>;

export type S3ErrorCode = keyof typeof S3_ERRORS;

/** Extra XML elements (in order) and response headers an error carries. */
export interface S3ErrorDetails {
  message?: string;
  /** Extra child elements of <Error>, rendered in insertion order. */
  fields?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
}

export class S3Error extends Error {
  readonly code: S3ErrorCode;
  readonly status: number;
  readonly fields: Record<string, string | number | undefined>;
  readonly headers: Record<string, string>;

  constructor(code: S3ErrorCode, details: S3ErrorDetails | string = {}) {
    const d = typeof details === 'string' ? { message: details } : details;
    super(d.message ?? S3_ERRORS[code][1]);
    this.name = 'S3Error';
    this.code = code;
    this.status = S3_ERRORS[code][0];
    this.fields = d.fields ?? {};
    this.headers = d.headers ?? {};
  }
}

export function isS3Error(e: unknown): e is S3Error {
  return e instanceof S3Error;
}
