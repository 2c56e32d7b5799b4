// Packages: validated pip/npm installs into a session's environment or the global one under
// CODEXEC_HOME/envs/, and whether a script's required packages are available.

export { type CheckContext, findMissingPackages } from './check.js';
export type { InstallResult, PackageEnv } from './installer.js';
export {
  type InstallOutcome,
  type InstallRequest,
  PackageService,
  type SessionPackageHost,
} from './service.js';
export { type PackageLanguage, type PackageSpec, parsePackageSpec } from './spec.js';
