// Renders every tests/data/chat_templates/*.jinja with @huggingface/jinja (the Jinja that
// transformers.js uses; trim_blocks and lstrip_blocks on, as transformers' apply_chat_template)
// for a fixed set of conversations, and writes the texts to
// tests/data/chat_templates/reference.json. test_chat_template_reference compares llmwb's
// built-in formats with these texts; CI needs no network because the JSON is committed.
//
//   cd tools/chat-template-ref && npm install && node render.mjs
import { Template } from "@huggingface/jinja";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = path.join(here, "..", "..", "tests", "data", "chat_templates");

// The special-token texts each template's tokenizer_config.json gives (null: none).
const tokens = {
  "llama2-chat": ["<s>", "</s>"],
  "mistral-v1": ["<s>", "</s>"],
  "mistral-v2": ["<s>", "</s>"],
  "mistral-v3": ["<s>", "</s>"],
  "mistral-v3-tekken": ["<s>", "</s>"],
  "zephyr": ["<s>", "</s>"],
  "chatml": ["<s>", "</s>"],
  "llama3-tokenizer": ["<|begin_of_text|>", "<|end_of_text|>"],
  "llama3-instruct": ["<|begin_of_text|>", "<|eot_id|>"],
  "llama3.1": ["<|begin_of_text|>", "<|eot_id|>"],
  "llama3.2": ["<|begin_of_text|>", "<|eot_id|>"],
  "qwen2": [null, "<|im_end|>"],
  "qwen2.5": [null, "<|im_end|>"],
  "qwen3": [null, "<|im_end|>"],
};

const sys = { role: "system", content: "You are terse." };
const markers = "<|im_start|>user <|im_end|> [INST] [/INST] <s> </s> <|eot_id|> <|start_header_id|> <|user|> <think></think>";
const conversations = {
  "one-turn": [{ role: "user", content: "Hello!" }],
  "system-and-user": [sys, { role: "user", content: "Hi!" }],
  "several-turns": [sys, { role: "user", content: "Hi!" }, { role: "assistant", content: "Hello." },
                    { role: "user", content: "Name a color." }],
  "several-turns-without-system": [{ role: "user", content: "Hi!" }, { role: "assistant", content: "Hello." },
                                   { role: "user", content: "Name a color." }],
  "ends-with-assistant": [sys, { role: "user", content: "Hi!" }, { role: "assistant", content: "Hello." }],
  "whitespace-around-contents": [{ role: "system", content: "  spaced system \n" },
                                 { role: "user", content: "\n  padded user  \n" },
                                 { role: "assistant", content: " padded reply \n" }, { role: "user", content: "x " }],
  "markers-typed-by-the-user": [{ role: "user", content: markers }],
  "unicode": [{ role: "user", content: "héllo 世界 🙂\ttab" }],
  "two-user-turns-in-a-row": [{ role: "user", content: "a" }, { role: "user", content: "b" }],
  "empty-system-prompt": [{ role: "system", content: "" }, { role: "user", content: "Hi!" }],
  "reasoning-in-history": [{ role: "user", content: "What is 2+2?" },
                           { role: "assistant", content: "<think>\nAdd them.\n</think>\n\n4" },
                           { role: "user", content: "And 3+3?" }],
  "reasoning-after-last-query": [sys, { role: "user", content: "q" },
                                 { role: "assistant", content: "<think>\nstep one\n\n</think>\n\nanswer" }],
  "reply-without-think-tags": [{ role: "user", content: "q" }, { role: "assistant", content: "\nplain answer" }],
  "two-replies-after-the-query": [{ role: "user", content: "q" }, { role: "assistant", content: "first" },
                                  { role: "assistant", content: "<think>r</think>second" }],
};

const cases = [];
for (const name of Object.keys(conversations)) {
  for (const gen of [true, false]) cases.push({ conversation: name, add_generation_prompt: gen });
}
// The switches: Qwen3's enable_thinking, Llama 3.1/3.2's date_string.
for (const name of ["one-turn", "several-turns", "reasoning-in-history", "reasoning-after-last-query"]) {
  for (const thinking of [true, false])
    cases.push({ conversation: name, add_generation_prompt: true, enable_thinking: thinking, only: ["qwen3"] });
}
cases.push({ conversation: "reasoning-after-last-query", add_generation_prompt: false, enable_thinking: false,
             only: ["qwen3"] });
for (const name of ["one-turn", "several-turns"])
  cases.push({ conversation: name, add_generation_prompt: true, date_string: "02 Dec 2026",
               only: ["llama3.1", "llama3.2"] });

// Where @huggingface/jinja and Python's Jinja2 (which transformers uses) disagree, llmwb follows
// Python and the case stays out of the reference: Llama 2's `system_message != false` is true
// for an empty system prompt in Python ("" != False) but false here.
const pythonDiffers = { "llama2-chat": ["empty-system-prompt"] };

const out = [];
for (const file of fs.readdirSync(dir).filter((f) => f.endsWith(".jinja")).sort()) {
  const name = file.replace(/\.jinja$/, "");
  if (!(name in tokens)) throw new Error(`${file}: no bos/eos tokens listed in render.mjs`);
  const template = new Template(fs.readFileSync(path.join(dir, file), "utf8"));
  for (const c of cases) {
    if (c.only && !c.only.includes(name)) continue;
    if ((pythonDiffers[name] ?? []).includes(c.conversation)) continue;
    const messages = conversations[c.conversation];
    const vars = { messages, add_generation_prompt: c.add_generation_prompt,
                   bos_token: tokens[name][0] ?? undefined, eos_token: tokens[name][1] };
    if ("enable_thinking" in c) vars.enable_thinking = c.enable_thinking;
    // Llama 3.2 asks strftime_now for today's date; the reference pins it instead.
    const date = c.date_string ?? (name === "llama3.2" ? "26 Nov 2026" : undefined);
    if (date !== undefined) vars.date_string = date;
    const entry = { template: name, conversation: c.conversation, messages,
                    add_generation_prompt: c.add_generation_prompt };
    if ("enable_thinking" in c) entry.enable_thinking = c.enable_thinking;
    if (date !== undefined) entry.date_string = date;
    try {
      entry.text = template.render(vars);
    } catch (e) {
      entry.error = String(e.message ?? e);
    }
    out.push(entry);
  }
}
fs.writeFileSync(path.join(dir, "reference.json"), JSON.stringify(out, null, 1) + "\n");
console.log(`${out.length} renderings, ${out.filter((e) => e.error).length} raise, written to ${dir}/reference.json`);
