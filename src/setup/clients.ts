import { homedir } from 'node:os';
import { join } from 'node:path';

// Where each MCP client keeps its servers, and in what shape (checked against each client's docs):
// - Claude Code: user scope in ~/.claude.json, `mcpServers` at the top level, entries with
//   `type: "stdio"` (what `claude mcp add --scope user` writes).
// - Claude Desktop: claude_desktop_config.json in the app's config dir, `mcpServers`.
// - Cursor: ~/.cursor/mcp.json, `mcpServers`.
// - VS Code: the user profile's mcp.json (JSON with comments), `servers`, entries with `type`.
// - Codex: ~/.codex/config.toml, a `[mcp_servers.<name>]` table with command, args and env.

export const CLIENTS = ['claude-code', 'claude-desktop', 'cursor', 'vscode', 'codex'] as const;
export type ClientName = (typeof CLIENTS)[number];

/** What codexec's entry says: how to start it, exactly as the client will. */
export interface ServerEntry {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

export interface ClientConfig {
  readonly client: ClientName;
  readonly path: string;
  readonly format: 'json' | 'toml';
  /** The key (JSON: top-level object; TOML: table) holding the servers. */
  readonly key: 'mcpServers' | 'servers' | 'mcp_servers';
  /** The entry in this client's own shape. */
  entry(server: ServerEntry): Record<string, unknown>;
}

interface Place {
  readonly home?: string;
  readonly platform?: NodeJS.Platform;
  readonly env?: NodeJS.ProcessEnv;
}

/** The user config directory of desktop apps: ~/.config (XDG), ~/Library/Application Support, %APPDATA%. */
function appConfigDir({ home = homedir(), platform = process.platform, env = process.env }: Place): string {
  if (platform === 'darwin') return join(home, 'Library', 'Application Support');
  if (platform === 'win32') return env.APPDATA ?? join(home, 'AppData', 'Roaming');
  return env.XDG_CONFIG_HOME || join(home, '.config');
}

const plain = (server: ServerEntry) => ({
  command: server.command,
  args: [...server.args],
  ...(Object.keys(server.env).length > 0 && { env: { ...server.env } }),
});
const typed = (server: ServerEntry) => ({ type: 'stdio', ...plain(server) });

export function clientConfig(client: ClientName, place: Place = {}): ClientConfig {
  const home = place.home ?? homedir();
  switch (client) {
    case 'claude-code':
      return { client, path: join(home, '.claude.json'), format: 'json', key: 'mcpServers', entry: typed };
    case 'claude-desktop':
      return {
        client,
        path: join(appConfigDir(place), 'Claude', 'claude_desktop_config.json'),
        format: 'json',
        key: 'mcpServers',
        entry: plain,
      };
    case 'cursor':
      return {
        client,
        path: join(home, '.cursor', 'mcp.json'),
        format: 'json',
        key: 'mcpServers',
        entry: plain,
      };
    case 'vscode':
      return {
        client,
        path: join(appConfigDir(place), 'Code', 'User', 'mcp.json'),
        format: 'json',
        key: 'servers',
        entry: typed,
      };
    case 'codex':
      return {
        client,
        path: join(home, '.codex', 'config.toml'),
        format: 'toml',
        key: 'mcp_servers',
        entry: plain,
      };
  }
}
