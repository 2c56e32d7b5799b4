// Every setting, written once: its variable, check, default, description, and where it lands in
// Config. The layout below is the Config; the flat schema of variables is read off it.

import { ConfigError } from '../../errors/index.js';
import { codemode } from './codemode.js';
import {
  type Context,
  joinLayouts,
  resolveLayout,
  type SettingsOf,
  type Shape,
  settingsOf,
} from './define.js';
import { home } from './home.js';
import { http } from './http.js';
import { capacity, runLimits } from './limits.js';
import { policy } from './policy.js';
import { sandbox } from './sandbox.js';
import { kept } from './store.js';

export type { Context } from './define.js';
export { APPROVAL_MODES, type ApprovalMode, type Approver, RUNTIME_NAMES } from './policy.js';
export { SANDBOX_MODES, type SandboxMode } from './sandbox.js';

const layout = joinLayouts(home, runLimits, kept, capacity, sandbox, policy, codemode, http);

/** The resolved configuration every module reads. Paths are absolute. */
export type Config = Shape<typeof layout>;

/** The parsed settings, keyed by variable (before they land in Config). */
export type Settings = SettingsOf<typeof layout>;
export type SettingName = keyof Settings;

const settings = settingsOf(layout);

export const SETTING_NAMES = [...settings.keys()] as SettingName[];

/**
 * Every setting parsed from `raw` (values arrive as strings from env, as JSON values from
 * config.json), in the layout's order; the first invalid one as `NAME: what is wrong`. Each
 * setting's schema is made, used and let go before the next (Setting.schema): made all at once in
 * one object, ~90 schemas outlived the young generation's scavenges, and their ~1.4 MB stayed in a
 * server's old space as holes once collected.
 */
export function parseSettings(raw: Partial<Record<SettingName, unknown>>): Settings {
  const parsed: Record<string, unknown> = {};
  for (const [name, item] of settings) {
    const result = item.schema().safeParse(raw[name as SettingName]);
    if (!result.success)
      throw new ConfigError(`${name}: ${result.error.issues[0]?.message ?? 'invalid value'}`);
    if (result.data !== undefined) parsed[name] = result.data;
  }
  return parsed as Settings;
}

/** Config from parsed (and reconciled) settings. */
export const configFrom = (parsed: Settings, context: Context): Config =>
  resolveLayout(layout, parsed, context);
