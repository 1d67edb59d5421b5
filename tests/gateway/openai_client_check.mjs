// The official `openai` npm client against a Switchyard gateway (run by
// openai_client_test.cpp): tool calls with tool_choice "required", streamed (the client's
// own stream helper reassembles the deltas) and not, and reasoning_content, which the
// typed client does not declare, read from the raw message and deltas.
//   node openai_client_check.mjs BASE_URL MODEL   (the openai package resolvable from cwd)
import OpenAI from 'openai';

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ apiKey: 'unused', baseURL, maxRetries: 0, timeout: 120000 });
const failures = [];
const check = (ok, what) => { if (!ok) failures.push(what); };

const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 10 },
                                                  unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
                  required: ['city', 'unit'] } } },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
];
const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
const callArgs = (seed) => ({ model, messages, tools, tool_choice: 'required', parallel_tool_calls: false,
                              max_tokens: 400, temperature: 0.9, seed });

function checkCall(msg, where) {
  const calls = msg.tool_calls ?? [];
  check(calls.length === 1, `${where}: one tool call, got ${JSON.stringify(msg)}`);
  if (calls.length !== 1) return null;
  const c = calls[0];
  check(c.type === 'function' && typeof c.id === 'string' && c.id.length > 0, `${where}: id and type ${JSON.stringify(c)}`);
  check(['get_weather', 'get_time'].includes(c.function.name), `${where}: name ${c.function.name}`);
  let args = null;
  try { args = JSON.parse(c.function.arguments); } catch (e) { check(false, `${where}: arguments not JSON: ${c.function.arguments}`); }
  if (args && c.function.name === 'get_weather') {
    check(typeof args.city === 'string' && [...args.city].length <= 10, `${where}: city ${JSON.stringify(args)}`);
    check(['celsius', 'fahrenheit'].includes(args.unit), `${where}: unit ${JSON.stringify(args)}`);
    check(Object.keys(args).every((k) => k === 'city' || k === 'unit'), `${where}: keys ${JSON.stringify(args)}`);
  }
  if (args && c.function.name === 'get_time') check(Object.keys(args).length === 0, `${where}: ${JSON.stringify(args)}`);
  return c.function;
}

const summary = {};
for (const seed of [1, 2, 3]) {
  // Not streamed.
  const res = await client.chat.completions.create(callArgs(seed));
  check(res.choices[0].finish_reason === 'tool_calls', `seed ${seed}: finish_reason ${res.choices[0].finish_reason}`);
  const plain = checkCall(res.choices[0].message, `seed ${seed} create`);
  // Streamed, reassembled by the client's helper; the same seed gives the same call.
  const stream = client.chat.completions.stream({ ...callArgs(seed), stream: true });
  let chunks = 0;
  for await (const _ of stream) chunks++;
  const final = await stream.finalChatCompletion();
  check(final.choices[0].finish_reason === 'tool_calls', `seed ${seed} stream: finish_reason ${final.choices[0].finish_reason}`);
  const streamed = checkCall(final.choices[0].message, `seed ${seed} stream`);
  check(chunks > 2, `seed ${seed} stream: ${chunks} chunks`);
  check(JSON.stringify(plain) === JSON.stringify(streamed), `seed ${seed}: streamed ${JSON.stringify(streamed)} != ${JSON.stringify(plain)}`);
  summary[`call_${seed}`] = plain;
}

// Reasoning: this model's template opens <think> unless enable_thinking is false, which
// the gateway sets by default (chat_template_kwargs in its config); the request turns it on.
const think = { model, messages, max_tokens: 12, temperature: 1.0, seed: 5, chat_template_kwargs: { enable_thinking: true } };
const r = await client.chat.completions.create(think);
const reasoning = r.choices[0].message.reasoning_content;
check(typeof reasoning === 'string' && reasoning.length > 0, `reasoning_content missing: ${JSON.stringify(r.choices[0].message)}`);
check(!r.choices[0].message.content, `content beside unfinished reasoning: ${JSON.stringify(r.choices[0].message)}`);
let streamedReasoning = '';
const rs = await client.chat.completions.create({ ...think, stream: true });
for await (const chunk of rs) streamedReasoning += chunk.choices[0]?.delta?.reasoning_content ?? '';
check(streamedReasoning === reasoning, `streamed reasoning ${JSON.stringify(streamedReasoning)} != ${JSON.stringify(reasoning)}`);
summary.reasoning = reasoning;

console.log(JSON.stringify(summary));
if (failures.length) {
  console.error(failures.join('\n'));
  process.exit(1);
}
