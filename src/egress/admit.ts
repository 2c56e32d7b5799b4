// Whether a lane lets a target through, and where to: the rules first (the target is neither
// resolved nor contacted when they refuse), then the user's answer when it may be asked, then the
// addresses the name resolves to, each checked again (an allowed public name answering 127.0.0.1
// reaches nothing of the host's network), then a connection to the first that answers.
import { isIP, type Socket, connect as tcpConnect } from 'node:net';
import { isPublicAddress } from './addresses.js';
import type { Target } from './target.js';
import type { LaneContext, LaneUser } from './types.js';

export type Admission =
  | {
      readonly allowed: true;
      readonly rule?: string;
      readonly asked?: true;
      /** Those the target resolved to that it may reach, in the resolver's order. */
      readonly addresses: readonly string[];
    }
  | {
      readonly allowed: false;
      readonly status: 403 | 502;
      readonly reason: string;
      readonly rule?: string;
      readonly asked?: true;
    };

export async function admit(lane: LaneContext, user: LaneUser, target: Target): Promise<Admission> {
  const { host, port } = target;
  const decision = user.rules.decide(host, port);
  const refused = { allowed: false, status: 403, reason: decision.reason ?? 'refused' } as const;
  if (!decision.allowed && !(decision.askable && user.ask))
    return { ...refused, ...(decision.rule !== undefined && { rule: decision.rule }) };
  const asked = !decision.allowed;
  if (asked && !(await answer(lane, user, target)))
    return { ...refused, asked, reason: `${decision.reason}; refused when asked` };

  let addresses: readonly string[];
  try {
    addresses = isIP(host) !== 0 ? [host] : await lane.resolve(host);
  } catch (error) {
    return { allowed: false, status: 502, reason: `${host} could not be resolved (${codeOf(error)})` };
  }
  if (addresses.length === 0)
    return { allowed: false, status: 502, reason: `${host} resolved to no address` };
  const checks = addresses.map((address) =>
    asked ? askedAddress(host, address) : user.rules.decideAddress(host, port, address),
  );
  const usable = addresses.filter((_, index) => checks[index]?.allowed);
  const first = checks[0];
  if (usable.length === 0 || !first)
    return {
      ...refused,
      reason: first?.reason ?? 'refused',
      ...(asked ? { asked } : { rule: decision.rule }),
    };
  return { allowed: true, addresses: usable, ...(asked ? { asked } : { rule: decision.rule }) };
}

/** What a record says of who decided: the rule, or that the user was asked. */
export function decidedBy(admission: Admission): { rule?: string; asked?: true } {
  return {
    ...(admission.rule !== undefined && { rule: admission.rule }),
    ...(admission.asked && { asked: true as const }),
  };
}

/** The user's answer, false when it throws or the lane closes first. */
async function answer(lane: LaneContext, user: LaneUser, target: Target): Promise<boolean> {
  let closed = () => {};
  const aborted = new Promise<false>((resolve) => {
    closed = () => resolve(false);
    lane.signal.addEventListener('abort', closed, { once: true });
  });
  try {
    if (lane.signal.aborted) return false;
    return (await Promise.race([user.ask?.(target.host, target.port, lane.signal), aborted])) === true;
  } catch {
    // A failed question is a refusal: the connection is refused, and recorded as such.
    return false;
  } finally {
    lane.signal.removeEventListener('abort', closed);
  }
}

/** An approved name reaches public addresses only (it was asked about by name, not address). */
function askedAddress(host: string, address: string): { allowed: boolean; reason?: string } {
  if (isIP(host) !== 0 || isPublicAddress(address)) return { allowed: true };
  return {
    allowed: false,
    reason: `${host} resolved to ${address}, an internal address; list ${host} itself to allow it`,
  };
}

/** A socket to the first of `addresses` that answers within the lane's connect timeout. */
export async function dial(
  lane: LaneContext,
  addresses: readonly string[],
  port: number,
): Promise<{ socket: Socket; address: string }> {
  let failure: unknown;
  for (const address of addresses) {
    try {
      return { socket: await connectOne(lane, address, port), address };
    } catch (error) {
      failure = error;
      if (lane.signal.aborted) break;
    }
  }
  throw failure;
}

function connectOne(lane: LaneContext, address: string, port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    // Half-open both ways: a client's end of sending must not cut what the target still sends.
    const socket = tcpConnect({ host: address, port, allowHalfOpen: true });
    // The lane's close destroys it, connected or not (the attempt then fails).
    lane.track(socket);
    const timer = setTimeout(
      () => fail(new Error(`no answer within ${lane.connectTimeout / 1000} s`)),
      lane.connectTimeout,
    );
    function fail(error: Error) {
      clearTimeout(timer);
      socket.destroy();
      reject(error);
    }
    const closed = () => fail(new Error('the proxy closed'));
    socket.once('error', fail);
    socket.once('close', closed);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.off('error', fail);
      socket.off('close', closed);
      resolve(socket);
    });
  });
}

/** An error's code (ENOTFOUND, ECONNREFUSED, …), or its message. */
export function codeOf(error: unknown): string {
  if (error instanceof Error) return (error as NodeJS.ErrnoException).code ?? error.message;
  return String(error);
}
