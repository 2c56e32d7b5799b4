import type { InputRequiredResult, ServerContext } from '@modelcontextprotocol/server';
import { CONNECTIONS, type LaneUser } from '../egress/index.js';
import { ApprovalDeniedError, ApprovalUnavailableError, QuotaExceededError } from '../errors/index.js';
import {
  type ApprovedBy,
  type AuditAttempt,
  decide,
  type GatePolicy,
  prepareDecision,
  type RuleSet,
} from '../policy/index.js';
import type { RunHold } from '../quotas/index.js';
import type { TaskRun } from '../tasks/index.js';
import { phase } from '../traces/index.js';
import { type CpuMeter, currentPrincipal, log, withCpuMeter } from '../util/index.js';
import type { ApprovalAsker } from './approval.js';
import { ApprovalRouter, type Routed } from './approver.js';
import { type RunFacts, wireOnly } from './run-facts.js';
import type { Services } from './services.js';
import { currentTaskRun, startAsTask, type TaskHandle, taskScopeEra } from './tasks.js';

/** One attempt to run code, as the gate and the audit see it. */
export interface Attempt {
  readonly tool: string;
  readonly language: string;
  readonly code: string;
  readonly sessionId: string | null;
  /** Runtimes any one of which allows it (install_package for node: node or typescript). */
  readonly runtimes?: readonly string[];
  /** Code mode: what else the run may do, shown in the approval form (allowed tools, sampling). */
  readonly powers?: string | undefined;
  /** Whether it takes one of the server's run slots (false: write_file, which runs nothing). */
  readonly runs?: boolean;
}

export { type RunFacts, runFacts } from './run-facts.js';

type Verdict = Pick<AuditAttempt, 'approved' | 'approved_by' | 'rule' | 'decided_by'>;
/** Who let an approved run through: the audit's `approved_by`, and the dashboard's decider. */
type Approval = { readonly approved_by: ApprovedBy; readonly decided_by?: string };

const SUMMARY_CHARS = 500;

/**
 * The gate as one MCP connection sees it: the pure decision (policy), then, when it asks, the
 * client's approval and this connection's trust, then the run, then the audit entry. One per
 * connection (createServer), so trust never leaks from one client to another.
 */
export class Gatekeeper {
  /** `session:<id>` for a trusted REPL session, `<tool>:<language>` for trusted one-shot runs. */
  private readonly trusted: Set<string>;
  private readonly policy: GatePolicy;
  /** Who is asked (CODEXEC_APPROVER): every question this gate raises goes through it. */
  private readonly router: ApprovalRouter;

  /**
   * `trusted`: what the user trusted so far, when it outlives this gate (serve --http: one gate per
   * request, one set per principal); else this gate's own (stdio: one per connection).
   */
  constructor(
    private readonly services: Services,
    private readonly asker: ApprovalAsker,
    trusted = new Set<string>(),
  ) {
    this.trusted = trusted;
    const { gate } = services.config;
    this.policy = {
      approval: gate.approval,
      allowedRuntimes: gate.allowedRuntimes,
      rules: services.rules,
      commands: services.config.command,
    };
    this.router = new ApprovalRouter(
      gate.approver,
      services.approvals,
      services.pendingApprovals,
      services.metrics,
    );
  }

  get rules(): RuleSet {
    return this.policy.rules;
  }

  /**
   * Under approval `ask` with the egress allowlist: what asks, while the code runs, about a host off
   * the list (each host once per run; "trust" allows it on this connection, or in this session,
   * from then on). Asked as any question is (CODEXEC_APPROVER): of the client where it can be
   * asked mid-run (a 2025-era call's elicitation, a 2026-era task's input request; a 2026-era
   * plain call cannot pause), of the dashboard's approvers under dashboard or both. Undefined
   * where nobody can be asked: the host is refused as any other. Called where the run starts.
   */
  egressAsker(ctx: ServerContext, tool: string, sessionId: string | null): LaneUser['ask'] {
    if (this.policy.approval !== 'ask' || this.services.config.network !== 'allowlist') return undefined;
    const client = this.asker.channel(ctx, 'host');
    if (this.router.nobody(client)) return undefined;
    // The proxy asks from its sockets' callbacks: the principal and the call are this request's.
    const principal = currentPrincipal();
    const call = currentTaskRun()?.signal ?? ctx.mcpReq.signal;
    const asked = new Map<string, Promise<boolean>>();
    return (host, port, signal) => {
      const key = `egress:${sessionId ?? ''}:${host}:${port}`;
      if (this.trusted.has(key)) return Promise.resolve(true);
      let answer = asked.get(key);
      if (!answer) {
        const question = { kind: 'host', form: { tool, sessionId, host, port } } as const;
        const withdraw = signal ? AbortSignal.any([call, signal]) : call;
        answer = this.router.ask(principal, question, client, withdraw).then((routed) => {
          if (routed.kind !== 'answered' || routed.reply.kind !== 'decided') return false;
          if (routed.reply.decision === 'approve_trust_session') this.trusted.add(key);
          return true;
        });
        asked.set(key, answer);
      }
      return answer;
    };
  }

