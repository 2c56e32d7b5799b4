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
import type { Answer, ApprovalAsker, ApprovalForm } from './approval.js';
import type { ApprovalQueue } from './approval-queue.js';
import { type Answered, firstAnswer } from './approver.js';
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

type Verdict = Pick<AuditAttempt, 'approved' | 'approved_by' | 'rule'>;

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
  }

  get rules(): RuleSet {
    return this.policy.rules;
  }

  /**
   * Under approval `ask` with the egress allowlist: what asks the client, while the code runs,
   * about a host off the list (each host once per run; "trust" allows it on this connection, or
   * in this session, from then on). A 2025-era call asks with an elicitation; a 2026-era call
   * cannot be paused for a round trip, but its task can (input_required). Undefined where nobody
   * can be asked mid-run: the host is refused as any other. Called where the run starts.
   */
  egressAsker(ctx: ServerContext, tool: string, sessionId: string | null): LaneUser['ask'] {
    const { services, asker } = this;
    if (this.policy.approval !== 'ask' || services.config.network !== 'allowlist') return undefined;
    if (asker.cannotAsk(ctx)) return undefined;
    const task = asker.modernRequest(ctx) ? currentTaskRun() : undefined;
    if (asker.modernRequest(ctx) && !task) return undefined;
    const asked = new Map<string, Promise<boolean>>();
    return (host, port) => {
      const key = `egress:${sessionId ?? ''}:${host}:${port}`;
      if (this.trusted.has(key)) return Promise.resolve(true);
      let answer = asked.get(key);
      if (!answer) {
        const form = { tool, sessionId, host, port };
        const reply = task ? asker.askHostInTask(task, form) : asker.askHost(ctx, form);
        answer = reply.then((reply) => {
          if (reply.kind === 'decided' && reply.decision === 'approve_trust_session') this.trusted.add(key);
          return reply.kind === 'decided';
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
    let approvedBy: ApprovedBy = decision.kind === 'run' ? decision.approvedBy : 'client';
    if (decision.kind === 'ask') {
      const key = attempt.sessionId ? `session:${attempt.sessionId}` : `${attempt.tool}:${attempt.language}`;
      if (this.trusted.has(key)) {
        approvedBy = 'trusted_session';
      } else {
        const refused = { approved: false, approved_by: null, rule: decision.rule } as const;
        const unavailable = this.asker.cannotAsk(ctx);
        const queue = this.queue;
        const askClient = !unavailable && this.services.config.gate.approver !== 'dashboard';
        if (unavailable && !queue) {
          await this.audit(attempt, refused);
          throw new ApprovalUnavailableError(
            `this run needs approval (${decision.reason}), but ${unavailable}. Nothing ran. The server ` +
              'owner can set CODEXEC_APPROVAL=auto, or use a client that supports elicitation',
          );
        }
        const form = { ...attempt, reason: decision.reason };
        // 2026 era in a task: the task starts now and asks inside (a retry carrying the answer to
        // an input_required call is read on the call, as before).
        if (taskScopeEra() === 'modern' && this.asker.modernRequest(ctx) && !this.asker.carriesAnswer(ctx))
          return this.approveInTask(form, key, refused, askClient, (by) =>
            this.approvedRun(ctx, attempt, decision.rule, by, execute, facts)(),
          );
        // A plain call asks the client when it can (a 2026-era one answers input_required at once,
        // so only its client can answer); else it waits here for the dashboard.
        const answer: Answer & { readonly by?: 'dashboard' } =
          askClient || !queue
            ? await this.ask(ctx, form, refused)
            : await this.askDashboard(ctx.mcpReq.signal, form, refused);
        if (answer.kind === 'pending') return answer.result;
        this.services.metrics.approvalAnswered(answer.kind === 'decided');
        if (answer.kind === 'refused') {
          await this.audit(attempt, refused);
          throw new ApprovalDeniedError(`not approved: ${answer.why}. Nothing ran`);
        }
        if (answer.decision === 'approve_trust_session') this.trusted.add(key);
        if (answer.by) approvedBy = answer.by;
      }
    }
    const go = this.approvedRun(ctx, attempt, decision.rule, approvedBy, execute, facts);
    // MCP Tasks: approved, the run goes on in the background and the call answers with its task.
    return startAsTask(go) ?? go();
  }

  /** The run once approved: in a run slot, its audit entry written whatever its outcome. */
  private approvedRun<R>(
    ctx: ServerContext,
    attempt: Attempt,
    rule: Verdict['rule'],
    approvedBy: ApprovedBy,
    execute: () => Promise<R>,
    facts: (result: R) => RunFacts,
  ): () => Promise<R> {
    const approval = { approved: true, approved_by: approvedBy, rule } as const;
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
   * Start the task at once and ask for approval inside it (input_required until tasks/update
   * answers). Refused, the task completes with the APPROVAL_DENIED result a plain call gets.
   */
  private async approveInTask<R>(
    form: ApprovalForm,
    key: string,
    refused: Verdict,
    askClient: boolean,
    run: (approvedBy: ApprovedBy) => Promise<R>,
  ): Promise<TaskHandle> {
    const answered = await this.enterPending(form, refused);
    const queue = this.queue;
    const principal = currentPrincipal();
    const handle = startAsTask(async () => {
      let answer: Answered;
      this.services.metrics.approvalAsked();
      const task = currentTaskRun() as TaskRun;
      const client = (withdraw?: AbortSignal) => this.asker.askInTask(task, form, withdraw);
      try {
        answer = queue
          ? await firstAnswer(queue, principal, form, task.signal, askClient ? client : undefined)
          : { reply: await client(), by: 'client' };
      } finally {
        answered();
      }
      const { reply } = answer;
      this.services.metrics.approvalAnswered(reply.kind === 'decided');
      if (reply.kind !== 'decided') {
        await this.audit(form, refused);
        throw new ApprovalDeniedError(`not approved: ${reply.why}. Nothing ran`);
      }
      if (reply.decision === 'approve_trust_session') this.trusted.add(key);
      return run(answer.by);
    });
    if (!handle) throw new Error('approveInTask outside a task scope'); // the caller checked
    return handle;
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

  /** One more pending approval (its release returned), or the audited refusal past their bound. */
  private async enterPending(form: ApprovalForm, refused: Verdict): Promise<() => void> {
    try {
      return this.services.pendingApprovals.enter();
    } catch (error) {
      await this.audit(form, refused);
      throw error;
    }
  }

  /** Ask the client, counted among the server's pending approvals (refused past their bound). */
  private ask(ctx: ServerContext, form: ApprovalForm, refused: Verdict): Promise<Answer> {
    // A 2026-era retry carries the answer to a form asked before: not asked twice.
    return this.waitFor(form, refused, !this.asker.carriesAnswer(ctx), () => this.asker.ask(ctx, form));
  }

  /** Wait for the dashboard's queue to answer (CODEXEC_APPROVER=dashboard, or a client that cannot). */
  private askDashboard(signal: AbortSignal, form: ApprovalForm, refused: Verdict) {
    const queue = this.queue as ApprovalQueue; // the caller checked
    return this.waitFor(form, refused, true, async () => ({
      ...(await queue.ask(currentPrincipal(), form, signal)),
      by: 'dashboard' as const,
    }));
  }

  /** CODEXEC_APPROVER=dashboard or both: serve --http's queue, which answers too (stdio: none). */
  private get queue(): ApprovalQueue | undefined {
    return this.services.config.gate.approver === 'client' ? undefined : this.services.approvals;
  }

  /** Run `ask` counted among the pending approvals (refused LIMIT_REACHED past their bound). */
  private async waitFor<A>(form: ApprovalForm, refused: Verdict, asked: boolean, ask: () => Promise<A>) {
    const answered = await this.enterPending(form, refused);
    if (asked) this.services.metrics.approvalAsked();
    const waited = phase('approval wait');
    try {
      return await ask();
    } finally {
      waited?.();
      answered();
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
