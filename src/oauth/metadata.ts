/**
 * Where an MCP client learns how to get a token for casket (MCP authorization,
 * https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization):
 *
 * - Protected Resource Metadata (RFC 9728) at /.well-known/oauth-protected-resource
 *   and its path-suffixed form for the endpoint (§3.1:
 *   /.well-known/oauth-protected-resource/_casket/mcp), also named by the
 *   `resource_metadata` parameter of every 401 from /_casket/mcp (§5.1).
 * - Authorization Server Metadata (RFC 8414) at /.well-known/oauth-authorization-server:
 *   casket is its own authorization server, its issuer is its own origin.
 *
 * Every URL is built from the origin the request came to, so a casket
 * reached as https://casket.example names itself so, and each replica
 * behind one name answers the same documents.
 */
import { MCP_PATH } from '../mcp/http.js';

export const OAUTH_PATH = '/_casket/oauth';
export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource';
export const AUTHORIZATION_SERVER_PATH = '/.well-known/oauth-authorization-server';

/**
 * The origin clients reach casket at: --public-url when set (behind a
 * TLS-terminating proxy the request's own scheme is not the client's), else
 * the request's Host header, https when casket serves TLS. The issuer, and
 * the base of every URL the documents name.
 */
export function requestOrigin(host: string | undefined, secure: boolean, publicUrl?: string): string {
  return publicUrl ?? `${secure ? 'https' : 'http'}://${host ?? 'localhost'}`;
}

/** The MCP endpoint's URL as a client names it: the RFC 8707 resource and the tokens' audience. */
export function resourceUrl(origin: string): string {
  return origin + MCP_PATH;
}

/** What a 401 from the MCP endpoint points to (RFC 9728 §5.1). */
export function resourceMetadataUrl(origin: string): string {
  return origin + PROTECTED_RESOURCE_PATH + MCP_PATH;
}

export function protectedResourceMetadata(origin: string): object {
  return {
    resource: resourceUrl(origin),
    authorization_servers: [origin],
    // Tokens in the Authorization header only: never in a URL (RFC 6750 §2.3 is not offered).
    bearer_methods_supported: ['header'],
    resource_name: 'casket',
  };
}

export function authorizationServerMetadata(origin: string): object {
  return {
    issuer: origin,
    authorization_endpoint: `${origin}${OAUTH_PATH}/authorize`,
    token_endpoint: `${origin}${OAUTH_PATH}/token`,
    registration_endpoint: `${origin}${OAUTH_PATH}/register`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    // OAuth 2.1 §7.5.2 and the MCP spec: PKCE, and only the method that does not show the verifier.
    code_challenge_methods_supported: ['S256'],
    // Public clients only (MCP clients are apps on a user's machine): no client secret to keep.
    token_endpoint_auth_methods_supported: ['none'],
    // RFC 9207: the redirect carries iss, so a client talking to several servers knows which answered.
    authorization_response_iss_parameter_supported: true,
    // The MCP spec's preferred registration: an https client_id naming the client's own metadata (client-metadata.ts).
    client_id_metadata_document_supported: true,
  };
}
