export { ForkpointError, toForkpointError, call, callAsync, toJson } from './errors.js';
export { SessionView, LazyView } from './session.js';
export type { NativeSessionLike, NativeLazyLike, SessionBranch, ContextOptions } from './session.js';
export { EventLog, EventBus } from './events.js';
export type { NativeEventLogLike, LoggedEvent, NewEvent, BookmarkedEvent, SubscribeOptions } from './events.js';
export { createNormalizer, RequestBuilder, requestBuilderOf, useBodyDecoder, concat as concatBytes } from './normalize.js';
export type { NativeNormalizerLike, NativeRequestBuilderLike, BuiltRequest, Normalizer, ProviderConversion, FromProviderResult, DenormalizedMessage, MessagesInput } from './normalize.js';
export { Agent, ToolRegistry, TemplateRegistry, ScriptedProvider } from './agent.js';
export { createProviders, isStreamingProvider } from './provider.js';
export type { NativeProviderLike, NativeStreamDecoderLike, Pricing, ProviderApi, ProviderOptions, StreamingProvider, ThinkingOption, WireRequest } from './provider.js';
export type {
  AgentBackend,
  AgentLoggedEvent,
  AgentConfig,
  AgentDependencies,
  AgentInfo,
  AgentStatus,
  AgentState,
  AgentTemplate,
  AssistantReply,
  ChatResult,
  CheckpointArgs,
  CompleteOptions,
  ModelProvider,
  ModelRef,
  ModelRequest,
  NativeAgentLike,
  Permission,
  RedactContext,
  RedactKind,
  Redactor,
  ResumeOptions,
  ResumeStrategy,
  ScriptedTurn,
  StoredMeta,
  Tool,
  ToolCallView,
  ToolContext,
  ToolDefinition,
  TodoItem,
  UsageTotals,
} from './agent.js';
