// The official `openai` npm client against `llmwb-cli serve`: chat and completions, streaming
// and not, n=2, stop strings, seed reproducibility, logprobs, usage; greedy results equal
// `llmwb-cli generate --temperature 0`; then load on loopback: 64 concurrent streaming clients
// with staggered starts whose greedy outputs equal the sequential ones, aborted streams that
// leave no KV block in use, and a resident set that stays flat over repeated rounds.
// Usage: node openai_client.mjs SERVER_URL LLMWB_CLI MODEL OPENAI_MODULE_DIR SERVER_PID
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import assert from 'node:assert/strict';

const [, , url, cli, model, moduleDir, pid] = process.argv;
const require = createRequire(path.resolve(moduleDir) + '/');
const openai = require('openai');
const OpenAI = openai.OpenAI ?? openai.default ?? openai;
const client = new OpenAI({ baseURL: url + '/v1', apiKey: 'none', maxRetries: 0, timeout: 60000 });

const t0 = Date.now();
let checks = 0;
async function check(name, fn) {
  const t = Date.now();
  await fn();
  checks++;
  console.log(`ok ${checks} - ${name} (${Date.now() - t} ms)`);
}

const PROMPTS = ['Once upon a time', 'The little dog', 'Lily and Tom went to the park', 'One day, a big'];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// `llmwb-cli generate --json`: one object per line, in prompt order.
function generate(args) {
  const out = execFileSync(cli, ['generate', '--model', model, '--json', '--quiet', '--temperature', '0',
    '--max-model-len', '128', ...args], { encoding: 'utf8' });
  return out.trim().split('\n').map((l) => JSON.parse(l));
}

async function metrics() {
  const text = await (await fetch(url + '/metrics')).text();
  const value = (name) => {
    const m = text.match(new RegExp('^' + name.replace(/[:]/g, '\\:') + '\\{[^}]*\\} (\\S+)$', 'm'));
    return m ? Number(m[1]) : NaN;
  };
  return { text, value };
}

function rssKiB() {
  const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/);
  return Number(m[1]);
}

async function streamText(params, abortAfterChunks = -1) {
  const stream = await client.completions.create({ ...params, stream: true });
  let text = '', chunks = 0, finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
    if (++chunks === abortAfterChunks) break;   // leaving the loop aborts the HTTP request
  }
  return { text, finish, chunks };
}

await check('GET /v1/models lists the model', async () => {
  const list = await client.models.list();
  assert.equal(list.data.length, 1);
  assert.equal(list.data[0].id, 'stories260K');
});

const reference = generate(['--max-tokens', '24', ...PROMPTS.flatMap((p) => ['--prompt', p])]);

await check('greedy completions equal llmwb-cli generate --temperature 0', async () => {
  for (let i = 0; i < PROMPTS.length; i++) {
    const r = await client.completions.create({ model: 'stories260K', prompt: PROMPTS[i], max_tokens: 24, temperature: 0 });
    assert.equal(r.object, 'text_completion');
    assert.equal(r.choices.length, 1);
    assert.equal(r.choices[0].text, reference[i].text, `prompt ${i}`);
    assert.equal(r.usage.completion_tokens, reference[i].completion_tokens);
    assert.equal(r.usage.prompt_tokens, reference[i].prompt_tokens);
    assert.equal(r.choices[0].finish_reason, reference[i].finish_reason === 'length' ? 'length' : 'stop');
  }
});

await check('a list of prompts gives one choice per prompt, in order', async () => {
  const r = await client.completions.create({ model: 'stories260K', prompt: PROMPTS, max_tokens: 24, temperature: 0 });
  assert.equal(r.choices.length, PROMPTS.length);
  r.choices.forEach((c, i) => {
    assert.equal(c.index, i);
    assert.equal(c.text, reference[i].text);
  });
});

await check('a streamed completion is the same text, ending in a finish reason', async () => {
  const s = await streamText({ model: 'stories260K', prompt: PROMPTS[0], max_tokens: 24, temperature: 0 });
  assert.equal(s.text, reference[0].text);
  assert.ok(s.chunks > 1, 'more than one chunk');
  assert.ok(s.finish === 'length' || s.finish === 'stop');
});

const chatReference = generate(['--chat', '--prompt', 'Tell me a story.', '--max-tokens', '20'])[0];

