/**
 * The pages of MCP authorization (src/oauth/routes.ts): casket's login —
 * any casket access key and its secret, as `casket mcp` over stdio would
 * take — then the consent screen, which names the client, where the code
 * goes, the agent identity the token will carry and what the key's policy
 * allows. Plain server-rendered HTML with the console's stylesheet and no
 * script; every value from a request is escaped.
 *
 * Content-Security-Policy as the console's (routes.ts), except form-action:
 * the consent form's answer is a redirect to the client's redirect URI, and
 * browsers hold a form's redirects to form-action too
 * (https://www.w3.org/TR/CSP3/#directive-form-action), so that one origin —
 * and only it — is added.
 */
import type { Credential } from '../auth/credentials.js';
import type { Statement } from '../auth/policy.js';
import { CONTENT_SECURITY_POLICY } from './routes.js';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

export function pageHeaders(formTarget?: string): Record<string, string> {
  const csp = formTarget === undefined ? CONTENT_SECURITY_POLICY : CONTENT_SECURITY_POLICY.replace("form-action 'self'", `form-action 'self' ${new URL(formTarget).origin}`);
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-security-policy': csp,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
    'x-frame-options': 'DENY',
  };
}

function shell(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · casket</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/_casket/console/assets/console.css">
</head>
<body class="login">
<main id="main">
${body}
</main>
</body>
</html>`;
}

/** The login form; it posts back to the authorize URL it was shown at (`action`: path and query). */
export function loginPage(clientName: string, action: string, message?: string): string {
  return shell('Authorize', `  <h1>Connect ${escapeHtml(clientName)} to casket</h1>
  <p class="lead">Log in with a casket access key. The secret key is sent once, in this form's body; the client never sees it.</p>
  <p class="message" role="alert">${escapeHtml(message ?? '')}</p>
  <form method="post" action="${escapeHtml(action)}" class="login-form">
    <label for="accessKeyId">Access key ID</label>
    <input id="accessKeyId" name="accessKeyId" autocomplete="username" required autofocus spellcheck="false" autocapitalize="off">
    <label for="secretAccessKey">Secret access key</label>
    <input id="secretAccessKey" name="secretAccessKey" type="password" autocomplete="current-password" required>
    <button type="submit">Log in</button>
  </form>`);
}

function describeStatement(s: Statement): string {
  const cond = s.conditions.length === 0 ? '' : ` when ${s.conditions.map((c) => `${c.key} ${c.operator} ${c.values.join(' | ')}`).join(' and ')}`;
  return `${s.effect} ${s.actions.join(', ')} on ${s.resources.join(', ')}${cond}`;
}

/** What the key may do, in the policy's own words (docs/design.md §7). */
export function policyLines(credential: Credential): string[] {
  const policies = credential.policies ?? [];
  if (policies.length === 0) return ['Everything this casket serves: the key has no policy (full rights).'];
  return policies.flatMap((p, i) => p.statements.map((s) => (policies.length > 1 ? `Policy ${i + 1}: ` : '') + describeStatement(s)));
}

export interface ConsentView {
  clientName: string;
  redirectUri: string;
  credential: Credential;
  tx: string;
  message?: string;
}

export function consentPage(view: ConsentView): string {
  const { credential } = view;
  const agent = credential.agent !== undefined
    ? `<p>The client will act as agent <strong>${escapeHtml(credential.agent)}</strong>, the agent this key is bound to.</p>`
    : `<label for="agent">Agent the client acts as (empty: you, ${escapeHtml(credential.accessKeyId)}, as a person)</label>
    <input id="agent" name="agent" spellcheck="false" autocapitalize="off" maxlength="128">`;
  return shell('Allow access', `  <h1>Allow ${escapeHtml(view.clientName)} to use casket?</h1>
  <p class="message" role="alert">${escapeHtml(view.message ?? '')}</p>
  <p class="lead"><strong>${escapeHtml(view.clientName)}</strong> asks to use casket's MCP file tools with key <strong>${escapeHtml(credential.accessKeyId)}</strong>. After you allow it, casket sends it to <code>${escapeHtml(view.redirectUri)}</code>.</p>
  <p>It may do what this key may do, and no more:</p>
  <ul class="policy">${policyLines(credential).map((l) => `<li>${escapeHtml(l)}</li>`).join('')}</ul>
  <form method="post" action="/_casket/oauth/consent" class="login-form">
    <input type="hidden" name="tx" value="${escapeHtml(view.tx)}">
    ${agent}
    <button type="submit" name="decision" value="allow">Allow</button>
    <button type="submit" name="decision" value="deny">Deny</button>
  </form>`);
}

export function errorPage(message: string): string {
  return shell('Authorization failed', `  <h1>casket cannot authorize this client</h1>
  <p class="message" role="alert">${escapeHtml(message)}</p>
  <p>Nothing was granted. Start again from your MCP client.</p>`);
}
