// Interface only, while the proxy is built on its own branch (h-proxy); replaced by it on merge.
import type { EgressRules } from './rules.js';

export interface EgressConnection {
  readonly host: string;
  readonly port: number;
  readonly allowed: boolean;
  readonly reason?: string;
  readonly rule?: string;
  readonly address?: string;
  readonly method: string;
  readonly at: string;
}
export interface LaneUser {
  readonly rules: EgressRules;
  record(connection: EgressConnection): void;
  ask?(host: string, port: number): Promise<boolean>;
}
export interface Lane {
  readonly socket?: string;
  readonly port?: number;
  use(user: LaneUser | undefined): void;
  close(): Promise<void>;
}
export function openLane(_where: { socket: string } | { tcp: true }, _user?: LaneUser): Promise<Lane> {
  return Promise.reject(new Error('the egress proxy is not merged yet'));
}
