// Browser/bundler entry of forkpoint-web. The WebAssembly module is inlined
// (base64) so no bundler has to find, copy or serve a .wasm file, and nothing
// here awaits at the top level: `await init()` compiles it off the main thread,
// and a call made before that compiles it synchronously (api.ts `wasm()`).
import * as glue from '../pkg/web/forkpoint_wasm.js';
import wasmBase64 from '../pkg/web/forkpoint_wasm_bg.inline.js';
import { setBackend, type WasmBackend } from './api.js';

function wasmBytes(): Uint8Array<ArrayBuffer> {
  const U8 = Uint8Array as unknown as { fromBase64?: (s: string) => Uint8Array<ArrayBuffer> };
  if (U8.fromBase64) return U8.fromBase64(wasmBase64); // no string copy where supported
  const text = atob(wasmBase64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

const backend = glue as unknown as WasmBackend;
setBackend({
  // initSync does nothing once an instance exists, so the two paths may race.
  sync: () => (glue.initSync({ module: new WebAssembly.Module(wasmBytes()) }), backend),
  async: async () => {
    const module = await WebAssembly.compile(wasmBytes());
    glue.initSync({ module });
    return backend;
  },
});

export * from './api.js';
