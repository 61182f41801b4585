export { ForkpointError, toForkpointError, call, callAsync } from './errors.js';
export { SessionView } from './session.js';
export type { NativeSessionLike, SessionBranch, ContextOptions } from './session.js';
