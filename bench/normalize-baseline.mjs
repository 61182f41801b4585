// The plain-JS baseline of the conversion benchmark: what a JS library does to
// send a pi context to a provider (pi-ai / Vercel style) — JSON.parse the
// messages, map each to the provider's shape, JSON.stringify the body. It does
// the same placement work as forkpoint (results where each provider wants them,
// thinking as text for another origin, Gemini responses grouped) but keeps no
// raw number text, no report, no id mapping and no byte stability.

const text = (b) => b.text;
const sameOrigin = (m, api) => m.api === api;

function anthropic(msgs) {
  const out = [];
  for (const m of msgs) {
    if (m.role === 'user') out.push({ role: 'user', content: typeof m.content === 'string' ? m.content : m.content.map(userBlockA) });
    else if (m.role === 'assistant') {
      const same = sameOrigin(m, 'anthropic-messages');
      const content = [];
      for (const b of m.content) {
        if (b.type === 'text') content.push({ type: 'text', text: b.text });
        else if (b.type === 'thinking') {
          if (same && b.thinkingSignature) content.push({ type: 'thinking', thinking: b.thinking, signature: b.thinkingSignature });
          else if (b.thinking.trim()) content.push({ type: 'text', text: b.thinking });
        } else if (b.type === 'toolCall') content.push({ type: 'tool_use', id: b.id, name: b.name, input: b.arguments });
      }
      if (content.length) out.push({ role: 'assistant', content });
    } else if (m.role === 'toolResult') {
      const r = { type: 'tool_result', tool_use_id: m.toolCallId, content: m.content.map(userBlockA), is_error: m.isError };
      const last = out[out.length - 1];
      if (last?.role === 'user' && Array.isArray(last.content) && last.content[0]?.type === 'tool_result') last.content.push(r);
      else out.push({ role: 'user', content: [r] });
    }
  }
  return { messages: out };
}
const userBlockA = (b) => (b.type === 'image' ? { type: 'image', source: { type: 'base64', media_type: b.mimeType, data: b.data } } : { type: 'text', text: b.text });

function openai(msgs) {
  const out = [];
  for (const m of msgs) {
    if (m.role === 'user') out.push({ role: 'user', content: typeof m.content === 'string' ? m.content : m.content.map(userBlockO) });
    else if (m.role === 'assistant') {
      const texts = m.content.filter((b) => b.type === 'text' || (b.type === 'thinking' && b.thinking.trim())).map((b) => b.text ?? b.thinking);
      const calls = m.content.filter((b) => b.type === 'toolCall').map((b) => ({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.arguments) } }));
      const msg = { role: 'assistant', content: texts.length ? texts.join('\n\n') : null };
      if (calls.length) msg.tool_calls = calls;
      out.push(msg);
    } else if (m.role === 'toolResult') out.push({ role: 'tool', tool_call_id: m.toolCallId, content: m.content.filter((b) => b.type === 'text').map(text).join('\n') });
  }
  return { messages: out };
}
const userBlockO = (b) => (b.type === 'image' ? { type: 'image_url', image_url: { url: `data:${b.mimeType};base64,${b.data}` } } : { type: 'text', text: b.text });

function responses(msgs) {
  const out = [];
  for (const m of msgs) {
    if (m.role === 'user') out.push({ role: 'user', content: typeof m.content === 'string' ? m.content : m.content.map((b) => (b.type === 'image' ? { type: 'input_image', image_url: `data:${b.mimeType};base64,${b.data}`, detail: 'auto' } : { type: 'input_text', text: b.text })) });
    else if (m.role === 'assistant') {
      for (const b of m.content) {
        if (b.type === 'text') out.push({ role: 'assistant', content: b.text });
        else if (b.type === 'thinking' && b.thinking.trim()) out.push({ role: 'assistant', content: b.thinking });
        else if (b.type === 'toolCall') out.push({ type: 'function_call', call_id: b.id.split('|')[0], name: b.name, arguments: JSON.stringify(b.arguments) });
      }
    } else if (m.role === 'toolResult') out.push({ type: 'function_call_output', call_id: m.toolCallId.split('|')[0], output: m.content.filter((b) => b.type === 'text').map(text).join('\n') });
  }
  return { input: out };
}

function google(msgs) {
  const out = [];
  for (const m of msgs) {
    if (m.role === 'user') out.push({ role: 'user', parts: typeof m.content === 'string' ? [{ text: m.content }] : m.content.map(partG) });
    else if (m.role === 'assistant') {
      const parts = [];
      for (const b of m.content) {
        if (b.type === 'text') parts.push({ text: b.text });
        else if (b.type === 'thinking' && b.thinking.trim()) parts.push({ text: b.thinking });
        else if (b.type === 'toolCall') parts.push({ functionCall: { name: b.name, args: b.arguments } });
      }
      if (parts.length) out.push({ role: 'model', parts });
    } else if (m.role === 'toolResult') {
      const part = { functionResponse: { name: m.toolName, response: m.isError ? { error: m.content.filter((b) => b.type === 'text').map(text).join('\n') } : { output: m.content.filter((b) => b.type === 'text').map(text).join('\n') } } };
      const last = out[out.length - 1];
      if (last?.role === 'user' && last.parts[0]?.functionResponse) last.parts.push(part);
      else out.push({ role: 'user', parts: [part] });
    }
  }
  return { contents: out };
}
const partG = (b) => (b.type === 'image' ? { inlineData: { mimeType: b.mimeType, data: b.data } } : { text: b.text });

export const baseline = { anthropic, openai, 'openai-responses': responses, google };
