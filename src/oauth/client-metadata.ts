/**
 * Client ID Metadata Documents (the MCP authorization spec's preferred
 * registration, 2025-11-25 §"Client ID Metadata Documents";
 * draft-ietf-oauth-client-id-metadata-document): a client_id that is an
 * https URL names a JSON document, hosted by the client's maker, that holds
 * its client_name and redirect_uris. casket fetches it when a person opens
 * the authorize page.
 *
 * That fetch is a request casket makes to a URL anyone may choose, so it is
 * fenced against server-side request forgery: a client_id must not make
 * casket reach what only casket can reach — its own loopback services (the
 * admin endpoints, Redis, a metadata service at 169.254.169.254), or the
 * private network it runs in. The address a name resolves to is checked in
 * the connection's own DNS lookup, so a name that resolves to a public
 * address when checked and a private one when connected (DNS rebinding) is
 * refused too. https only, no redirects followed, a 5 s timeout and a 64 KiB
 * cap on the body. `allowPrivate` lifts the address fence for tests only
 * (the test's document is served on 127.0.0.1).
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request } from 'node:https';
import { BlockList, isIP } from 'node:net';
import { allowedRedirect, type OAuthClient } from './clients.js';

const TIMEOUT_MS = 5_000;
const MAX_BYTES = 64 * 1024;

const PRIVATE = new BlockList();
for (const [net, bits] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 3]] as const) PRIVATE.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['::ffff:0:0', 96], ['64:ff9b::', 96]] as const) PRIVATE.addSubnet(net, bits, 'ipv6');

export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  return family === 0 || PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** Whether a client_id is a metadata document URL (https, with a path), rather than a registered id. */
export function isMetadataUrl(clientId: string): boolean {
  try {
    const url = new URL(clientId);
    return url.protocol === 'https:' && url.pathname !== '/' && url.hash === '' && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}

export class ClientMetadataError extends Error {}

/** Fetches and checks the document a client_id URL names. */
export async function fetchClientMetadata(clientId: string, options: { allowPrivate: boolean; ca?: string | Buffer }): Promise<OAuthClient> {
  const url = new URL(clientId);
  const guardedLookup = (hostname: string, opts: object, callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void) => {
    dnsLookup(hostname, { all: true }, (err, addresses) => {
      if (err) return callback(err, '');
      const list = addresses as LookupAddress[];
      const refused = options.allowPrivate ? undefined : list.find((a) => isPrivateAddress(a.address));
      if (refused || list.length === 0) return callback(Object.assign(new Error(`${hostname} resolves to ${refused?.address ?? 'nothing'}, a private or loopback address`), { code: 'EPRIVATE' }), '');
      if ((opts as { all?: boolean }).all) return callback(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
  // A literal address skips the lookup: check it here.
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) !== 0 && !options.allowPrivate && isPrivateAddress(host)) throw new ClientMetadataError(`client_id ${clientId} names a private or loopback address`);
  const body = await new Promise<string>((resolve, reject) => {
    const req = request(url, { method: 'GET', headers: { accept: 'application/json' }, lookup: guardedLookup as never, timeout: TIMEOUT_MS, ...(options.ca !== undefined && { ca: options.ca }) }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new ClientMetadataError(`client_id ${clientId} answered HTTP ${res.statusCode} (redirects are not followed)`));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_BYTES) {
          req.destroy(new ClientMetadataError(`client_id ${clientId}: the document is larger than ${MAX_BYTES} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new ClientMetadataError(`client_id ${clientId} did not answer within ${TIMEOUT_MS / 1000} s`)));
    req.on('error', (e) => reject(e instanceof ClientMetadataError ? e : new ClientMetadataError(`client_id ${clientId} could not be fetched: ${e.message}`)));
    req.end();
  });
  let doc: { client_id?: unknown; client_name?: unknown; redirect_uris?: unknown };
  try {
    doc = JSON.parse(body) as typeof doc;
  } catch {
    throw new ClientMetadataError(`client_id ${clientId}: the document is not JSON`);
  }
  // The document must name itself: another site's document cannot be borrowed.
  if (doc.client_id !== clientId) throw new ClientMetadataError(`client_id ${clientId}: the document's client_id is not its own URL`);
  const uris = doc.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > 10 || !uris.every((u) => typeof u === 'string' && allowedRedirect(u))) throw new ClientMetadataError(`client_id ${clientId}: redirect_uris must be 1 to 10 https or loopback http URIs`);
  const name = typeof doc.client_name === 'string' && doc.client_name.trim() !== '' ? doc.client_name.trim().slice(0, 200) : url.host;
  return { clientId, name, redirectUris: uris as string[] };
}
