// Shared state beyond one machine (CODEXEC_STORE=postgres://…): the connection pool and
// migrations, and the key replicas share. Each component keeps its own tables and migrations.
export { deriveKey, loadApprovalKey } from './key.js';
export { NonceLedger } from './nonces.js';
export { Postgres, type Queryable, redactUrl } from './postgres.js';
export {
  DEAD_AFTER_MS,
  HEARTBEAT_MS,
  migrateReplicas,
  NOW_MS,
  ReplicaRegistry,
  type ReplicaRow,
  replicaId,
} from './replicas.js';
export { LOST_KEPT_MS, type SessionRow, SessionTable } from './sessions.js';
