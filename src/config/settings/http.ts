import { z } from 'zod';
import { from, setting } from './define.js';
import { maxMessageBytes } from './limits.js';
import { flag, int, list, path } from './values.js';

// serve --http: where tokens come from, which browser origins and principals may do what, and the
// bounds on bodies, connections and the time a request may take.

/** Principal names, comma-separated (or a JSON array), each as CODEXEC_HTTP_TOKENS spells them. */
const principalList = list(true).refine(
  (names) => names.every((name) => /^[A-Za-z0-9._-]{1,64}$/.test(name)),
  'principal names are 1-64 of A-Z a-z 0-9 . _ - (as in CODEXEC_HTTP_TOKENS), comma-separated',
);

const admins = setting('CODEXEC_HTTP_ADMINS', () =>
  principalList
    .optional()
    .describe(
      "serve --http: principals (comma-separated names from the token file) whose dashboard shows every principal's runs and sessions.",
    ),
);
const approvers = setting('CODEXEC_HTTP_APPROVERS', () =>
  principalList
    .optional()
    .describe(
      'serve --http with CODEXEC_APPROVER dashboard or both: principals who may decide approvals in the dashboard (never their own calls); default CODEXEC_HTTP_ADMINS.',
    ),
);
const maxBodyBytes = setting('CODEXEC_HTTP_MAX_BODY_BYTES', () =>
  int(1024, 500_000_000)
    .optional()
    .describe('serve --http: largest request body (413 above); default CODEXEC_MAX_MESSAGE_BYTES.'),
);
const maxInflightBytes = setting('CODEXEC_HTTP_MAX_INFLIGHT_BYTES', () =>
  int(1024, 10_000_000_000)
    .optional()
    .describe(
      'serve --http: request body bytes one principal may have read and not yet answered (429 past it); default twice CODEXEC_HTTP_MAX_BODY_BYTES.',
    ),
);

const maxConnections = setting('CODEXEC_HTTP_MAX_CONNECTIONS', () =>
  int(1, 100_000)
    .default(256)
    .describe(
      'serve --http: connections open at once; past it a newcomer replaces a connection that has made no authenticated request (an idle one first), else gets 503.',
    ),
);
const maxRequestsPerPrincipal = setting('CODEXEC_HTTP_MAX_REQUESTS_PER_PRINCIPAL', () =>
  int(1, 100_000)
    .optional()
    .describe(
      'serve --http: requests one principal may have in flight at once (calls, listens, GET streams, long polls); past it 429. Default a quarter of CODEXEC_HTTP_MAX_CONNECTIONS, at least 1.',
    ),
);

export const http = {
  http: {
    token: setting('CODEXEC_HTTP_TOKEN', () =>
      z
        .string()
        .min(16, 'use at least 16 characters')
        .optional()
        .describe('serve --http: the one bearer token (principal "default").'),
    ),
    tokensFile: path(
      setting('CODEXEC_HTTP_TOKENS', () =>
        z
          .string()
          .min(1)
          .optional()
          .describe('serve --http: a JSON file {"<principal>": "<token>"}; wins over CODEXEC_HTTP_TOKEN.'),
      ),
    ),
    allowedOrigins: setting('CODEXEC_HTTP_ALLOWED_ORIGINS', () =>
      list(true)
        .optional()
        .transform((origins) => (origins ?? []).map((origin) => origin.replace(/\/+$/, '').toLowerCase()))
        .describe('serve --http: origins (e.g. https://app.example.com) a browser request may come from.'),
    ),
    /** Principals that see everyone's runs and sessions in the dashboard. */
    admins: from([admins], ([names]) => names ?? []),
    /** Who may decide approvals in the dashboard (default the admins). */
    approvers: from([approvers, admins], ([names, adminNames]) => names ?? adminNames ?? []),
    maxBodyBytes: from([maxBodyBytes, maxMessageBytes], ([body, message]) => body ?? message),
    /** Body bytes one principal holds until answered. */
    maxInflightBytes: from(
      [maxInflightBytes, maxBodyBytes, maxMessageBytes],
      ([inflight, body, message]) => inflight ?? 2 * (body ?? message),
    ),
    /** Connections open at once, and how long a request head, a whole request and an idle connection may take. */
    maxConnections,
    /**
     * Requests one principal has in flight at once: with a quarter of the connections, one token
     * alone cannot hold them all (and with them every other principal's way in).
     */
    maxRequestsPerPrincipal: from(
      [maxRequestsPerPrincipal, maxConnections],
      ([requests, connections]) => requests ?? Math.max(1, Math.floor(connections / 4)),
    ),
    /** Connections not yet authenticated, per client address. */
    maxConnectionsPerAddress: setting('CODEXEC_HTTP_MAX_CONNECTIONS_PER_ADDRESS', () =>
      int(1, 100_000)
        .default(32)
        .describe(
          'serve --http: open connections of one client address (IPv6: its /64) that have made no authenticated request; past it its newest replaces its oldest idle one, else gets 503.',
        ),
    ),
    headersTimeoutMs: setting('CODEXEC_HTTP_HEADERS_TIMEOUT_MS', () =>
      int(100, 600_000)
        .default(10_000)
        .describe('serve --http: time to send a request head, from connect or the last request (408 after).'),
    ),
    requestTimeoutMs: setting('CODEXEC_HTTP_REQUEST_TIMEOUT_MS', () =>
      int(100, 3_600_000)
        .default(60_000)
        .describe(
          'serve --http: time to send a whole request, head and body (408 after); not the time to answer.',
        ),
    ),
    keepAliveTimeoutMs: setting('CODEXEC_HTTP_KEEP_ALIVE_TIMEOUT_MS', () =>
      int(100, 600_000)
        .default(5_000)
        .describe('serve --http: an idle connection between requests is closed after this time.'),
    ),
    /** 2025-era MCP sessions (an `initialize` opens one): how many, and how long one may idle. */
    maxMcpSessions: setting('CODEXEC_HTTP_MAX_MCP_SESSIONS', () =>
      int(1, 100_000)
        .default(512)
        .describe(
          'serve --http: 2025-era MCP sessions (Mcp-Session-Id) open at once, all principals together; past it an initialize gets 503.',
        ),
    ),
    maxMcpSessionsPerPrincipal: setting('CODEXEC_HTTP_MAX_MCP_SESSIONS_PER_PRINCIPAL', () =>
      int(1, 100_000)
        .default(32)
        .describe(
          "serve --http: 2025-era MCP sessions one principal may have open; past it that principal's initialize gets 429.",
        ),
    ),
    mcpSessionIdleMs: setting('CODEXEC_HTTP_MCP_SESSION_IDLE_MS', () =>
      int(1000, 86_400_000)
        .default(1_800_000)
        .describe(
          'serve --http: a 2025-era MCP session that has had no request (an open GET stream aside) for this long ends; its id then gets 404.',
        ),
    ),
    /** GET /metrics without a token. */
    metricsPublic: setting('CODEXEC_METRICS_PUBLIC', () =>
      flag()
        .default(false)
        .describe(
          'serve --http: true serves GET /metrics without a bearer token (for a scraper on a trusted network).',
        ),
    ),
  },
};