await check('greedy chat equals llmwb-cli generate --chat, streamed or not', async () => {
  const messages = [{ role: 'user', content: 'Tell me a story.' }];
  const r = await client.chat.completions.create({ model: 'stories260K', messages, max_tokens: 20, temperature: 0 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(r.choices[0].message.content, chatReference.text);
  const stream = await client.chat.completions.create({ model: 'stories260K', messages, max_tokens: 20, temperature: 0,
    stream: true, stream_options: { include_usage: true } });
  let text = '', role = null, usage = null, finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) role = c.delta.role;
      text += c.delta.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(role, 'assistant');
  assert.equal(text, chatReference.text);
  assert.ok(finish);
  assert.deepEqual(usage, r.usage);
});

await check('n=2 gives two choices from one prompt', async () => {
  const r = await client.completions.create({ model: 'stories260K', prompt: PROMPTS[0], max_tokens: 16, n: 2,
    temperature: 1, seed: 7 });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
  assert.ok(r.usage.completion_tokens >= 2 && r.usage.completion_tokens <= 32, 'usage counts both samples');
  const c = await client.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 8, n: 2, temperature: 1, seed: 7 });
  assert.equal(c.choices.length, 2);
});

await check('a stop string ends the text before it, with finish_reason stop', async () => {
  const full = reference[0].text;
  const word = full.split(' ').filter((w) => w.length > 2)[2];
  const at = full.indexOf(word);
  assert.ok(at > 0);
  const r = await client.completions.create({ model: 'stories260K', prompt: PROMPTS[0], max_tokens: 24, temperature: 0,
    stop: [word, 'zzzz'] });
  assert.equal(r.choices[0].text, full.slice(0, at));
  assert.equal(r.choices[0].finish_reason, 'stop');
  const s = await streamText({ model: 'stories260K', prompt: PROMPTS[0], max_tokens: 24, temperature: 0, stop: word });
  assert.equal(s.text, full.slice(0, at));
});

await check('the same seed gives the same text', async () => {
  const ask = (seed) => client.completions.create({ model: 'stories260K', prompt: 'Once', max_tokens: 32,
    temperature: 1, top_p: 0.95, seed });
  const [a, b, c] = await Promise.all([ask(42), ask(42), ask(43)]);
  assert.equal(a.choices[0].text, b.choices[0].text);
  assert.notEqual(a.choices[0].text, c.choices[0].text);
});

await check('logprobs: one entry per token, the greedy token is the most likely', async () => {
  const r = await client.chat.completions.create({ model: 'stories260K', messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 3 });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, r.usage.completion_tokens);
  for (const t of content) {
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 3);
    assert.equal(t.top_logprobs[0].token, t.token);
    assert.equal(t.top_logprobs[0].logprob, t.logprob);
    assert.deepEqual(t.bytes, [...Buffer.from(t.token, 'utf8')]);
  }
  const c = await client.completions.create({ model: 'stories260K', prompt: PROMPTS[0], max_tokens: 12,
    temperature: 0, logprobs: 2 });
  const lp = c.choices[0].logprobs;
  assert.equal(lp.token_logprobs.length, 12);
  assert.equal(lp.tokens.join(''), c.choices[0].text);
  assert.equal(Object.keys(lp.top_logprobs[0]).length, 2);
});

await check('presence and frequency penalties are applied (repetition drops)', async () => {
  const ask = (p) => client.completions.create({ model: 'stories260K', prompt: 'Once', max_tokens: 60, temperature: 0,
    frequency_penalty: p, presence_penalty: p });
  const [plain, penalized] = await Promise.all([ask(0), ask(2)]);
  const distinct = (s) => new Set(s.split(/\s+/)).size / s.split(/\s+/).length;
  assert.notEqual(plain.choices[0].text, penalized.choices[0].text);
  assert.ok(distinct(penalized.choices[0].text) >= distinct(plain.choices[0].text));
});

await check('errors reach the client as OpenAI errors', async () => {
  await assert.rejects(client.completions.create({ model: 'gpt-4o', prompt: 'x' }),
    (e) => e.status === 404 && e.error?.code === 'model_not_found');
  await assert.rejects(client.completions.create({ model: 'stories260K', prompt: 'x', best_of: 2 }),
    (e) => e.status === 400 && e.error?.param === 'best_of');
  await assert.rejects(client.completions.create({ model: 'stories260K', prompt: 'x', max_tokens: 'many' }),
    (e) => e.status === 400 && e.error?.param === 'max_tokens');
});

