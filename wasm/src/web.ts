// Browser/bundler entry of forkpoint-web: instantiates the wasm module (fetched
// next to this file) before the module finishes loading.
import init, * as wasm from '../pkg/web/forkpoint_wasm.js';
import { setBackend, type WasmBackend } from './api.js';

await init();
setBackend(wasm as unknown as WasmBackend);

export * from './api.js';
