// The caller's script library, as the script tools reach it.
import { z } from 'zod';
import { isNoScript, noScript, type ScriptStore } from '../../library/index.js';
import { currentPrincipal } from '../../util/index.js';
import type { Services } from '../services.js';

/** A script's name, as every script tool takes it. */
export const scriptName = () => z.string().min(1).max(200).describe('letters, digits, - and _');

/** The caller's own library (serve --http: its bearer token's principal); no tool names another. */
export function mine(services: Services): ScriptStore {
  return services.scripts.of(currentPrincipal());
}

/** A script of the caller's; a name it has none under is refused with the nearest it has. */
export async function scriptOf(scripts: ScriptStore, name: string, version?: number) {
  try {
    return await scripts.get(name, version);
  } catch (error) {
    if (!isNoScript(error)) throw error;
    throw noScript(
      name,
      (await scripts.list()).map((script) => script.name),
    );
  }
}
