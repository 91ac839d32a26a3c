"""
moto's S3 server as the tests run it: `python3 -m moto.server`, plus the one
property of AWS S3 that casket relies on and moto 5.2 lacks — a conditional
write is atomic.

moto checks If-Match / If-None-Match and then writes, in werkzeug's request
threads, with nothing held in between (moto/s3/responses.py put_object,
delete_object): two PUTs conditioned on the same ETag can both pass the check
and both answer 200 (seen here: 16 concurrent If-Match PUTs through two
caskets, on a loaded machine, two 200s in one of twenty rounds). AWS S3 "performs conditional writes
atomically" (https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html),
and so does Ceph RGW. So the writes that check a condition run under one lock
here, after their body has been read (moto reads it before dispatch), so a
slow body never holds the lock.

Also under that lock: UploadPart, from the key lookup moto does for every
key request (S3Response._key_response) to its answer. moto 5.2 stores a
part, then reads its ETag back from the part's buffer; a second upload of
the same part number in between closes that buffer (it replaces the part),
so the first answers 500 ("I/O operation on closed file", moto/s3/models.py
etag) — and with only upload_part itself locked, CI still saw one such 500
among eight concurrent uploads of one part number. ListParts reads the same
ETags, so it is locked as well. AWS S3 and Ceph RGW take
concurrent uploads of one part number, and casket streams them concurrently
(src/backends/s3/multipart.ts). The lock is reentrant: a locked UploadPart
calls other locked methods.

Also: the parent's death ends this server (PR_SET_PDEATHSIG), so a test
worker that dies leaves no moto behind.

With CASKET_MOTO_COPY_CONDITIONS=1 (opt-in, for test/integration/copy-requests.test.ts
only): CopyObject's conditions as AWS documents and enforces them, which moto
5.2 and Ceph RGW 16 do not (measured, src/backends/s3/capabilities.ts) —
x-amz-copy-source-if-match on the source, If-Match and If-None-Match: * on the
destination (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CopyObject.html),
each a 412 PreconditionFailed that copies nothing, checked under the same
lock as the copy. It is what lets the one-request copy path run somewhere here.

usage: python3 moto_server.py HOST PORT
"""
import ctypes
import os
import signal
import sys
import threading
from urllib.parse import parse_qs, unquote, urlparse

ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG

from moto.s3.responses import S3Response  # noqa: E402
from moto.server import main  # noqa: E402

_commit = threading.RLock()


def _atomic(method):
    def locked(self, *args, **kwargs):
        with _commit:
            return method(self, *args, **kwargs)

    return locked


def _copy_conditions(copy_object):
    from moto.s3.exceptions import PreconditionFailed

    def checked(self, *args, **kwargs):
        source = urlparse(self.headers.get("x-amz-copy-source", ""))
        bucket, _, key = unquote(source.path).lstrip("/").partition("/")
        version = parse_qs(source.query).get("versionId", [None])[0]
        wanted = self.headers.get("x-amz-copy-source-if-match")
        if wanted is not None:
            found = self.backend.get_object(bucket, key, version_id=version)
            if found is None or wanted.strip('"') != found.etag.strip('"'):
                raise PreconditionFailed(failed_condition="x-amz-copy-source-If-Match")
        current = self.backend.get_object(self.bucket_name, self.parse_key_name())
        if_match = self.headers.get("If-Match")
        if if_match is not None and (current is None or if_match.strip('"') != current.etag.strip('"')):
            raise PreconditionFailed(failed_condition="If-Match")
        if self.headers.get("If-None-Match") == "*" and current is not None:
            raise PreconditionFailed(failed_condition="If-None-Match")
        return copy_object(self, *args, **kwargs)

    return checked


if os.environ.get("CASKET_MOTO_COPY_CONDITIONS") == "1":
    S3Response.copy_object = _copy_conditions(S3Response.copy_object)

# PutObject, CopyObject, DeleteObject, DeleteObjects, and POSTs on a key
# (CompleteMultipartUpload): each checks its condition, then writes.
for name in ("put_object", "copy_object", "delete_object", "_bucket_response_delete_keys", "_key_response_post"):
    setattr(S3Response, name, _atomic(getattr(S3Response, name)))

_key_response = S3Response._key_response


def _key_response_locked_for_parts(self, request, full_url):
    # UploadPart (see above): PUT ?partNumber=&uploadId=, body already read.
    # ListParts (GET ?uploadId=) too: it reads each part's ETag from the same
    # buffers, and a concurrent UploadPart of that part number closing one
    # answered casket's ListParts 500 (seen here under load, moto's log:
    # "I/O operation on closed file" on GET ?max-parts=1&uploadId=).
    if (request.method == "PUT" and "uploadId=" in full_url and "partNumber=" in full_url) or (request.method == "GET" and "uploadId=" in full_url):
        with _commit:
            return _key_response(self, request, full_url)
    return _key_response(self, request, full_url)


S3Response._key_response = _key_response_locked_for_parts

main(["-H", sys.argv[1], "-p", sys.argv[2]])