  /**
   * Run `execute` if the gate lets it: returns its result, its task's handle (a call that may
   * become a task), or (2026 era) the input-required result that asks the client first. Refusals
   * throw their coded errors after the audit entry.
   */
  async run<R>(
    ctx: ServerContext,
    attempt: Attempt,
    execute: () => Promise<R>,
    facts: (result: R) => RunFacts,
  ): Promise<R | InputRequiredResult | TaskHandle> {
    await prepareDecision(attempt);
    const decision = decide(attempt, this.policy);
    if (decision.kind === 'refuse') {
      await this.audit(attempt, { approved: false, approved_by: null, rule: decision.rule });
      throw decision.error;
    }
    const start = (approval: Approval) => {
      const go = this.approvedRun(ctx, attempt, decision.rule, approval, execute, facts);
      // MCP Tasks: approved, the run goes on in the background and the call answers with its task.
      return startAsTask(go) ?? go();
    };
    if (decision.kind === 'run') return start({ approved_by: decision.approvedBy });
    const key = attempt.sessionId ? `session:${attempt.sessionId}` : `${attempt.tool}:${attempt.language}`;
    if (this.trusted.has(key)) return start({ approved_by: 'trusted_session' });
    const refused = { approved: false, approved_by: null, rule: decision.rule } as const;
    const unavailable = this.router.nobody(this.asker.channel(ctx, 'run'));
    if (unavailable) {
      await this.audit(attempt, refused);
      throw new ApprovalUnavailableError(
        `this run needs approval (${decision.reason}), but ${unavailable}. Nothing ran. The server ` +
          'owner can set CODEXEC_APPROVAL=auto, or use a client that supports elicitation',
      );
    }
    const question = { kind: 'run', form: { ...attempt, reason: decision.reason } } as const;
    const principal = currentPrincipal();
    const held = await this.hold(attempt, refused);
    // 2026 era in a task: the task starts now and asks inside (a retry carrying the answer to an
    // input_required call is read on the call, as before).
    if (taskScopeEra() === 'modern' && this.asker.modernRequest(ctx) && !this.asker.carriesAnswer(ctx)) {
      const handle = startAsTask(async () => {
        const task = currentTaskRun() as TaskRun;
        const client = this.asker.channel(ctx, 'run');
        const routed = await this.router.ask(principal, question, client, task.signal, held);
        return this.approvedRun(
          ctx,
          attempt,
          decision.rule,
          await this.approval(attempt, routed, refused, key),
          execute,
          facts,
        )();
      });
      if (!handle) throw new Error('a modern task scope without a task'); // taskScopeEra said there is one
      return handle;
    }
    const routed = await this.router.ask(
      principal,
      question,
      this.asker.channel(ctx, 'run'),
      ctx.mcpReq.signal,
      held,
    );
    if (routed.kind === 'pending') return routed.result;
    return start(await this.approval(attempt, routed, refused, key));
  }

  /**
   * What an answer makes of the run: approved (trust noted when asked for), with who approved and
   * decided; or the audited APPROVAL_DENIED.
   */
  private async approval(attempt: Attempt, routed: Routed, refused: Verdict, key: string): Promise<Approval> {
    if (routed.kind === 'pending') throw new Error('a question asked by retry inside a task'); // channel() never does
    const answered =
      routed.kind === 'answered'
        ? routed
        : { reply: { kind: 'refused', why: routed.why } as const, by: 'client' as const };
    const { reply, by } = answered;
    const decided = 'decider' in answered && answered.decider ? { decided_by: answered.decider } : {};
    if (reply.kind === 'refused') {
      await this.audit(attempt, { ...refused, ...decided });
      throw new ApprovalDeniedError(`not approved: ${reply.why}. Nothing ran`);
    }
    if (reply.decision === 'approve_trust_session') this.trusted.add(key);
    return { approved_by: by, ...decided };
  }

