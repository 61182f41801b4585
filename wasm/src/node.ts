// Node entry of forkpoint-web: loads the wasm-bindgen `nodejs` build synchronously.
import { createRequire } from 'node:module';
import { setBackend, type WasmBackend } from './api.js';

const require = createRequire(import.meta.url);
setBackend(require('../pkg/node/forkpoint_wasm.js') as WasmBackend);

export * from './api.js';
