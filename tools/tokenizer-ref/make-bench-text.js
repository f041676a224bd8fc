// Writes about 1 MB of mixed text for the tokenizer speed comparison (bench.js against
// `llmwb-cli tokenize --bench-file`): the repository's docs (English prose, Markdown), its
// C++ sources (code), and the corpus's strings (many scripts, emoji, numbers, whitespace)
// interleaved, until the size is reached. Usage: node make-bench-text.js OUT [BYTES]
"use strict";
const fs = require("fs");
const path = require("path");

const out = process.argv[2];
const target = Number(process.argv[3] || 1 << 20);
if (!out) throw new Error("usage: node make-bench-text.js OUT [BYTES]");
const root = path.join(__dirname, "..", "..");
const files = [];
const walk = (dir, ext) => {
  for (const e of fs.readdirSync(dir, {withFileTypes: true}).sort((a, b) => a.name.localeCompare(b.name))) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, ext);
    else if (ext.some((x) => e.name.endsWith(x))) files.push(fs.readFileSync(p, "utf8"));
  }
};
walk(path.join(root, "docs"), [".md"]);
walk(path.join(root, "engine"), [".cpp", ".h"]);
const corpus = JSON.parse(fs.readFileSync(path.join(root, "tests", "data", "tokenizer-corpus.json"), "utf8"));
const strings = corpus.plain.filter((e) => typeof e === "string");
let text = "";
for (let i = 0; Buffer.byteLength(text) < target; ++i) {
  text += files[i % files.length] + "\n";
  text += strings.slice((i * 40) % strings.length, (i * 40) % strings.length + 40).join("\n") + "\n";
}
const buf = Buffer.from(text).subarray(0, target);
// Cut at a character boundary.
let end = buf.length;
while (end > 0 && (buf[end - 1] & 0xc0) === 0x80) --end;
if (end > 0 && buf[end - 1] >= 0xc0) --end;
fs.writeFileSync(out, buf.subarray(0, end));
console.log(`${out}: ${end} bytes`);