  /** The run once approved: in a run slot, its audit entry written whatever its outcome. */
  private approvedRun<R>(
    ctx: ServerContext,
    attempt: Attempt,
    rule: Verdict['rule'],
    approved: Approval,
    execute: () => Promise<R>,
    facts: (result: R) => RunFacts,
  ): () => Promise<R> {
    const approval = { approved: true, ...approved, rule } as const;
    return async () => {
      // A task's run waits for its slot under the task's signal: the call has been answered.
      const signal = currentTaskRun()?.signal ?? ctx.mcpReq.signal;
      const { metrics } = this.services;
      const started = performance.now();
      let result: R;
      // serve --http: the dashboard's feed sees the run (and, through withProgress, its output).
      const feed = this.services.feed;
      const tracked =
        feed && attempt.runs !== false
          ? () => feed.track(attempt, currentPrincipal(), execute, facts)
          : execute;
      try {
        result =
          attempt.runs === false ? await execute() : await this.withSlot(attempt.tool, signal, tracked);
      } catch (error) {
        // A quota's refusal (CODEXEC_QUOTAS) ran nothing: recorded as refused, the limit as its rule.
        const quota = error instanceof QuotaExceededError;
        if (attempt.runs !== false && !quota)
          metrics.runFailed(attempt.tool, attempt.language, performance.now() - started);
        await this.audit(
          attempt,
          quota ? { approved: false, approved_by: null, rule: `quota:${error.limit}` } : approval,
        );
        throw error;
      }
      if (attempt.runs !== false)
        metrics.runEnded(attempt.tool, attempt.language, result, performance.now() - started);
      await this.audit(attempt, approval, facts(result));
      return wireOnly(result);
    };
  }

  /**
   * Go on with a run the gate already let through (send_to_session's `input` to the code that
   * waits for it: data for approved code, as write_stdin's is): no new decision or audit entry,
   * but a run slot, and a task where the call may become one.
   */
  resume<R>(ctx: ServerContext, tool: string, execute: () => Promise<R>): Promise<R | TaskHandle> {
    const go = () =>
      this.withSlot(tool, currentTaskRun()?.signal ?? ctx.mcpReq.signal, execute).then(wireOnly);
    return startAsTask(go) ?? go();
  }

  /** A place among the pending approvals (its release returned), or the audited refusal past their bounds. */
  private async hold(attempt: Attempt, refused: Verdict): Promise<() => void> {
    try {
      return this.router.hold(currentPrincipal());
    } catch (error) {
      await this.audit(attempt, refused);
      throw error;
    }
  }

  /**
   * Run `execute` holding one of the server's run slots (CODEXEC_MAX_CONCURRENT_RUNS): taken after
   * approval, so nobody's answer is awaited while holding one. Free, it is taken without a tick.
   * The principal's quotas (CODEXEC_QUOTAS) are asked first (a refusal never waits for a slot),
   * then admit the run once it has its slot: it counts as running until it ends, when the CPU its
   * processes used is charged to the principal's day.
   */
  private async withSlot<R>(tool: string, signal: AbortSignal, execute: () => Promise<R>): Promise<R> {
    const { slots, quotas } = this.services;
    const principal = currentPrincipal();
    const checked = quotas?.check(principal);
    if (checked) await checked; // the shared store's counts: one round trip
    let slot = slots.acquire(signal);
    if (typeof slot !== 'function') {
      const asked = Date.now();
      const waited = phase('slot wait');
      try {
        slot = await slot;
      } finally {
        waited?.();
      }
      const { max } = slots.status();
      this.services.metrics.slotWaited(Date.now() - asked);
      log(
        'info',
        `${tool} waited ${Date.now() - asked} ms for a run slot (CODEXEC_MAX_CONCURRENT_RUNS=${max})`,
      );
    }
    let hold: RunHold | undefined;
    try {
      const admitted = quotas?.admit(principal);
      hold = admitted instanceof Promise ? await admitted : admitted;
    } catch (error) {
      slot();
      throw error;
    }
    const meter: CpuMeter = { usec: 0 };
    const ran = phase('run');
    try {
      return await (hold ? withCpuMeter(meter, execute) : execute());
    } finally {
      ran?.();
      hold?.end(meter.usec);
      slot();
    }
  }

  private async audit(attempt: Attempt, verdict: Verdict, facts?: RunFacts): Promise<void> {
    const entry: AuditAttempt = {
      tool: attempt.tool,
      execution_id: facts?.execution_id ?? null,
      session_id: attempt.sessionId,
      runtime: attempt.language,
      input_code: attempt.code,
      output_summary: facts?.stdout.slice(0, SUMMARY_CHARS) ?? '',
      exit_code: facts?.exit_code ?? null,
      duration_ms: facts?.duration_ms ?? null,
      ...verdict,
      principal: currentPrincipal(),
      tool_calls: facts?.tool_calls ?? null,
      ...(facts?.tool_calls_omitted && { tool_calls_omitted: facts.tool_calls_omitted }),
      ...(facts?.[CONNECTIONS] && { network: facts[CONNECTIONS] }),
    };
    // The run's own result must still reach the client; a broken sink is loud on stderr.
    await this.services.audit.record(entry).catch((error: Error) => log('error', `audit: ${error.message}`));
  }
}
