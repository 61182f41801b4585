// Compile-time checks of the generated agent-event types (nothing is executed):
// `tsc -p tests/types/tsconfig.events.json` needs only ts-types, no build.
import type { AgentEvent, AgentEventType, Channel, ToolCallSnapshot } from '@forkpoint/types';

/** An event as a subscriber gets it: the event and the log's envelope. */
type Logged<K extends AgentEventType> = Extract<AgentEvent, { type: K }> & { seq: number; timestamp: number; channel: Channel };

declare function on<K extends AgentEvent['type']>(type: K, h: (e: Logged<K>) => void): () => void;

export function subscriptions(): void {
  on('tool:end', (e) => e.call.name);
  on('tool:end', (e) => {
    const call: ToolCallSnapshot = e.call;
    const name: string | undefined = e.call.name;
    const sealed: boolean | undefined = e.sealed;
    const seq: number = e.seq;
    const channel: Channel = e.channel;
    void [call, name, sealed, seq, channel];
  });
  // @ts-expect-error: there is no 'tool:endd' event
  on('tool:endd', (e) => e);
  // @ts-expect-error: a text chunk has no call
  on('text_chunk', (e) => e.call);
  on('permission_decided', (e) => {
    const decision: 'allow' | 'deny' = e.decision;
    const note: string | undefined = e.note;
    void [decision, note];
  });
  on('breakpoint_changed', (e) => {
    const at: number = e.timestamp;
    // @ts-expect-error: not a breakpoint
    const bad: typeof e.current = 'SLEEPING';
    void [at, bad];
  });
  on('agent_resumed', (e) => {
    for (const s of e.sealed) void [s.id, s.priorState, s.recommendations.length, s.auditTrail?.[0]?.state];
    for (const o of e.open) void [o.id, o.state ?? 'no record'];
  });
  on('todo_changed', (e) => e.current.filter((t) => t.status === 'in_progress').map((t) => t.title));
  on('step_complete', (e) => e.done.seq + e.step);
  // @ts-expect-error: `step` is a number
  on('done', (e) => e.step.toUpperCase());
}

/** Narrowing on `type`; every type handled leaves `never`. */
export function describe(e: AgentEvent): string {
  switch (e.type) {
    case 'think_chunk_start':
    case 'think_chunk_end':
    case 'text_chunk_start':
      return `step ${e.step}`;
    case 'think_chunk':
    case 'text_chunk':
      return e.delta;
    case 'text_chunk_end':
      return e.text;
    case 'tool:start':
    case 'tool:end':
    case 'tool_executed':
    case 'permission_required':
      return e.call.id;
    case 'tool:error':
      return e.error;
    case 'done':
      return e.reason;
    case 'permission_decided':
      return e.callId;
    case 'agent_created':
      return e.templateId ?? e.agentId;
    case 'agent_resumed':
      return e.strategy;
    case 'agent_forked':
      return `${e.from}@${e.snapshot}:${e.entryId}`;
    case 'state_changed':
      return e.state;
    case 'breakpoint_changed':
      return `${e.previous}->${e.current}`;
    case 'step_complete':
      return String(e.done.seq);
    case 'error':
      return `${e.severity} ${e.phase}: ${e.message}`;
    case 'token_usage':
      return String(e.inputTokens + e.outputTokens === e.totalTokens);
    case 'tool_custom_event':
      return `${e.toolName}/${e.eventType}: ${JSON.stringify(e.data)}`;
    case 'todo_changed':
      return String(e.current.length - e.previous.length);
    case 'checkpoint_restored':
      return e.checkpointId;
    case 'tool_input_chunk_start':
      return `${e.index}:${e.name}`;
    case 'tool_input_chunk':
      return e.delta;
    case 'tool_input_chunk_end':
      return e.callId;
    case 'model_partial':
      return `${e.reason}: ${e.content.length} blocks`;
    case 'request_converted':
      return `${e.provider}/${e.model}: ${e.steps.length} steps`;
    default: {
      const none: never = e;
      return none;
    }
  }
}

/** The event types, exactly: a missing or an extra one fails to compile. */
export const EVERY_TYPE: Record<AgentEventType, true> = {
  think_chunk_start: true,
  think_chunk: true,
  think_chunk_end: true,
  text_chunk_start: true,
  text_chunk: true,
  text_chunk_end: true,
  'tool:start': true,
  'tool:end': true,
  'tool:error': true,
  done: true,
  permission_required: true,
  permission_decided: true,
  agent_created: true,
  agent_resumed: true,
  agent_forked: true,
  state_changed: true,
  breakpoint_changed: true,
  step_complete: true,
  error: true,
  token_usage: true,
  tool_executed: true,
  tool_custom_event: true,
  todo_changed: true,
  checkpoint_restored: true,
  tool_input_chunk_start: true,
  tool_input_chunk: true,
  tool_input_chunk_end: true,
  model_partial: true,
  request_converted: true,
};
