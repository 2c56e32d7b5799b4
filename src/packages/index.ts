// Packages: where installed packages live (per session, or global under CODEXEC_HOME/envs/)
// and whether a script's required packages are available.

export { type CheckContext, findMissingPackages } from './check.js';