await check('a shared prompt prefix is computed once (prefix cache hits)', async () => {
  const shared = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the sun with her dog.';
  const before = (await metrics()).value('vllm:prefix_cache_hits_total');
  await client.completions.create({ model: 'stories260K', prompt: shared + ' One day', max_tokens: 4, temperature: 0 });
  await client.completions.create({ model: 'stories260K', prompt: shared + ' Then', max_tokens: 4, temperature: 0 });
  const after = (await metrics()).value('vllm:prefix_cache_hits_total');
  assert.ok(after - before >= 16, `prefix cache hit tokens grew by ${after - before}`);
});

// ---- load on loopback
const N = 64, LOAD_TOKENS = 32;
const loadPrompts = Array.from({ length: N }, (_, i) => `${PROMPTS[i % PROMPTS.length]} ${['and', 'with', 'but', 'so'][(i >> 2) % 4]}`);
const sequential = [];
await check(`${N} greedy requests one after another (the reference)`, async () => {
  for (const p of loadPrompts) {
    const r = await client.completions.create({ model: 'stories260K', prompt: p, max_tokens: LOAD_TOKENS, temperature: 0 });
    sequential.push(r.choices[0].text);
  }
});

async function round() {
  const results = await Promise.all(loadPrompts.map(async (p, i) => {
    await sleep(i * 3);   // staggered starts: requests join a batch already running
    return streamText({ model: 'stories260K', prompt: p, max_tokens: LOAD_TOKENS, temperature: 0 });
  }));
  results.forEach((r, i) => {
    assert.ok(r.finish, `client ${i} finished`);
    assert.equal(r.text, sequential[i], `client ${i}: concurrent greedy output equals the sequential one`);
  });
}

let peakRunning = 0;
await check(`${N} concurrent streaming clients complete with the sequential outputs, batched together`, async () => {
  let polling = true;
  const poll = (async () => {
    while (polling) {
      peakRunning = Math.max(peakRunning, (await metrics()).value('vllm:num_requests_running'));
      await sleep(5);
    }
  })();
  await round();
  polling = false;
  await poll;
  assert.ok(peakRunning > 1, `requests shared steps (peak running ${peakRunning})`);
});

await check('aborted streams leave zero KV blocks in use', async () => {
  const aborted = await Promise.all(Array.from({ length: 16 }, (_, i) =>
    sleep(i * 2).then(() => streamText({ model: 'stories260K', prompt: loadPrompts[i], max_tokens: 100, temperature: 1,
      seed: i, n: 4 }, 2))));
  aborted.forEach((r) => assert.equal(r.finish, null, 'aborted before the end'));
  let m;
  for (let i = 0; i < 200; i++) {
    m = await metrics();
    if (m.value('llmwb:kv_blocks_in_use') === 0 && m.value('vllm:num_requests_running') === 0) break;
    await sleep(25);
  }
  assert.equal(m.value('llmwb:kv_blocks_in_use'), 0, 'blocks in use after the aborts');
  assert.match(m.text, /vllm:request_success_total\{[^}]*finished_reason="abort"\} (1[6-9]|[2-9]\d|\d{3,})/);
});

await check('the server\'s memory stays flat over repeated rounds', async () => {
  const rss = [];
  for (let r = 0; r < 4; r++) {
    await round();
    rss.push(rssKiB());
  }
  const growth = rss[rss.length - 1] - rss[0];
  console.log(`  RSS per round (KiB): ${rss.join(', ')}`);
  assert.ok(growth < Math.max(8192, rss[0] * 0.05), `RSS grew ${growth} KiB over ${rss.length} rounds`);
});

await check('/metrics counts the tokens and latencies served', async () => {
  const m = await metrics();
  for (const name of ['vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:gpu_cache_usage_perc',
    'vllm:prompt_tokens_total', 'vllm:generation_tokens_total', 'vllm:num_preemptions_total',
    'vllm:prefix_cache_hits_total', 'vllm:prefix_cache_queries_total', 'llmwb:kv_blocks_in_use'])
    assert.ok(!Number.isNaN(m.value(name)), name);
  assert.ok(m.value('vllm:generation_tokens_total') >= 5 * N * LOAD_TOKENS);
  assert.match(m.text, /vllm:time_to_first_token_seconds_count\{[^}]*\} [1-9]/);
  assert.match(m.text, /vllm:time_per_output_token_seconds_bucket\{[^}]*le="\+Inf"\} [1-9]/);
});

console.log(`all ${checks} checks passed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
