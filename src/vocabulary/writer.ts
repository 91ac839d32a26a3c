/**
 * Who wrote a version, in the words every answer that names one uses: a
 * 412/428's message (s3/refusal-error.ts) and a diff's header lines
 * (changes/diff.ts). The write log (GET /_casket/writes) keeps both the agent
 * and the access key of each write; the answers say the agent when an agent
 * wrote the version — the name agents and orchestrators address each other
 * by — and otherwise the access key id of the person's request, which is what
 * the write log has to tell people apart. An access key id is not a secret
 * (AWS shows them in CloudTrail); the secret key is never named.
 */
export interface Writer {
  /** The agent whose request wrote the version. */
  agent?: string;
  /** The access key id of a request without an agent that wrote it, when casket knows it. */
  accessKey?: string;
}

/** `agent "alice"`, `access key "AKIA…"`, or, when casket does not know the key, `a request without an agent`. */
export function writtenBy(w: Writer): string {
  if (w.agent) return `agent "${w.agent}"`;
  if (w.accessKey) return `access key "${w.accessKey}"`;
  return 'a request without an agent';
}
