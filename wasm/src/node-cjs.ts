// Node entry of forkpoint-web for `require('forkpoint-web')` (CommonJS; built
// into dist/cjs by tsconfig.cjs.json): the same API over the wasm-bindgen
// `nodejs` build, loaded synchronously.
import { setBackend, type WasmBackend } from './api.js';

// From dist/cjs/node-cjs.js; a plain call, so TypeScript leaves the path alone.
setBackend(require('../../pkg/node/forkpoint_wasm.js') as WasmBackend);

export * from './api.js';
