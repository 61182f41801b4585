/**
 * Real model providers in Node (`createProvider`): the shared provider code
 * over the addon's core functions. Importing `forkpoint` also makes it the
 * default `modelFactory`, so `resumeFromStore` rebuilds a provider from the
 * stored `{provider, model, api}` with keys from the environment.
 */
import { Agent, createProviders } from '@forkpoint/shared';
import * as native from '../native/binding.js';

const providers = createProviders(native);

/**
 * A streaming provider for Anthropic Messages, OpenAI Chat Completions, OpenAI
 * Responses or Gemini (or any endpoint that speaks one of them):
 * `createProvider({ provider: 'anthropic', model: 'claude-sonnet-4-5' })`.
 */
export const createProvider = providers.createProvider;

/** The default `modelFactory`: a provider from a stored model reference. */
export const providerFromRef = providers.providerFromRef;

Agent.defaultModelFactory ??= providerFromRef;

export { isStreamingProvider } from '@forkpoint/shared';
export type { Pricing, ProviderApi, ProviderOptions, StreamingProvider, ThinkingOption, WireRequest } from '@forkpoint/shared';
