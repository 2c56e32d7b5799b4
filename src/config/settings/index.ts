// Every setting, written once: its variable, check, default, description, and where it lands in
// Config. The layout below is the Config; the flat schema of variables is read off it.

import { z } from 'zod';
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
 * Every setting by its variable; values arrive as strings (env) or JSON values (config.json). Made
 * anew for each parse and let go after it (Setting.schema).
 */
export const settingsSchema = () =>
  z
    .object(Object.fromEntries([...settings].map(([name, item]) => [name, item.schema()])))
    .describe(
      'codexec settings; conflicts between them are reconciled in coherence.ts',
    ) as unknown as z.ZodType<Settings, Partial<Record<SettingName, unknown>>>;

/** Config from parsed (and reconciled) settings. */
export const configFrom = (parsed: Settings, context: Context): Config =>
  resolveLayout(layout, parsed, context);
