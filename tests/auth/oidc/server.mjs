// The authorization server of mcpkit's end-to-end auth tests: oidc-provider (an
// OpenID-certified implementation), configured for MCP resource servers.
//
//   OIDC_NODE_MODULES=<dir with oidc-provider installed> OIDC_TEST_CONFIG='<json>' node server.mjs
//
// OIDC_TEST_CONFIG: {"jwks": {"keys": [<private JWKs>]}, "secret": "<client secret>",
//                    "machine_jwks": {"keys": [<public JWKs>]} (optional)}.
// It listens on a free port of 127.0.0.1, its issuer http://127.0.0.1:<port>, and prints one
// JSON line {"issuer": ..., "port": ...} once it accepts connections. It stops on SIGTERM.
//
// Enabled: resource indicators (RFC 8707), client credentials, authorization code with
// PKCE, refresh tokens, introspection (RFC 7662), revocation (RFC 7009), DPoP (RFC 9449).
// Resource servers (getResourceServerInfo):
//   https://mcp.example.com/mcp     JWT access tokens (RFC 9068), scopes notes:read notes:write
//   https://other.example.com/mcp   JWT access tokens, same scopes: "another audience"
//   https://opaque.example.com/mcp  opaque access tokens, checked by introspection
//   http://127.0.0.1:<port>/mcp     JWT access tokens: an mcpkit server on loopback, its
//                                   canonical URL the resource (the port is the test's)
// Clients (every secret is config.secret):
//   app          client_credentials, authorization_code (+PKCE), refresh_token
//   short-lived  client_credentials; its access tokens live 2 seconds
//   machine      client_credentials, authenticated by private_key_jwt with a key of
//                config.machine_jwks (only when given)
//   mcp-server   no grant: the resource server, for introspection
//   cli          a public native client (no secret), authorization_code (+PKCE) and
//                refresh_token, redirect http://127.0.0.1/callback on any port (RFC 8252)
// Dynamic client registration (RFC 7591) is open: the official SDK's client registers itself.
// Interactions log in the subject named by login_hint (default "alice") and grant every
// scope asked for, without a page: the tests drive the redirects with an HTTP client.

import * as http from 'node:http';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';

const config = JSON.parse(process.env.OIDC_TEST_CONFIG ?? '{}');
const modules = process.env.OIDC_NODE_MODULES;
if (!modules || !config.jwks || !config.secret) {
  console.error('server.mjs needs OIDC_NODE_MODULES and OIDC_TEST_CONFIG {jwks, secret}');
  process.exit(2);
}
const { default: Provider, errors } = await import(
  pathToFileURL(path.join(modules, 'oidc-provider', 'lib', 'index.js')).href);

const SCOPES = 'notes:read notes:write';
const RESOURCES = {
  'https://mcp.example.com/mcp': { format: 'jwt' },
  'https://other.example.com/mcp': { format: 'jwt' },
  'https://opaque.example.com/mcp': { format: 'opaque' },
};
const LOOPBACK_RESOURCE = /^http:\/\/127\.0\.0\.1:[0-9]{1,5}\/mcp$/;
const SHORT_TTL = 2;
const TTL = 300;

const server = http.createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(0, '127.0.0.1', resolve);
});
const { port } = server.address();
const issuer = `http://127.0.0.1:${port}`;

const client = (id, extra) => ({
  client_id: id,
  client_secret: config.secret,
  token_endpoint_auth_method: 'client_secret_basic',
  ...extra,
});

const provider = new Provider(issuer, {
  jwks: config.jwks,
  cookies: { keys: [config.secret] },
  clients: [
    client('app', {
      grant_types: ['client_credentials', 'authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: ['http://127.0.0.1/callback'],
      scope: SCOPES,
    }),
    client('short-lived', {
      grant_types: ['client_credentials'], response_types: [], redirect_uris: [], scope: SCOPES,
    }),
    client('mcp-server', { grant_types: [], response_types: [], redirect_uris: [] }),
    ...(config.machine_jwks ? [{
      client_id: 'machine',
      token_endpoint_auth_method: 'private_key_jwt',
      token_endpoint_auth_signing_alg: 'ES256',
      jwks: config.machine_jwks,
      grant_types: ['client_credentials'], response_types: [], redirect_uris: [], scope: SCOPES,
    }] : []),
    {
      client_id: 'cli',
      token_endpoint_auth_method: 'none',
      application_type: 'native',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: ['http://127.0.0.1/callback'],
      scope: SCOPES,
    },
  ],
  scopes: SCOPES.split(' '),
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    registration: { enabled: true },
    dPoP: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (ctx, client, oneOf) => oneOf,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (ctx, indicator, client) => {
        const known = RESOURCES[indicator]
          ?? (LOOPBACK_RESOURCE.test(indicator) ? { format: 'jwt' } : undefined);
        if (!known) throw new errors.InvalidTarget();
        return {
          scope: SCOPES,
          accessTokenFormat: known.format,
          accessTokenTTL: client.clientId === 'short-lived' ? SHORT_TTL : TTL,
          ...(known.format === 'jwt' ? { jwt: { sign: { alg: 'RS256' } } } : {}),
        };
      },
    },
  },
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
  findAccount: async (ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  pkce: { required: () => true },
});

// The interaction "page": log in login_hint's subject, then grant what is missing.
async function interact(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === 'login') {
    const accountId = typeof params.login_hint === 'string' ? params.login_hint : 'alice';
    await provider.interactionFinished(req, res, { login: { accountId } },
                                       { mergeWithLastSubmission: false });
    return;
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const missing = prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } },
                                     { mergeWithLastSubmission: true });
}

const callback = provider.callback();
server.on('request', (req, res) => {
  if (req.method === 'GET' && req.url.startsWith('/interaction/')) {
    interact(req, res).catch((err) => {
      console.error(`interaction failed: ${err}`);
      res.statusCode = 500;
      res.end(String(err));
    });
    return;
  }
  callback(req, res);
});
provider.on('server_error', (ctx, err) => console.error(`server_error: ${err.stack}`));

process.on('SIGTERM', () => server.close(() => process.exit(0)));
console.log(JSON.stringify({ issuer, port }));
