import type { Approval } from './audit.js';
import type { Routed } from './route.js';

/** What an answer makes of the question: let through (and trusted from now on), or refused. */
export type Decided =
  | { readonly kind: 'approved'; readonly approval: Approval; readonly trust: boolean }
  | { readonly kind: 'denied'; readonly why: string; readonly decided_by?: string };

/**
 * The decision a routed question came back with: approved, with who approved (the client or the
 * dashboard) and, from the dashboard, who decided; or denied, with why and who decided. Nobody
 * to ask is a denial by the client (which could not be asked).
 */
export function decided(routed: Exclude<Routed, { kind: 'pending' }>): Decided {
  if (routed.kind === 'nobody') return { kind: 'denied', why: routed.why };
  const { reply, by, decider } = routed;
  const decidedBy = decider ? { decided_by: decider } : {};
  if (reply.kind === 'refused') return { kind: 'denied', why: reply.why, ...decidedBy };
  return {
    kind: 'approved',
    approval: { approved_by: by, ...decidedBy },
    trust: reply.decision === 'approve_trust_session',
  };
}
